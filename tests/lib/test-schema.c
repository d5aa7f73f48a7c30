/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests of outbox_collection_ensure_schema(): the validator is installed and
 * shown by listCollections, a second call sends no collMod, the library's commits and the
 * relay's writes still pass, malformed writes from other writers are refused with 121 (or
 * pass with "warn"), and a validator someone else installed is never dropped.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "lib-test.h"

static lt_t t;
static char commands[64][32];
static int n_commands;

static void
on_started(const mongoc_apm_command_started_t *event)
{
   if (n_commands < 64) {
      bson_strncpy(commands[n_commands++], mongoc_apm_command_started_get_command_name(event),
                   sizeof commands[0]);
   }
}

static void
setup(void)
{
   mongoc_apm_callbacks_t *apm = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_started_cb(apm, on_started);
   lt_init(&t, "schema", apm, NULL);
   mongoc_apm_callbacks_destroy(apm);
}

static void
teardown(void)
{
   lt_cleanup(&t);
}

TestSuite(schema, .init = setup, .fini = teardown, .timeout = 90);

static bool
sent(const char *name)
{
   for (int i = 0; i < n_commands; i++) {
      if (strcmp(commands[i], name) == 0) {
         return true;
      }
   }
   return false;
}

static void
ensure(const bson_t *opts)
{
   bson_error_t e;
   cr_assert(outbox_collection_ensure_schema(t.coll, opts, &e), "%s", e.message);
}

/* The collection's options as listCollections shows them (caller destroys). */
static bson_t *
collection_options(void)
{
   mongoc_client_t *client = mongoc_client_pool_pop(t.pool);
   mongoc_database_t *db = mongoc_client_get_database(client, LT_DB);
   bson_t *opts = BCON_NEW("filter", "{", "name", BCON_UTF8(t.coll_name), "}");
   mongoc_cursor_t *cur = mongoc_database_find_collections_with_opts(db, opts);
   const bson_t *info;
   bson_iter_t it;
   bson_t *out = bson_new();
   cr_assert(mongoc_cursor_next(cur, &info), "no collection %s", t.coll_name);
   if (bson_iter_init_find(&it, info, "options") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      bson_destroy(out);
      out = bson_new_from_data(data, len);
   }
   mongoc_cursor_destroy(cur);
   bson_destroy(opts);
   mongoc_database_destroy(db);
   mongoc_client_pool_push(t.pool, client);
   return out;
}

static void
assert_option(const bson_t *options, const char *path, const char *want)
{
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, options) && bson_iter_find_descendant(&it, path, &it) &&
                BSON_ITER_HOLDS_UTF8(&it),
             "no %s in %s", path, bson_as_relaxed_extended_json(options, NULL));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), want, "%s", path);
}

/* A write from outside the library; returns its success, the reply's JSON in *json. */
static bool
raw_write(const bson_t *filter, const bson_t *update, bool insert, char **json, bson_error_t *error)
{
   mongoc_client_t *client = mongoc_client_pool_pop(t.pool);
   mongoc_collection_t *c = mongoc_client_get_collection(client, LT_DB, t.coll_name);
   bson_t reply;
   bool ok = insert ? mongoc_collection_insert_one(c, update, NULL, &reply, error)
                    : mongoc_collection_update_one(c, filter, update, NULL, &reply, error);
   *json = bson_as_relaxed_extended_json(&reply, NULL);
   bson_destroy(&reply);
   mongoc_collection_destroy(c);
   mongoc_client_pool_push(t.pool, client);
   return ok;
}

/* An event as another writer would store it; `seq` and `time` as BSON values. */
static bson_t *
event(const char *id, const bson_value_t *seq, const char *type, const bson_value_t *time)
{
   bson_t *ev = bson_new();
   if (id) {
      BSON_APPEND_UTF8(ev, "id", id);
   }
   bson_append_value(ev, "seq", 3, seq);
   BSON_APPEND_UTF8(ev, "type", type);
   bson_append_value(ev, "time", 4, time);
   bson_t empty = BSON_INITIALIZER;
   BSON_APPEND_DOCUMENT(ev, "data", &empty);
   return ev;
}

static bson_value_t
int64v(int64_t n)
{
   return (bson_value_t){.value_type = BSON_TYPE_INT64, .value.v_int64 = n};
}

static bson_value_t
int32v(int32_t n)
{
   return (bson_value_t){.value_type = BSON_TYPE_INT32, .value.v_int32 = n};
}

