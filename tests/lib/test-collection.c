/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests without a server: options, the state cache, and that invalid input is refused
 * before any I/O (the pool points at a closed port, so any I/O would fail differently).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cache-private.h"
#include "collection-private.h"

static mongoc_client_pool_t *pool;

static void
setup(void)
{
   mongoc_uri_t *uri;

   mongoc_init();
   uri = mongoc_uri_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200"
                        "&connectTimeoutMS=200");
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   mongoc_uri_destroy(uri);
}

static void
teardown(void)
{
   mongoc_client_pool_destroy(pool);
   mongoc_cleanup();
}

TestSuite(collection, .init = setup, .fini = teardown);

static uint32_t
new_fails(bson_t *opts)
{
   bson_error_t error = {0};
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", opts, &error);

   bson_destroy(opts);
   if (c) {
      outbox_collection_destroy(c);
      return 0;
   }
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   return error.code;
}

Test(collection, options)
{
   bson_error_t error;
   bson_t *opts =
      BCON_NEW("versionField", BCON_UTF8("v"), "eventSeqField", BCON_UTF8("s"), "eventsField",
               BCON_UTF8("outbox"), "deletedField", BCON_UTF8("gone"), "maxPendingEvents",
               BCON_INT32(5), "maxDocumentSize", BCON_INT64(100000), "appendRetries", BCON_INT32(3),
               "cacheSize", BCON_INT32(0), "writeConcern", "{", "w", BCON_UTF8("majority"),
               "wtimeout", BCON_INT32(60000), "}");
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", opts, &error);

   cr_assert_not_null(c, "%s", error.message);
   cr_assert_str_eq(c->names.version, "v");
   cr_assert_str_eq(c->names.event_seq, "s");
   cr_assert_str_eq(c->names.events, "outbox");
   cr_assert_str_eq(c->names.deleted, "gone");
   cr_assert_eq(c->max_pending, 5);
   cr_assert_eq(c->max_doc_size, 100000);
   cr_assert_eq(c->retries, 3);
   cr_assert_null(c->cache);
   outbox_collection_destroy(c);
   bson_destroy(opts);

   c = outbox_collection_new(pool, "db", "c", NULL, &error);
   cr_assert_not_null(c);
   cr_assert_str_eq(c->names.version, "version");
   cr_assert_eq(c->max_pending, 1000);
   cr_assert_eq(c->max_doc_size, 15 * 1024 * 1024);
   cr_assert_not_null(c->cache);
   outbox_collection_destroy(c);
   outbox_collection_destroy(NULL);
}

