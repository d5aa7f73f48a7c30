/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams through test-mongod --mongos --shards 2 (mongoc_*_watch): the shards'
 * changes merged in cluster-time order with the shard key in documentKey, resuming from a
 * mongos token, pipelines with $expr and $toHashedIndexKey, database- and cluster-wide
 * streams, and (suite mongos_idle, against the default 10 s no-op interval) an idle shard
 * holding the stream back.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tests/test-util.h"

static mongoc_client_t *client;
static char *db;
static const bson_t empty = BSON_INITIALIZER; /* an empty pipeline */
static mongoc_collection_t *coll;

static void
setup(void)
{
   client = md_test_client("mongos-cs", false);
   db = md_test_name("mscs");
   coll = mongoc_client_get_collection(client, db, "t");
}

static void
teardown(void)
{
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   bson_free(db);
}

TestSuite(mongos_cs, .init = setup, .fini = teardown, .timeout = 60);
TestSuite(mongos_idle, .init = setup, .fini = teardown, .timeout = 60);

static void
admin(const char *fmt)
{
   char *json = bson_strdup_printf(fmt, db);
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   cr_assert(mongoc_client_command_simple(client, "admin", cmd, NULL, NULL, &error), "%s: %s", json,
             error.message);
   bson_destroy(cmd);
   bson_free(json);
}

/* {tenant: 1, _id: 1}: tenants before "m" on shard0, the rest on shard1. */
static void
shard_tenants(void)
{
   admin("{\"enableSharding\": \"%s\", \"primaryShard\": \"shard0\"}");
   admin("{\"shardCollection\": \"%s.t\", \"key\": {\"tenant\": 1, \"_id\": 1}}");
   admin("{\"split\": \"%s.t\", \"middle\": {\"tenant\": \"m\", \"_id\": {\"$minKey\": 1}}}");
   admin("{\"moveChunk\": \"%s.t\", \"find\": {\"tenant\": \"x\"}, \"to\": \"shard1\"}");
}

static void
write_json(const char *json)
{
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   bson_t reply;
   cr_assert(mongoc_collection_write_command_with_opts(coll, cmd, NULL, &reply, &error), "%s: %s",
             json, error.message);
   bson_iter_t it;
   cr_assert(!bson_iter_init_find(&it, &reply, "writeErrors"), "%s", md_test_json(&reply));
   bson_destroy(&reply);
   bson_destroy(cmd);
}

/* The next event within `ms`, or NULL. */
static const bson_t *
next_event(mongoc_change_stream_t *cs, int64_t ms)
{
   const bson_t *doc = NULL;
   int64_t until = bson_get_monotonic_time() + ms * 1000;
   bson_error_t error;
   while (!mongoc_change_stream_next(cs, &doc)) {
      cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
      if (bson_get_monotonic_time() > until) {
         return NULL;
      }
   }
   return doc;
}

static bson_t *
json(const char *text)
{
   bson_error_t error;
   bson_t *b = bson_new_from_json((const uint8_t *)text, -1, &error);
   cr_assert_not_null(b, "%s: %s", text, error.message);
   return b;
}

static void
expect(mongoc_change_stream_t *cs, const char *op, const char *key_json)
{
   const bson_t *ev = next_event(cs, 5000);
   cr_assert_not_null(ev, "no %s event for %s", op, key_json);
   md_test_assert_json(ev, "operationType", op);
   md_test_assert_json(ev, "documentKey", key_json);
}

#define KEY_A1 "{ \"tenant\" : \"a\", \"_id\" : 1 }"
#define KEY_Z2 "{ \"tenant\" : \"z\", \"_id\" : 2 }"
#define KEY_B3 "{ \"tenant\" : \"b\", \"_id\" : 3 }"

/* Five changes alternating between the shards; the last (on shard0) comes only once
 * shard1's periodic no-op (300 ms in this suite) has passed its time. */
static void
five_changes(void)
{
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"a\", \"_id\": 1}]}");
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"z\", \"_id\": 2}]}");
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"b\", \"_id\": 3}]}");
   write_json("{\"update\": \"t\", \"updates\": [{\"q\": {\"tenant\": \"z\", \"_id\": 2}, "
              "\"u\": {\"$set\": {\"x\": 1}}}]}");
   write_json("{\"delete\": \"t\", \"deletes\": [{\"q\": {\"tenant\": \"a\", \"_id\": 1}, "
              "\"limit\": 1}]}");
}

Test(mongos_cs, merged_in_cluster_time_order_with_shard_key)
{
   shard_tenants();
   bson_t *opts = json("{\"maxAwaitTimeMS\": 100}");
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, &empty, opts);
   five_changes();
   expect(cs, "\"insert\"", KEY_A1);
   expect(cs, "\"insert\"", KEY_Z2);
   expect(cs, "\"insert\"", KEY_B3);
   expect(cs, "\"update\"", KEY_Z2);
   expect(cs, "\"delete\"", KEY_A1);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
}