static bson_value_t
datev(int64_t ms)
{
   return (bson_value_t){.value_type = BSON_TYPE_DATE_TIME, .value.v_datetime = ms};
}

#define GOOD_ID "0f8fad5b-d9cb-469f-a165-70867728950e"

/* An entity committed by the library, with one pending event (seq 1). */
static bson_value_t
committed_entity(const char *name)
{
   bson_value_t id = lt_str_id(name);
   outbox_event_t *ev = outbox_event_new("thing.created", NULL);
   outbox_commit_t res;
   bson_error_t e;
   cr_assert(outbox_collection_create(t.coll, &id, NULL, &ev, 1, &res, &e), "%s", e.message);
   outbox_event_destroy(ev);
   return id;
}

Test(schema, installs_and_is_idempotent)
{
   lt_open(&t, NULL);
   ensure(NULL);
   bson_t *options = collection_options();
   bson_t want, got;
   bson_iter_t it;
   bson_error_t e;
   cr_assert(outbox_collection_schema(t.coll, NULL, &want, &e), "%s", e.message);
   cr_assert(bson_iter_init_find(&it, options, "validator") && BSON_ITER_HOLDS_DOCUMENT(&it));
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   bson_init_static(&got, data, len);
   cr_assert(bson_equal(&got, &want), "installed %s, want %s",
             bson_as_relaxed_extended_json(&got, NULL), bson_as_relaxed_extended_json(&want, NULL));
   assert_option(options, "validationLevel", "moderate");
   assert_option(options, "validationAction", "error");
   assert_option(options, "validator.$jsonSchema.title", "outbox stored contract");
   bson_destroy(options);
   bson_destroy(&want);
   /* Again: one listCollections, no collMod. */
   n_commands = 0;
   ensure(NULL);
   cr_assert(sent("listCollections") && !sent("collMod") && !sent("create"));
   /* Other options: collMod. */
   bson_t *warn =
      BCON_NEW("validationAction", BCON_UTF8("warn"), "validationLevel", BCON_UTF8("strict"));
   n_commands = 0;
   ensure(warn);
   cr_assert(sent("collMod"));
   options = collection_options();
   assert_option(options, "validationAction", "warn");
   assert_option(options, "validationLevel", "strict");
   bson_destroy(options);
   bson_destroy(warn);
}

Test(schema, library_and_relay_writes_pass)
{
   lt_open(&t, NULL);
   ensure(NULL);
   bson_value_t id = committed_entity("a");
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;
   lt_events_new(evs, 2, "thing.changed");
   cr_assert(outbox_event_set_header(evs[0], "x-request-id", "00-x-01", &e), "%s", e.message);
   bson_t *upd = BCON_NEW("$set", "{", "name", BCON_UTF8("Ada"), "}");
   cr_assert(outbox_collection_update(t.coll, &id, 1, upd, evs, 1, &res, &e), "%s", e.message);
   cr_assert(outbox_collection_append(t.coll, &id, evs + 1, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.last_seq, 3);
   /* The relay clears published events ... */
   lt_publish_all(&t, &id);
   /* ... and moves a poison event to the dead letters, in one update. */
   outbox_event_t *poison = outbox_event_new("thing.poison", NULL);
   cr_assert(outbox_collection_append(t.coll, &id, &poison, 1, &res, &e), "%s", e.message);
   bson_t *doc = lt_raw_get(&t, &id);
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "events.0", &it));
   bson_t filter = BSON_INITIALIZER, ev, dl;
   BSON_APPEND_VALUE(&filter, "_id", &id);
   bson_t *move = bson_new();
   BSON_APPEND_DOCUMENT_BEGIN(move, "$pull", &ev);
   BSON_APPEND_DOCUMENT_BEGIN(&ev, "events", &dl);
   BSON_APPEND_UTF8(&dl, "id", outbox_event_get_id(poison));
   bson_append_document_end(&ev, &dl);
   bson_append_document_end(move, &ev);
   BSON_APPEND_DOCUMENT_BEGIN(move, "$push", &ev);
   BSON_APPEND_DOCUMENT_BEGIN(&ev, "deadLetters", &dl);
   bson_append_value(&dl, "event", 5, bson_iter_value(&it));
   BSON_APPEND_UTF8(&dl, "reason", "broker refused it");
   BSON_APPEND_DATE_TIME(&dl, "at", 1700000000000);
   BSON_APPEND_UTF8(&dl, "relay", "relay-1");
   bson_append_document_end(&ev, &dl);
   bson_append_document_end(move, &ev);
   lt_raw_update(&t, &filter, move);
   bson_destroy(doc);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_array_len(doc, "events"), 0);
   cr_assert_eq(lt_array_len(doc, "deadLetters"), 1);
   /* Soft delete and delete. */
   cr_assert(outbox_collection_soft_delete(t.coll, &id, 4, NULL, &res, &e), "%s", e.message);
   cr_assert(outbox_collection_delete(t.coll, &id, OUTBOX_ANY_VERSION, &e), "%s", e.message);
   bson_destroy(doc);
   bson_destroy(move);
   bson_destroy(&filter);
   bson_destroy(upd);
   outbox_event_destroy(poison);
   lt_events_destroy(evs, 2);
}