Test(collection, bad_options)
{
   cr_assert_eq(new_fails(BCON_NEW("versionFeld", BCON_UTF8("v"))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("versionField", BCON_UTF8("a.b"))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("eventsField", BCON_UTF8("$e"))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("eventsField", BCON_UTF8(""))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("eventsField", BCON_UTF8("_id"))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("eventsField", BCON_INT32(1))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("eventsField", BCON_UTF8("version"))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("maxPendingEvents", BCON_INT32(0))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("maxPendingEvents", BCON_DOUBLE(5))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("maxDocumentSize", BCON_INT64(17 * 1024 * 1024))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("appendRetries", BCON_INT32(0))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", BCON_UTF8("majority"))),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("cacheSize", BCON_INT32(-1))), OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_null(outbox_collection_new(NULL, "db", "c", NULL, NULL));
   cr_assert_null(outbox_collection_new(pool, "", "c", NULL, NULL));
}

/* Commits are durable only with w: "majority" (an acknowledged w:1 write can be rolled back):
 * anything weaker, or a w the library cannot judge, is refused at outbox_collection_new(). */
Test(collection, write_concern_must_be_majority)
{
   bson_t *good = BCON_NEW("writeConcern", "{", "w", BCON_UTF8("majority"), "j", BCON_BOOL(true),
                           "wtimeout", BCON_INT32(5000), "}");
   bson_error_t error;
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", good, &error);
   char *json;

   cr_assert_not_null(c, "%s", error.message);
   json = bson_as_relaxed_extended_json(&c->update_opts, NULL);
   cr_assert_str_eq(json, "{ \"writeConcern\" : { \"w\" : \"majority\", \"j\" : true, "
                          "\"wtimeout\" : 5000 }, \"validate\" : false }");
   bson_free(json);
   outbox_collection_destroy(c);
   bson_destroy(good);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "w", BCON_INT32(1), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "w", BCON_INT32(0), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "w", BCON_INT32(3), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "w", BCON_UTF8("dc2"), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "j", BCON_BOOL(true), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(new_fails(BCON_NEW("writeConcern", "{", "w", BCON_UTF8("majority"), "fsync",
                                   BCON_BOOL(true), "}")),
                OUTBOX_ERROR_INVALID_ARGUMENT);
}

/* Every call below must be refused by validation: reaching the server would take the
 * server-selection timeout and fail with a mongoc error instead. */
Test(collection, invalid_input_fails_before_io)
{
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", NULL, NULL);
   outbox_event_t *bad = outbox_event_new("bad type", NULL);
   outbox_event_t *good = outbox_event_new("ok", NULL);
   bson_t *reserved = BCON_NEW("$set", "{", "events.0", BCON_INT32(1), "}");
   bson_t *replacement = BCON_NEW("name", BCON_UTF8("x"));
   bson_t *fields = BCON_NEW("eventSeq", BCON_INT64(9));
   bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
   bson_value_t bad_id = {.value_type = BSON_TYPE_DOUBLE};
   outbox_commit_t res;
   bson_error_t e;

   cr_assert_not(outbox_collection_update(c, &id, 1, reserved, NULL, 0, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_not(outbox_collection_update(c, &id, 1, replacement, NULL, 0, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(outbox_collection_update(c, &id, 1, NULL, &bad, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_collection_update(c, &id, 0, NULL, &good, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(outbox_collection_append(c, &bad_id, &good, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(outbox_collection_create(c, &id, fields, &good, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_not(outbox_collection_create(c, &id, NULL, &bad, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_collection_soft_delete(c, &id, 1, bad, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_collection_delete(c, &bad_id, 1, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(outbox_collection_delete(c, &id, -5, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(res.version, 0);
   cr_assert_eq(outbox_event_get_seq(good), 0);
   bson_destroy(reserved);
   bson_destroy(replacement);
   bson_destroy(fields);
   outbox_event_destroy(bad);
   outbox_event_destroy(good);
   outbox_collection_destroy(c);
}

Test(collection, pending_limit_before_io)
{
   bson_t *opts = BCON_NEW("maxPendingEvents", BCON_INT32(2));
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", opts, NULL);
   outbox_event_t *evs[3];
   bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
   bson_error_t e;

   for (int i = 0; i < 3; i++) {
      evs[i] = outbox_event_new("t", NULL);
   }
   cr_assert_not(outbox_collection_create(c, &id, NULL, evs, 3, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_PENDING);
   cr_assert_not(outbox_collection_update(c, &id, 1, NULL, evs, 3, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_PENDING);
   for (int i = 0; i < 3; i++) {
      outbox_event_destroy(evs[i]);
   }
   outbox_collection_destroy(c);
   bson_destroy(opts);
}

Test(collection, size_limit_before_io)
{
   bson_t *opts = BCON_NEW("maxDocumentSize", BCON_INT32(2000));
   outbox_collection_t *c = outbox_collection_new(pool, "db", "c", opts, NULL);
   char big[3000];
   bson_t *data, *update;
   outbox_event_t *ev;
   bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
   bson_error_t e;

   memset(big, 'x', sizeof big - 1);
   big[sizeof big - 1] = '\0';
   data = BCON_NEW("blob", BCON_UTF8(big));
   update = BCON_NEW("$set", "{", "blob", BCON_UTF8(big), "}");
   ev = outbox_event_new("t", data);
   cr_assert_not(outbox_collection_create(c, &id, data, NULL, 0, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_not(outbox_collection_update(c, &id, 1, NULL, &ev, 1, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_not(outbox_collection_update(c, &id, 1, update, NULL, 0, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE);
   outbox_event_destroy(ev);
   bson_destroy(data);
   bson_destroy(update);
   bson_destroy(opts);
   outbox_collection_destroy(c);
}

Test(cache, put_get_evict)
{
   _outbox_cache_t *cache = _outbox_cache_new(3); /* rounded up to 4 slots */
   bson_value_t a = {.value_type = BSON_TYPE_UTF8};
   bson_value_t b = {.value_type = BSON_TYPE_INT64, .value.v_int64 = 42};
   bson_value_t b32 = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 42};
   _outbox_doc_state_t st = {.version = 3, .event_seq = 5, .pending = 1, .size = 100}, got;

   a.value.v_utf8.str = "entity";
   a.value.v_utf8.len = 6;
   cr_assert_not(_outbox_cache_get(cache, &a, &got));
   _outbox_cache_put(cache, &a, &st);
   cr_assert(_outbox_cache_get(cache, &a, &got));
   cr_assert_eq(got.version, 3);
   cr_assert_eq(got.event_seq, 5);
   st.version = 9;
   _outbox_cache_put(cache, &b, &st);
   cr_assert(_outbox_cache_get(cache, &b, &got));
   cr_assert_eq(got.version, 9);
   cr_assert_not(_outbox_cache_get(cache, &b32, &got), "int32 and int64 keys differ");
   _outbox_cache_remove(cache, &b);
   cr_assert_not(_outbox_cache_get(cache, &b, &got));
   /* Many ids through 4 slots: every get returns either nothing or the id's own state. */
   for (int64_t i = 0; i < 100; i++) {
      bson_value_t k = {.value_type = BSON_TYPE_INT64, .value.v_int64 = i};
      _outbox_doc_state_t s = {.version = i + 1};

      _outbox_cache_put(cache, &k, &s);
   }
   for (int64_t i = 0; i < 100; i++) {
      bson_value_t k = {.value_type = BSON_TYPE_INT64, .value.v_int64 = i};

      if (_outbox_cache_get(cache, &k, &got)) {
         cr_assert_eq(got.version, i + 1);
      }
   }
   _outbox_cache_destroy(cache);
   cr_assert_null(_outbox_cache_new(0));
   cr_assert_not(_outbox_cache_get(NULL, &a, &got));
   _outbox_cache_put(NULL, &a, &st);
}

static uint32_t
mapped(uint32_t domain, uint32_t code, const char *message)
{
   bson_error_t error;

   bson_set_error(&error, domain, code, "%s", message);
   _outbox_map_size_error(&error);
   return error.domain == OUTBOX_ERROR_DOMAIN ? error.code : 0;
}

Test(errors, size_errors_are_mapped)
{
   cr_assert_eq(mapped(MONGOC_ERROR_SERVER, 17419, "Resulting document after update is larger"),
                OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_eq(mapped(MONGOC_ERROR_COLLECTION, 10334, "BSONObj size invalid"),
                OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_eq(mapped(MONGOC_ERROR_SERVER, 2, "object to insert too large"),
                OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_eq(mapped(MONGOC_ERROR_BSON, MONGOC_ERROR_BSON_INVALID, "Document is too large"),
                OUTBOX_ERROR_LIMIT_SIZE);
   cr_assert_eq(mapped(MONGOC_ERROR_SERVER, 2, "unknown operator"), 0);
   cr_assert_eq(mapped(MONGOC_ERROR_SERVER, 11000, "E11000 duplicate key"), 0);
   cr_assert_eq(mapped(MONGOC_ERROR_STREAM, 17419, "too large"), 0);
   _outbox_map_size_error(NULL);
}