Test(mongos_cs, resumes_from_a_mongos_token)
{
   shard_tenants();
   bson_t *opts = json("{\"maxAwaitTimeMS\": 100}");
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, &empty, opts);
   five_changes();
   expect(cs, "\"insert\"", KEY_A1);
   const bson_t *ev = next_event(cs, 5000);
   cr_assert_not_null(ev);
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, ev, "_id"));
   bson_t *resume = bson_new();
   bson_append_iter(resume, "resumeAfter", -1, &it);
   BSON_APPEND_INT32(resume, "maxAwaitTimeMS", 100);
   mongoc_change_stream_destroy(cs);
   cs = mongoc_collection_watch(coll, &empty, resume);
   expect(cs, "\"insert\"", KEY_B3);
   expect(cs, "\"update\"", KEY_Z2);
   expect(cs, "\"delete\"", KEY_A1);
   mongoc_change_stream_destroy(cs);
   bson_destroy(resume);
   bson_destroy(opts);
}

Test(mongos_cs, database_stream_with_expr_and_hashed_key)
{
   shard_tenants();
   mongoc_database_t *database = mongoc_client_get_database(client, db);
   bson_t *pipeline = json("{\"pipeline\": [{\"$match\": {\"$expr\": {\"$eq\": "
                           "[{\"$toHashedIndexKey\": \"$documentKey._id\"}, "
                           "{\"$toHashedIndexKey\": 2}]}}}]}");
   bson_t *opts = json("{\"maxAwaitTimeMS\": 100}");
   mongoc_change_stream_t *cs = mongoc_database_watch(database, pipeline, opts);
   five_changes();
   expect(cs, "\"insert\"", KEY_Z2);
   expect(cs, "\"update\"", KEY_Z2);
   cr_assert_null(next_event(cs, 800), "only _id 2's changes pass the filter");
   mongoc_change_stream_destroy(cs);
   mongoc_database_destroy(database);
   bson_destroy(pipeline);
   bson_destroy(opts);
}

Test(mongos_cs, cluster_wide_stream)
{
   shard_tenants();
   char *text = bson_strdup_printf("{\"pipeline\": [{\"$match\": {\"ns.db\": \"%s\"}}]}", db);
   bson_t *pipeline = json(text);
   bson_t *opts = json("{\"maxAwaitTimeMS\": 100}");
   mongoc_change_stream_t *cs = mongoc_client_watch(client, pipeline, opts);
   five_changes();
   expect(cs, "\"insert\"", KEY_A1);
   expect(cs, "\"insert\"", KEY_Z2);
   mongoc_change_stream_destroy(cs);
   bson_destroy(pipeline);
   bson_destroy(opts);
   bson_free(text);
}

/* A reply's operationTime is the cluster's time (not the answering server's): a stream
 * started at a ping's operationTime shows the last write before it (startAtOperationTime is
 * inclusive, and that write set the cluster time) and what came after, nothing older. */
Test(mongos_cs, start_at_a_reply_operation_time)
{
   shard_tenants();
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"a\", \"_id\": 1}]}");
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"z\", \"_id\": 2}]}");
   bson_t *ping = json("{\"ping\": 1}"), reply;
   bson_error_t error;
   cr_assert(mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &error), "%s",
             error.message);
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, &reply, "operationTime"));
   uint32_t t, i;
   bson_iter_timestamp(&it, &t, &i);
   bson_t *opts = bson_new();
   BSON_APPEND_TIMESTAMP(opts, "startAtOperationTime", t, i);
   BSON_APPEND_INT32(opts, "maxAwaitTimeMS", 100);
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, &empty, opts);
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"b\", \"_id\": 3}]}");
   expect(cs, "\"insert\"", KEY_Z2);
   expect(cs, "\"insert\"", KEY_B3);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
   bson_destroy(&reply);
   bson_destroy(ping);
}

/* Against the default no-op interval (10 s, longer than this test): a change on one shard
 * waits while the other is idle, and comes as soon as the other moves past it. */
Test(mongos_idle, idle_shard_holds_the_stream_back)
{
   if (!getenv("OUTBOX_TEST_MONGOS_IDLE")) {
      cr_skip_test("needs a server with the default --periodic-noop-ms (mongod-mongos-idle)");
   }
   shard_tenants();
   bson_t *opts = json("{\"maxAwaitTimeMS\": 100}");
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, &empty, opts);
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"a\", \"_id\": 1}]}");
   cr_assert_null(next_event(cs, 1000), "shard1 has not reached the insert's cluster time");
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"z\", \"_id\": 2}]}");
   expect(cs, "\"insert\"", KEY_A1);
   /* now shard0 is the idle one: the insert on shard1 waits for it */
   cr_assert_null(next_event(cs, 1000), "shard0 has not reached the second insert's time");
   write_json("{\"insert\": \"t\", \"documents\": [{\"tenant\": \"b\", \"_id\": 3}]}");
   expect(cs, "\"insert\"", KEY_Z2);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
}
