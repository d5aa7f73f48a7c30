/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The stored contract as a MongoDB $jsonSchema validator, and installing it on the
 * collection (outbox_collection_schema, outbox_collection_ensure_schema). No state: each
 * call pops a client, reads the collection's options and creates or modifies it.
 */
#include "outbox/schema.h"

#include <string.h>

#include "collection-private.h"
#include "error-private.h"
#include "schema-props-private.h"

/* The title that marks a validator (or one clause of a $and) as ours. */
#define SCHEMA_TITLE "outbox stored contract"

typedef struct {
   const char *action;       /* "error" | "warn" */
   const char *level;        /* "moderate" | "strict" */
   const char *dead_letters; /* the relay's --dead-letters-field */
   bool combine;             /* keep a foreign validator beside ours */
} schema_opts_t;

static bool
opt_string(const bson_iter_t *it, const char *const *allowed, const char **out, bson_error_t *error)
{
   const char *key = bson_iter_key(it);
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "%s must be a string", key);
      return false;
   }
   *out = bson_iter_utf8(it, NULL);
   for (int i = 0; allowed && allowed[i]; i++) {
      if (strcmp(allowed[i], *out) == 0) {
         return true;
      }
   }
   if (allowed || !**out || strchr(*out, '.') || **out == '$') {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "bad %s: \"%.64s\"", key, *out);
      return false;
   }
   return true;
}

static bool
parse_opts(const bson_t *opts, schema_opts_t *o, bson_error_t *error)
{
   static const char *const actions[] = {"error", "warn", NULL};
   static const char *const levels[] = {"moderate", "strict", NULL};
   bson_iter_t it;
   *o = (schema_opts_t){"error", "moderate", "deadLetters", false};
   if (!opts || !bson_iter_init(&it, opts)) {
      return true;
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      bool ok;
      if (strcmp(key, "validationAction") == 0) {
         ok = opt_string(&it, actions, &o->action, error);
      } else if (strcmp(key, "validationLevel") == 0) {
         ok = opt_string(&it, levels, &o->level, error);
      } else if (strcmp(key, "deadLettersField") == 0) {
         ok = opt_string(&it, NULL, &o->dead_letters, error);
      } else if (strcmp(key, "combine") == 0 && BSON_ITER_HOLDS_BOOL(&it)) {
         o->combine = bson_iter_bool(&it);
         ok = true;
      } else {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "unknown or mistyped schema "
                           "option \"%.64s\"",
                           key);
         ok = false;
      }
      if (!ok) {
         return false;
      }
   }
   return true;
}

/* The options, and a dead-letters field that is not one of the collection's own names. */
static bool
parse_for(const outbox_collection_t *c, const bson_t *opts, schema_opts_t *o, bson_error_t *error)
{
   const _outbox_field_names_t *n = &c->names;
   if (!parse_opts(opts, o, error)) {
      return false;
   }
   /* The collection's own deadLettersField unless the call names another. */
   if (!opts || !bson_has_field(opts, "deadLettersField")) {
      o->dead_letters = n->dead_letters;
   }
   if (strcmp(o->dead_letters, n->version) == 0 || strcmp(o->dead_letters, n->event_seq) == 0 ||
       strcmp(o->dead_letters, n->events) == 0 || strcmp(o->dead_letters, "_id") == 0) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "deadLettersField \"%s\" is "
                        "already a bookkeeping field",
                        o->dead_letters);
      return false;
   }
   return true;
}

/* The items of the events array: the EVENT rows of the event contract (contract.c), written
 * form, each with its description. */
static void
append_event_schema(bson_t *events)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bson_t items, props, required;
   uint32_t k = 0;

   BSON_APPEND_UTF8(events, "bsonType", "array");
   BSON_APPEND_UTF8(events, "description", "pending events, oldest first");
   BSON_APPEND_DOCUMENT_BEGIN(events, "items", &items);
   BSON_APPEND_UTF8(&items, "bsonType", "object");
   BSON_APPEND_ARRAY_BEGIN(&items, "required", &required);
   for (size_t i = 0; i < n; i++) {
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT && rules[i].written.required) {
         char key[16];
         const char *kp;
         bson_uint32_to_string(k++, &kp, key, sizeof key);
         BSON_APPEND_UTF8(&required, kp, rules[i].name);
      }
   }
   bson_append_array_end(&items, &required);
   BSON_APPEND_DOCUMENT_BEGIN(&items, "properties", &props);
   for (size_t i = 0; i < n; i++) {
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT) {
         _outbox_schema_rule_prop(&props, rules[i].name, &rules[i], false, NULL);
      }
   }
   bson_append_document_end(&items, &props);
   bson_append_document_end(events, &items);
}

/* {$jsonSchema: ...} for the collection's field names. Business fields are not named, so
 * they may hold anything (additionalProperties stays true). */
