/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The change stream reader (stream/reader.c) against a real server (integration: test-mongod
 * from tests/fixtures/with-servers, or OUTBOX_TEST_MONGODB_URI): once started it says the
 * stream is open, then hands over appends (an insert with events, an update that raises the
 * seq) and not clears (an update that only empties the events); a reopen resumes after the
 * newest change read, so nothing is skipped; a start at the drop that ended the last stream
 * begins after it.
 */
#include <criterion/criterion.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deployment.h" /* tests/fixtures: the run's database prefix */
#include "config/namespace.h"
#include "store/store.h"
#include "stream/reader.h"

static relay_config_t cfg;
static mongoc_client_t *client;
static mongoc_collection_t *coll;
static relay_reader_t *rd;
static relay_nsset_t *set;

static void
no_wake(void *ctx)
{
   (void)ctx;
}

static void
setup(void)
{
   const char *uri = getenv("OUTBOX_TEST_MONGODB_URI");
   char name[64], db[96];
   bson_error_t error;

   mongoc_init();
   if (!uri) {
      cr_skip_test("OUTBOX_TEST_MONGODB_URI is not set (run through tests/fixtures/with-servers)");
   }
   bson_snprintf(name, sizeof name, "reader_%ld", (long)getpid());
   relay_config_init_defaults(&cfg);
   cfg.mongodb_uri = bson_strdup(uri);
   /* A database of its own per test (each runs in a process of its own, maybe at once):
    * one test drops its database. */
   char base[48];
   bson_snprintf(base, sizeof base, "outbox_test_reader_%ld", (long)getpid());
   deployment_db_name(base, db, sizeof db);
   cfg.database = bson_strdup(db);
   cfg.collections = bson_malloc0(2 * sizeof(char *));
   cfg.collections[0] = bson_strdup(name);
   cfg.n_collections = 1;
   client = mongoc_client_new(uri);
   cr_assert_not_null(client);
   coll = mongoc_client_get_collection(client, cfg.database, name);
   mongoc_collection_drop(coll, &error);
   cr_assert(mongoc_collection_insert_one(coll, &(bson_t)BSON_INITIALIZER, NULL, NULL, &error),
             "%s", error.message); /* the database exists before the stream opens */
   cr_assert(relay_config_resolve_namespaces(&cfg, &error), "%s", error.message);
   set = relay_nsset_new(&cfg, &error);
   cr_assert_not_null(set, "%s", error.message);
   rd = relay_reader_new(&cfg, set, relay_store_client_new(&cfg, "test-reader", &error),
                         relay_store_operation_time, no_wake, NULL, &error);
   cr_assert_not_null(rd, "%s", error.message);
}

static void
teardown(void)
{
   bson_error_t error;
   relay_reader_destroy(rd);
   relay_nsset_destroy(set);
   set = NULL;
   if (coll) {
      mongoc_collection_drop(coll, &error);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   relay_config_destroy(&cfg);
   mongoc_cleanup();
}

TestSuite(reader, .init = setup, .fini = teardown);

/* The next change of @kind (others are skipped: IDLE marks), waiting up to 10 s; NULL when
 * none came. */
static relay_change_t *
next_of(relay_change_kind_t kind)
{
   for (int i = 0; i < 1000; i++) {
      relay_change_t *c = relay_reader_pop(rd);
      if (c && c->kind == kind) {
         return c;
      }
      if (c) {
         relay_change_free(c);
      } else {
         usleep(10000);
      }
   }
   return NULL;
}

static void
write_json(bool insert, const char *id, const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   bool ok;
   cr_assert_not_null(doc, "%s", error.message);
   if (insert) {
      ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
   } else {
      bson_t *filter = BCON_NEW("_id", BCON_UTF8(id));
      ok = mongoc_collection_update_one(coll, filter, doc, NULL, NULL, &error);
      bson_destroy(filter);
   }
   cr_assert(ok, "%s", error.message);
   bson_destroy(doc);
}

static const char *
doc_id(const relay_change_t *c)
{
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, c->doc) && bson_iter_find_descendant(&it, "documentKey._id", &it));
   return bson_iter_utf8(&it, NULL);
}

#define EVENT(id, seq) "{\"id\": \"" id "\", \"seq\": " #seq ", \"type\": \"T\", \"data\": {}}"