/* Each malformed write of another writer: refused with 121, errInfo naming the field. */
static void
assert_refused(const bson_value_t *id, const bson_t *update, const char *rule)
{
   bson_t filter = BSON_INITIALIZER;
   bson_error_t e;
   char *json;
   BSON_APPEND_VALUE(&filter, "_id", id);
   bson_t *before = lt_raw_get(&t, id);
   cr_assert_not(raw_write(&filter, update, false, &json, &e), "accepted: %s",
                 bson_as_relaxed_extended_json(update, NULL));
   cr_assert_eq(e.code, 121, "%s", e.message);
   cr_assert(strstr(json, "\"operatorName\" : \"$jsonSchema\"") && strstr(json, rule),
             "errInfo should name %s: %s", rule, json);
   lt_assert_unchanged(&t, id, before);
   bson_free(json);
   bson_destroy(before);
   bson_destroy(&filter);
}

static bson_t *
push_event(bson_t *ev)
{
   bson_t *u = BCON_NEW("$set", "{", "eventSeq", BCON_INT64(2), "version", BCON_INT64(2), "}",
                        "$push", "{", "events", BCON_DOCUMENT(ev), "}");
   bson_destroy(ev);
   return u;
}

Test(schema, malformed_writes_refused)
{
   lt_open(&t, NULL);
   ensure(NULL);
   bson_value_t id = committed_entity("m");
   bson_value_t one = int64v(2), now = datev(1700000000000);
   bson_value_t small = int32v(2);
   bson_t *u;
   u = push_event(event(GOOD_ID, &small, "thing.changed", &now));
   assert_refused(&id, u, "\"propertyName\" : \"seq\"");
   bson_destroy(u);
   u = push_event(event(NULL, &one, "thing.changed", &now));
   assert_refused(&id, u, "\"missingProperties\" : [ \"id\" ]");
   bson_destroy(u);
   u = push_event(event(GOOD_ID, &one, "thing changed", &now));
   assert_refused(&id, u, "\"propertyName\" : \"type\"");
   bson_destroy(u);
   u = push_event(event("not-a-uuid", &one, "thing.changed", &now));
   assert_refused(&id, u, "\"propertyName\" : \"id\"");
   bson_destroy(u);
   u = BCON_NEW("$set", "{", "version", BCON_DOUBLE(2.0), "}");
   assert_refused(&id, u, "\"propertyName\" : \"version\"");
   bson_destroy(u);
   u = BCON_NEW("$set", "{", "events", BCON_UTF8("none"), "}");
   assert_refused(&id, u, "\"propertyName\" : \"events\"");
   bson_destroy(u);
   u = BCON_NEW("$unset", "{", "eventSeq", BCON_INT32(1), "}");
   assert_refused(&id, u, "\"missingProperties\" : [ \"eventSeq\" ]");
   bson_destroy(u);
   /* An insert without bookkeeping. */
   bson_error_t e;
   char *json;
   bson_t *doc = BCON_NEW("_id", BCON_UTF8("bare"), "name", BCON_UTF8("x"));
   cr_assert_not(raw_write(NULL, doc, true, &json, &e));
   cr_assert_eq(e.code, 121, "%s", e.message);
   bson_free(json);
   bson_destroy(doc);
   /* The library's own events still go in. */
   outbox_event_t *ev = outbox_event_new("thing.changed", NULL);
   outbox_commit_t res;
   cr_assert(outbox_collection_append(t.coll, &id, &ev, 1, &res, &e), "%s", e.message);
   outbox_event_destroy(ev);
}