static void
build_validator(const outbox_collection_t *c, const schema_opts_t *o, bson_t *out)
{
   const _outbox_field_names_t *n = &c->names;
   bson_t schema, props, p, items;
   bson_init(out);
   BSON_APPEND_DOCUMENT_BEGIN(out, "$jsonSchema", &schema);
   BCON_APPEND(&schema, "title", SCHEMA_TITLE, "description",
               "bookkeeping fields of liboutbox and outbox-relay; business fields unchecked",
               "bsonType", "object", "required", "[", n->version, n->event_seq, "]");
   BSON_APPEND_DOCUMENT_BEGIN(&schema, "properties", &props);
   _outbox_schema_long_prop(&props, n->version, 1, "Int64, 1 on creation, +1 on every change");
   _outbox_schema_long_prop(&props, n->event_seq, 0,
                            "Int64, seq of the newest event ever appended");
   BSON_APPEND_DOCUMENT_BEGIN(&props, n->events, &p);
   append_event_schema(&p);
   bson_append_document_end(&props, &p);
   BSON_APPEND_DOCUMENT_BEGIN(&props, o->dead_letters, &p);
   BCON_APPEND(&p, "bsonType", "array", "description", "events the relay could not publish");
   BSON_APPEND_DOCUMENT_BEGIN(&p, "items", &items);
   BCON_APPEND(&items, "bsonType", "object");
   bson_append_document_end(&p, &items);
   bson_append_document_end(&props, &p);
   bson_append_document_end(&schema, &props);
   bson_append_document_end(out, &schema);
}

bool
outbox_collection_schema(const outbox_collection_t *collection, const bson_t *opts,
                         bson_t *validator, bson_error_t *error)
{
   schema_opts_t o;
   bson_init(validator);
   if (!collection) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection is NULL");
      return false;
   }
   if (!parse_for(collection, opts, &o, error)) {
      return false;
   }
   bson_destroy(validator);
   build_validator(collection, &o, validator);
   return true;
}

static bool
is_ours(const bson_value_t *v)
{
   bson_t doc;
   bson_iter_t it, title;
   if (v->value_type != BSON_TYPE_DOCUMENT ||
       !bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len) ||
       bson_count_keys(&doc) != 1 || !bson_iter_init_find(&it, &doc, "$jsonSchema") ||
       !BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &title) ||
       !bson_iter_find(&title, "title") || !BSON_ITER_HOLDS_UTF8(&title)) {
      return false;
   }
   return strcmp(bson_iter_utf8(&title, NULL), SCHEMA_TITLE) == 0;
}

/* Appends `v` to the array `arr` as its next element. */
static void
push(bson_t *arr, uint32_t *n, const bson_value_t *v)
{
   char key[16];
   const char *k;
   bson_uint32_to_string((*n)++, &k, key, sizeof key);
   bson_append_value(arr, k, -1, v);
}

/* True if `current` is {$and: [...]} with one of its clauses ours. */
static bool
and_with_ours(const bson_t *current)
{
   bson_iter_t it, clause;
   if (bson_count_keys(current) != 1 || !bson_iter_init_find(&it, current, "$and") ||
       !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &clause)) {
      return false;
   }
   while (bson_iter_next(&clause)) {
      if (is_ours(bson_iter_value(&clause))) {
         return true;
      }
   }
   return false;
}

/* The validator to install given the current one: ours alone; ours in place of an older ours
 * inside a $and (a combination made earlier); or, with `combine`, {$and: [theirs, ours]}.
 * False when a foreign validator would otherwise be lost. */
static bool
merge(const bson_t *current, const bson_t *ours, bool combine, bson_t *out, bson_error_t *error)
{
   bson_value_t whole = {.value_type = BSON_TYPE_DOCUMENT}, mine = whole;
   bson_iter_t it, clause;
   bson_t arr;
   uint32_t n = 0;
   whole.value.v_doc.data = (uint8_t *)bson_get_data(current);
   whole.value.v_doc.data_len = current->len;
   mine.value.v_doc.data = (uint8_t *)bson_get_data(ours);
   mine.value.v_doc.data_len = ours->len;
   bson_init(out);
   if (bson_empty(current) || is_ours(&whole)) {
      bson_concat(out, ours);
      return true;
   }
   bool replace = and_with_ours(current);
   if (!replace && !combine) {
      _outbox_set_error(error, OUTBOX_ERROR_FOREIGN_VALIDATOR,
                        "the collection has a validator that liboutbox did not install; it is "
                        "left as it is (pass {combine: true} to keep it and add the stored "
                        "contract with $and)");
      return false;
   }
   BSON_APPEND_ARRAY_BEGIN(out, "$and", &arr);
   if (replace) {
      bson_iter_init_find(&it, current, "$and");
      bson_iter_recurse(&it, &clause);
      while (bson_iter_next(&clause)) {
         push(&arr, &n, is_ours(bson_iter_value(&clause)) ? &mine : bson_iter_value(&clause));
      }
   } else {
      push(&arr, &n, &whole);
      push(&arr, &n, &mine);
   }
   bson_append_array_end(out, &arr);
   return true;
}

