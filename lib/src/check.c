/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Checks the caller's input before anything is sent (check-private.h): ids, business fields,
 * update operators and reserved paths, and whole documents through the BSON walk below it
 * (bson-walk.c, itself over utf8.c). No state: safe from any thread.
 */
#include "check-private.h"

#include <string.h>

#include "contract-private.h"
#include "error-private.h"

/* Operators whose value is a document of {path: argument}. Anything else is refused, so that
 * the reserved-path check below cannot be bypassed by an operator we do not understand. */
static const char *const supported_ops[] = {
   "$set",    "$unset", "$inc",      "$min",  "$max",     "$mul", "$currentDate",
   "$rename", "$push",  "$addToSet", "$pull", "$pullAll", "$pop", "$bit",
};

static bool
first_component_is(const char *path, const char *name)
{
   size_t len = strlen(name);

   return strncmp(path, name, len) == 0 && (path[len] == '\0' || path[len] == '.');
}

bool
_outbox_path_is_reserved(const char *path, const _outbox_field_names_t *names)
{
   return first_component_is(path, "_id") || first_component_is(path, names->version) ||
          first_component_is(path, names->event_seq) || first_component_is(path, names->events) ||
          (names->recent_commits && first_component_is(path, names->recent_commits));
}

/* The event contract's ENTITY "_id" rule, written form (contract.c): the types liboutbox
 * accepts, and strings of valid UTF-8 without NUL. A binary id must also be a UUID. */
bool
_outbox_id_check(const bson_value_t *id, bson_error_t *error)
{
   const outbox_contract_rule_t *rule = _outbox_contract_row(_OUTBOX_RULE_ENTITY_ID);

   if (!id) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "id is NULL");
      return false;
   }
   if (!outbox_contract_type_allowed(&rule->written, id->value_type)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "id of type %s is not supported (ObjectId, string, int32, int64 or "
                        "UUID)",
                        _outbox_bson_type_name(id->value_type));
      return false;
   }
   if (id->value_type == BSON_TYPE_UTF8 &&
       (!id->value.v_utf8.str || outbox_contract_check(rule, id, true, NULL))) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "string id is not valid UTF-8");
      return false;
   }
   if (id->value_type == BSON_TYPE_BINARY &&
       !(id->value.v_binary.subtype == BSON_SUBTYPE_UUID && id->value.v_binary.data_len == 16)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "binary id must be a UUID (subtype 4, 16 bytes)");
      return false;
   }
   return true;
}

/* One pass over the bytes (bson-walk.c): structure, UTF-8 and key rules together. */
static bool
doc_is_valid(const bson_t *doc, int flags)
{
   return _outbox_bson_walk(bson_get_data(doc), doc->len, flags);
}

bool
_outbox_bson_is_valid(const bson_t *doc, bool no_dollar_keys)
{
   return doc_is_valid(doc, no_dollar_keys ? _OUTBOX_WALK_NO_DOLLAR_KEYS : 0);
}

bool
_outbox_bson_is_storable(const bson_t *doc, bool no_dollar_keys)
{
   return doc_is_valid(doc, _OUTBOX_WALK_NO_EMPTY_KEYS |
                               (no_dollar_keys ? _OUTBOX_WALK_NO_DOLLAR_KEYS : 0));
}

bool
_outbox_bson_is_json_clean(const bson_t *doc)
{
   return doc_is_valid(doc, _OUTBOX_WALK_JSON_STRINGS);
}

static bool
check_utf8(const bson_t *doc, const char *what, bson_error_t *error)
{
   if (!_outbox_bson_is_storable(doc, false)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "%s is not well-formed BSON with valid UTF-8 strings and no empty keys",
                        what);
      return false;
   }
   return true;
}

static bool
reserved(const char *where, const char *path, bson_error_t *error)
{
   _outbox_set_error(error, OUTBOX_ERROR_RESERVED_FIELD,
                     "%s \"%.200s\" touches _id or a bookkeeping field (version, eventSeq, "
                     "events) that only liboutbox may write",
                     where, path);
   return false;
}

bool
_outbox_fields_check(const bson_t *fields, const _outbox_field_names_t *names, bson_error_t *error)
{
   bson_iter_t it;

   if (!fields) {
      return true;
   }
   if (!check_utf8(fields, "fields", error)) {
      return false;
   }
   bson_iter_init(&it, fields);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);

      if (key[0] == '$') {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "field \"%.200s\" starts with '$'",
                           key);
         return false;
      }
      if (_outbox_path_is_reserved(key, names)) {
         return reserved("field", key, error);
      }
   }
   return true;
}

static bool
op_is_supported(const char *op)
{
   for (size_t i = 0; i < sizeof supported_ops / sizeof supported_ops[0]; i++) {
      if (strcmp(op, supported_ops[i]) == 0) {
         return true;
      }
   }
   return false;
}

/* Checks the {path: argument} document of one operator. */
static bool
check_op_paths(const bson_iter_t *op_iter, const _outbox_field_names_t *names, bson_error_t *error)
{
   const char *op = bson_iter_key(op_iter);
   bool is_rename = strcmp(op, "$rename") == 0;
   bson_iter_t it;

   if (!BSON_ITER_HOLDS_DOCUMENT(op_iter) || !bson_iter_recurse(op_iter, &it)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "update operator %s needs a document, got %s", op,
                        _outbox_bson_type_name(bson_iter_type(op_iter)));
      return false;
   }
   while (bson_iter_next(&it)) {
      if (_outbox_path_is_reserved(bson_iter_key(&it), names)) {
         return reserved(op, bson_iter_key(&it), error);
      }
      if (!is_rename) {
         continue;
      }
      if (!BSON_ITER_HOLDS_UTF8(&it)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "$rename target of \"%.200s\" must be a string", bson_iter_key(&it));
         return false;
      }
      if (_outbox_path_is_reserved(bson_iter_utf8(&it, NULL), names)) {
         return reserved("$rename target", bson_iter_utf8(&it, NULL), error);
      }
   }
   return true;
}

/* True if operator `op` is among the first `count` keys of `update`. */
static bool
op_seen_before(const bson_t *update, const char *op, size_t count)
{
   bson_iter_t it;

   bson_iter_init(&it, update);
   for (size_t i = 0; i < count && bson_iter_next(&it); i++) {
      if (strcmp(bson_iter_key(&it), op) == 0) {
         return true;
      }
   }
   return false;
}

bool
_outbox_update_check(const bson_t *update, const _outbox_field_names_t *names, bson_error_t *error)
{
   bson_iter_t it;
   size_t index = 0;

   if (!update) {
      return true;
   }
   if (!check_utf8(update, "update", error)) {
      return false;
   }
   bson_iter_init(&it, update);
   while (bson_iter_next(&it)) {
      const char *op = bson_iter_key(&it);

      if (op[0] != '$') {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "update must hold update operators only (a replacement or pipeline "
                           "cannot keep the bookkeeping fields), found \"%.200s\"",
                           op);
         return false;
      }
      if (!op_is_supported(op)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "update operator %.100s is not supported", op);
         return false;
      }
      if (op_seen_before(update, op, index++)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "update operator %.100s appears twice", op);
         return false;
      }
      if (!check_op_paths(&it, names, error)) {
         return false;
      }
   }
   return true;
}