Test(schema, warn_lets_them_through)
{
   lt_open(&t, NULL);
   bson_t *opts = BCON_NEW("validationAction", BCON_UTF8("warn"));
   ensure(opts);
   bson_value_t id = committed_entity("w");
   bson_value_t small = int32v(2), now = datev(1700000000000);
   bson_t filter = BSON_INITIALIZER;
   bson_error_t e;
   char *json;
   BSON_APPEND_VALUE(&filter, "_id", &id);
   bson_t *u = push_event(event(GOOD_ID, &small, "thing.changed", &now));
   cr_assert(raw_write(&filter, u, false, &json, &e), "%s", e.message);
   bson_t *doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_array_len(doc, "events"), 2);
   bson_free(json);
   bson_destroy(doc);
   bson_destroy(u);
   bson_destroy(&filter);
   bson_destroy(opts);
}

Test(schema, foreign_validator_is_kept)
{
   lt_open(&t, NULL);
   mongoc_client_t *client = mongoc_client_pool_pop(t.pool);
   mongoc_database_t *db = mongoc_client_get_database(client, LT_DB);
   bson_t *create = BCON_NEW("create", BCON_UTF8(t.coll_name), "validator", "{", "owner", "{",
                             "$exists", BCON_BOOL(true), "}", "}");
   bson_error_t e;
   cr_assert(mongoc_database_write_command_with_opts(db, create, NULL, NULL, &e), "%s", e.message);
   mongoc_database_destroy(db);
   mongoc_client_pool_push(t.pool, client);
   bson_t *before = collection_options();
   cr_assert_not(outbox_collection_ensure_schema(t.coll, NULL, &e));
   cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(e.code, OUTBOX_ERROR_FOREIGN_VALIDATOR, "%s", e.message);
   bson_t *after = collection_options();
   cr_assert(bson_equal(before, after), "options changed: %s",
             bson_as_relaxed_extended_json(after, NULL));
   bson_destroy(after);
   /* combine: both, with $and; then a plain call finds ours inside and changes nothing. */
   bson_t *combine = BCON_NEW("combine", BCON_BOOL(true));
   ensure(combine);
   after = collection_options();
   assert_option(after, "validator.$and.1.$jsonSchema.title", "outbox stored contract");
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, after) &&
             bson_iter_find_descendant(&it, "validator.$and.0.owner.$exists", &it));
   n_commands = 0;
   ensure(NULL);
   cr_assert(!sent("collMod"));
   /* Both rules hold: the library's entity lacks "owner". */
   bson_value_t id = lt_str_id("f");
   outbox_commit_t res;
   cr_assert_not(outbox_collection_create(t.coll, &id, NULL, NULL, 0, &res, &e));
   cr_assert_eq(e.code, 121, "%s", e.message);
   bson_t *fields = BCON_NEW("owner", BCON_UTF8("me"));
   cr_assert(outbox_collection_create(t.coll, &id, fields, NULL, 0, &res, &e), "%s", e.message);
   bson_destroy(fields);
   bson_destroy(after);
   bson_destroy(combine);
   bson_destroy(before);
   bson_destroy(create);
}

Test(schema, field_names_and_options)
{
   bson_t *names = BCON_NEW("versionField", BCON_UTF8("v"), "eventSeqField", BCON_UTF8("s"),
                            "eventsField", BCON_UTF8("evts"));
   lt_open(&t, names);
   bson_t *opts = BCON_NEW("deadLettersField", BCON_UTF8("dead"));
   ensure(opts);
   bson_t *options = collection_options();
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, options) &&
             bson_iter_find_descendant(&it, "validator.$jsonSchema.properties.evts.items", &it));
   cr_assert(bson_iter_init(&it, options) &&
             bson_iter_find_descendant(&it, "validator.$jsonSchema.properties.dead", &it));
   bson_value_t id = lt_str_id("n");
   outbox_event_t *ev = outbox_event_new("thing.created", NULL);
   outbox_commit_t res;
   bson_error_t e;
   cr_assert(outbox_collection_create(t.coll, &id, NULL, &ev, 1, &res, &e), "%s", e.message);
   bson_t *bad = BCON_NEW("validationAction", BCON_UTF8("maybe"));
   cr_assert_not(outbox_collection_ensure_schema(t.coll, bad, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", e.message);
   bson_t *unknown = BCON_NEW("validator", "{", "}");
   cr_assert_not(outbox_collection_ensure_schema(t.coll, unknown, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", e.message);
   bson_t *clash = BCON_NEW("deadLettersField", BCON_UTF8("evts"));
   cr_assert_not(outbox_collection_ensure_schema(t.coll, clash, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", e.message);
   bson_destroy(clash);
   bson_destroy(unknown);
   bson_destroy(bad);
   outbox_event_destroy(ev);
   bson_destroy(options);
   bson_destroy(opts);
   bson_destroy(names);
}