Test(reader, appends_are_handed_over_and_clears_are_not)
{
   uint64_t gen = relay_reader_start(rd, NULL, NULL);
   relay_change_t *c = next_of(RELAY_CHANGE_OPENED);

   cr_assert_not_null(c, "the stream never said it was open");
   cr_assert_eq(c->gen, gen);
   relay_change_free(c);
   write_json(
      true, "a",
      "{\"_id\": \"a\", \"version\": 1, \"eventSeq\": 1, \"events\": [" EVENT("a1", 1) "]}");
   write_json(false, "a", "{\"$set\": {\"events\": []}}"); /* a clear */
   write_json(false, "a",
              "{\"$set\": {\"version\": 2, \"eventSeq\": 2, \"events\": [" EVENT("a2", 2) "]}}");
   c = next_of(RELAY_CHANGE_EVENT);
   cr_assert_not_null(c, "the insert was not handed over");
   cr_assert_str_eq(doc_id(c), "a");
   cr_assert_eq(c->gen, gen);
   relay_change_free(c);
   c = next_of(RELAY_CHANGE_EVENT);
   cr_assert_not_null(c, "the append was not handed over");
   /* The append, not the clear: the clear never sets eventSeq. */
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, c->doc) &&
                bson_iter_find_descendant(&it, "updateDescription.updatedFields.eventSeq", &it),
             "the second change handed over is not the append (a clear got through?)");
   relay_change_free(c);
}

/* A reopen resumes after the newest change read: what was written meanwhile comes. */
Test(reader, a_reopen_skips_nothing)
{
   relay_change_t *c;
   relay_reader_start(rd, NULL, NULL);
   relay_change_free(next_of(RELAY_CHANGE_OPENED));
   write_json(
      true, "b",
      "{\"_id\": \"b\", \"version\": 1, \"eventSeq\": 1, \"events\": [" EVENT("b1", 1) "]}");
   c = next_of(RELAY_CHANGE_EVENT);
   cr_assert_not_null(c);
   relay_change_free(c);
   relay_reader_reopen(rd);
   write_json(
      true, "c",
      "{\"_id\": \"c\", \"version\": 1, \"eventSeq\": 1, \"events\": [" EVENT("c1", 1) "]}");
   c = next_of(RELAY_CHANGE_EVENT);
   cr_assert_not_null(c, "the change written during the reopen was skipped");
   cr_assert_str_eq(doc_id(c), "c");
   relay_change_free(c);
}

/* A start at a time no later than the invalidate that ended the last stream (a sweep's
 * start after a dropDatabase, taken from the newest write: the drop) begins after that
 * invalidate: it does not meet the drop again (which would end it again, and again). */
Test(reader, a_start_at_the_drop_that_ended_the_stream_begins_after_it)
{
   mongoc_database_t *db = mongoc_client_get_database(client, cfg.database);
   bson_t *cmd = BCON_NEW("dropDatabase", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;
   bson_iter_t it;
   relay_ts_t drop_ts;
   relay_change_t *c;

   relay_reader_start(rd, NULL, NULL);
   relay_change_free(next_of(RELAY_CHANGE_OPENED));
   cr_assert(mongoc_database_command_simple(db, cmd, NULL, &reply, &error), "%s", error.message);
   cr_assert(bson_iter_init_find(&it, &reply, "operationTime") && BSON_ITER_HOLDS_TIMESTAMP(&it));
   bson_iter_timestamp(&it, &drop_ts.t, &drop_ts.i);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_database_destroy(db);
   c = next_of(RELAY_CHANGE_LOST);
   cr_assert_not_null(c, "the database's drop did not end the stream");
   relay_change_free(c);

   relay_reader_start(rd, NULL, &drop_ts);
   relay_change_free(next_of(RELAY_CHANGE_OPENED));
   write_json(
      true, "d",
      "{\"_id\": \"d\", \"version\": 1, \"eventSeq\": 1, \"events\": [" EVENT("d1", 1) "]}");
   c = next_of(RELAY_CHANGE_EVENT);
   cr_assert_not_null(c, "the insert after the drop was not handed over");
   cr_assert(bson_iter_init_find(&it, c->doc, "operationType") &&
                !strcmp(bson_iter_utf8(&it, NULL), "insert"),
             "the new stream met the drop that ended the last one again");
   cr_assert_str_eq(doc_id(c), "d");
   relay_change_free(c);
}
