/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "check-private.h"

#include <string.h>

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
          first_component_is(path, names->event_seq) || first_component_is(path, names->events);
}

bool
_outbox_id_check(const bson_value_t *id, bson_error_t *error)
{
   if (!id) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "id is NULL");
      return false;
   }
   switch (id->value_type) {
   case BSON_TYPE_OID:
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
      return true;
   case BSON_TYPE_UTF8:
      if (id->value.v_utf8.str &&
          bson_utf8_validate(id->value.v_utf8.str, id->value.v_utf8.len, false)) {
         return true;
      }
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "string id is not valid UTF-8");
      return false;
   case BSON_TYPE_BINARY:
      if (id->value.v_binary.subtype == BSON_SUBTYPE_UUID && id->value.v_binary.data_len == 16) {
         return true;
      }
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "binary id must be a UUID (subtype 4, 16 bytes)");
      return false;
   default:
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "id of type %s is not supported (ObjectId, string, int32, int64 or "
                        "UUID)",
                        _outbox_bson_type_name(id->value_type));
      return false;
   }
}

/* libbson decodes byte by byte, validation is a large share of a commit's CPU (and of the
 * relay's for large events), and keys and values are mostly ASCII. A run of 8 ASCII bytes
 * (without NUL unless allowed) is valid as it stands; from the first other byte on (a
 * character boundary, as all before it are ASCII) libbson decides. */
bool
_outbox_utf8_valid(const char *s, size_t len, bool allow_nul)
{
   const uint64_t high = 0x8080808080808080ull, ones = 0x0101010101010101ull;
   size_t i = 0;

   for (; i + 8 <= len; i += 8) {
      uint64_t v;

      memcpy(&v, s + i, 8);
      if ((v & high) || (!allow_nul && ((v - ones) & ~v & high))) {
         break;
      }
   }
   return bson_utf8_validate(s + i, len - i, allow_nul);
}

/* JSON_STRINGS: string values may hold NUL (JSON writes \u0000), and symbol and code values
 * are checked as well (JSON writes them as strings). */
enum { NO_DOLLAR_KEYS = 1, NO_EMPTY_KEYS = 2, JSON_STRINGS = 4 };

/* The text of a string value, or of a symbol or code value with JSON_STRINGS; else NULL. */
static const char *
string_value(const bson_iter_t *it, int flags, uint32_t *len)
{
   if (BSON_ITER_HOLDS_UTF8(it)) {
      return bson_iter_utf8(it, len);
   }
   if (!(flags & JSON_STRINGS)) {
      return NULL;
   }
   if (BSON_ITER_HOLDS_SYMBOL(it)) {
      return bson_iter_symbol(it, len);
   }
   return BSON_ITER_HOLDS_CODE(it) ? bson_iter_code(it, len) : NULL;
}

static bool
iter_is_valid(bson_iter_t *it, int flags, int depth)
{
   /* Deeper than the server allows (100) cannot be stored anyway; the bound keeps the
    * recursion's stack use small. Data read back from MongoDB never nests that deep, and
    * the relay's JSON writer hands anything beyond its own depth to libbson, so for JSON the
    * walk just stops there. */
   if (depth > 100) {
      return (flags & JSON_STRINGS) != 0;
   }
   while (bson_iter_next(it)) {
      const char *key = bson_iter_key(it);
      bson_iter_t child;
      uint32_t len;
      const char *s;

      if (!_outbox_utf8_valid(key, strlen(key), false) ||
          ((flags & NO_DOLLAR_KEYS) && key[0] == '$') || ((flags & NO_EMPTY_KEYS) && !key[0])) {
         return false;
      }
      if ((s = string_value(it, flags, &len))) {
         if (!_outbox_utf8_valid(s, len, flags & JSON_STRINGS)) {
            return false;
         }
      } else if (BSON_ITER_HOLDS_DOCUMENT(it) || BSON_ITER_HOLDS_ARRAY(it)) {
         if (!bson_iter_recurse(it, &child) || !iter_is_valid(&child, flags, depth + 1)) {
            return false;
         }
      }
   }
   return true;
}

static bool
doc_is_valid(const bson_t *doc, int flags)
{
   size_t offset;
   bson_iter_t it;

   /* Structure first: bson_iter_next() stops silently at corrupt data. */
   return bson_validate(doc, BSON_VALIDATE_NONE, &offset) && bson_iter_init(&it, doc) &&
          iter_is_valid(&it, flags, 0);
}

bool
_outbox_bson_is_valid(const bson_t *doc, bool no_dollar_keys)
{
   return doc_is_valid(doc, no_dollar_keys ? NO_DOLLAR_KEYS : 0);
}

bool
_outbox_bson_is_storable(const bson_t *doc, bool no_dollar_keys)
{
   return doc_is_valid(doc, NO_EMPTY_KEYS | (no_dollar_keys ? NO_DOLLAR_KEYS : 0));
}

bool
_outbox_bson_is_json_clean(const bson_t *doc)
{
   return doc_is_valid(doc, JSON_STRINGS);
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