/* 1 with the collection's options copied into `options` (initialised by the caller), 0 if
 * there is no such collection, -1 on error. A view is an error. */
static int
read_options(const outbox_collection_t *c, mongoc_database_t *db, bson_t *options,
             bson_error_t *error)
{
   bson_t *opts = BCON_NEW("filter", "{", "name", BCON_UTF8(c->coll), "}");
   mongoc_cursor_t *cursor = mongoc_database_find_collections_with_opts(db, opts);
   const bson_t *info;
   bson_iter_t it;
   int found = 0;
   if (mongoc_cursor_next(cursor, &info)) {
      found = 1;
      if (bson_iter_init_find(&it, info, "type") && BSON_ITER_HOLDS_UTF8(&it) &&
          strcmp(bson_iter_utf8(&it, NULL), "view") == 0) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "%s.%s is a view", c->db, c->coll);
         found = -1;
      } else if (bson_iter_init_find(&it, info, "options") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         uint32_t len;
         const uint8_t *data;
         bson_t view;
         bson_iter_document(&it, &len, &data);
         bson_init_static(&view, data, len);
         bson_concat(options, &view);
      }
   } else if (mongoc_cursor_error(cursor, error)) {
      found = -1;
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   return found;
}

static bool
option_equals(const bson_t *options, const char *field, const char *want)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, options, field) && BSON_ITER_HOLDS_UTF8(&it) &&
          strcmp(bson_iter_utf8(&it, NULL), want) == 0;
}

/* Installs `ours` given the collection's current `options`: nothing to do when it is already
 * there with the same level and action, else collMod. */
static bool
modify(const outbox_collection_t *c, mongoc_database_t *db, const bson_t *options,
       const bson_t *ours, const schema_opts_t *o, bson_error_t *error)
{
   bson_t current = BSON_INITIALIZER, wanted;
   bson_iter_t it;
   if (bson_iter_init_find(&it, options, "validator") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      bson_destroy(&current);
      bson_init_static(&current, data, len);
   }
   bool ok = merge(&current, ours, o->combine, &wanted, error);
   if (ok &&
       !(bson_equal(&current, &wanted) && option_equals(options, "validationLevel", o->level) &&
         option_equals(options, "validationAction", o->action))) {
      bson_t *cmd =
         BCON_NEW("collMod", BCON_UTF8(c->coll), "validator", BCON_DOCUMENT(&wanted),
                  "validationLevel", BCON_UTF8(o->level), "validationAction", BCON_UTF8(o->action));
      ok = mongoc_database_write_command_with_opts(db, cmd, &c->write_opts, NULL, error);
      bson_destroy(cmd);
   }
   bson_destroy(&wanted);
   bson_destroy(&current);
   return ok;
}

bool
outbox_collection_ensure_schema(outbox_collection_t *collection, const bson_t *opts,
                                bson_error_t *error)
{
   schema_opts_t o;
   bson_t ours;
   bson_error_t local;
   bool ok = false;
   if (!error) {
      error = &local; /* the retry below needs to see the code */
   }
   if (!collection) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection is NULL");
      return false;
   }
   if (!parse_for(collection, opts, &o, error)) {
      return false;
   }
   build_validator(collection, &o, &ours);
   mongoc_client_t *client = mongoc_client_pool_pop(collection->pool);
   mongoc_database_t *db = mongoc_client_get_database(client, collection->db);
   /* A second round only if someone created the collection between our read and create. */
   for (int attempt = 0; attempt < 2; attempt++) {
      bson_t options = BSON_INITIALIZER;
      int found = read_options(collection, db, &options, error);
      if (found == 1) {
         ok = modify(collection, db, &options, &ours, &o, error);
      } else if (found == 0) {
         bson_t *cmd = BCON_NEW("create", BCON_UTF8(collection->coll), "validator",
                                BCON_DOCUMENT(&ours), "validationLevel", BCON_UTF8(o.level),
                                "validationAction", BCON_UTF8(o.action));
         ok =
            mongoc_database_write_command_with_opts(db, cmd, &collection->write_opts, NULL, error);
         bson_destroy(cmd);
      }
      bson_destroy(&options);
      if (ok || found != 0 || error->code != 48 /* NamespaceExists */) {
         break;
      }
   }
   mongoc_database_destroy(db);
   mongoc_client_pool_push(collection->pool, client);
   bson_destroy(&ours);
   return ok;
}
