/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * test-mongod --mongos --shards 2 through mongoc: hello as mongos, the sharding commands
 * and the config collections, routing of writes and reads by shard key, mongos 6.0's
 * refusals, and what is not supported. Each test uses its own database.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/test-util.h"

static mongoc_client_t *client;
static char *db;

static void
setup(void)
{
   client = md_test_client("mongos-test", false);
   db = md_test_name("ms");
}

static void
teardown(void)
{
   mongoc_client_destroy(client);
   bson_free(db);
}

TestSuite(mongos, .init = setup, .fini = teardown, .timeout = 60);

/* Runs a command given as JSON (%s replaced by the test's database) on `on`. */
static bool
run(const char *on, const char *json, bson_t *reply, bson_error_t *error)
{
   char *text = bson_strdup_printf(json, db, db, db);
   bson_error_t parse;
   bson_t *cmd = bson_new_from_json((const uint8_t *)text, -1, &parse);
   cr_assert_not_null(cmd, "%s: %s", text, parse.message);
   bson_t local;
   bool ok = mongoc_client_command_simple(client, strcmp(on, "db") == 0 ? db : on, cmd, NULL,
                                          reply ? reply : &local, error);
   if (!reply) {
      bson_destroy(&local);
   }
   bson_destroy(cmd);
   bson_free(text);
   return ok;
}

static void
must(const char *on, const char *json, bson_t *reply)
{
   bson_error_t error;
   cr_assert(run(on, json, reply, &error), "%s: %s", json, error.message);
}

static int64_t
count(const char *coll, const char *filter)
{
   bson_t reply;
   bson_iter_t it;
   char *json = bson_strdup_printf("{\"count\": \"%s\", \"query\": %s}", coll, filter);
   must("db", json, &reply);
   cr_assert(bson_iter_init_find(&it, &reply, "n"));
   int64_t n = bson_iter_as_int64(&it);
   bson_destroy(&reply);
   bson_free(json);
   return n;
}

/* A collection sharded on {tenant: 1, _id: 1}: chunk [MinKey, "m") on shard0, ["m", MaxKey)
 * moved (while empty) to shard1. */
static void
shard_tenants(void)
{
   must("admin", "{\"enableSharding\": \"%s\", \"primaryShard\": \"shard0\"}", NULL);
   must("admin", "{\"shardCollection\": \"%s.t\", \"key\": {\"tenant\": 1, \"_id\": 1}}", NULL);
   must("admin",
        "{\"split\": \"%s.t\", \"middle\": {\"tenant\": \"m\", \"_id\": {\"$minKey\": 1}}}", NULL);
   must("admin", "{\"moveChunk\": \"%s.t\", \"find\": {\"tenant\": \"x\"}, \"to\": \"shard1\"}",
        NULL);
}

Test(mongos, hello_answers_as_mongos)
{
   bson_t reply;
   bson_iter_t it;
   must("admin", "{\"hello\": 1}", &reply);
   md_test_assert_json(&reply, "msg", "\"isdbgrid\"");
   cr_assert(!bson_iter_init_find(&it, &reply, "setName"), "mongos has no setName");
   cr_assert(!bson_iter_init_find(&it, &reply, "hosts"), "mongos has no hosts");
   md_test_assert_json(&reply, "isWritablePrimary", "true");
   bson_destroy(&reply);
   /* mongoc takes it for a mongos */
   bson_error_t error;
   mongoc_server_description_t *sd = mongoc_client_select_server(client, true, NULL, &error);
   cr_assert_not_null(sd, "%s", error.message);
   cr_assert_str_eq(mongoc_server_description_type(sd), "Mongos");
   mongoc_server_description_destroy(sd);
}

Test(mongos, list_shards_and_config_collections)
{
   bson_t reply;
   must("admin", "{\"listShards\": 1}", &reply);
   md_test_assert_json(&reply, "shards.0._id", "\"shard0\"");
   md_test_assert_json(&reply, "shards.1._id", "\"shard1\"");
   bson_destroy(&reply);
   must("admin", "{\"enableSharding\": \"%s\"}", NULL);
   must("admin", "{\"shardCollection\": \"%s.h\", \"key\": {\"_id\": \"hashed\"}}", &reply);
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, &reply, "collectionUUID"));
   const bson_value_t *uuid = bson_iter_value(&it);
   mongoc_collection_t *chunks = mongoc_client_get_collection(client, "config", "chunks");
   bson_t filter = BSON_INITIALIZER;
   bson_append_value(&filter, "uuid", 4, uuid);
   bson_error_t error;
   /* 6.0: two chunks per shard for a hashed key on an empty collection */
   cr_assert_eq(mongoc_collection_count_documents(chunks, &filter, NULL, NULL, NULL, &error), 4,
                "%s", error.message);
   bson_destroy(&filter);
   bson_destroy(&reply);
   mongoc_collection_destroy(chunks);
   char *json =
      bson_strdup_printf("{\"find\": \"collections\", \"filter\": {\"_id\": \"%s.h\"}}", db);
   must("config", json, &reply);
   md_test_assert_json(&reply, "cursor.firstBatch.0.key", "{ \"_id\" : \"hashed\" }");
   bson_destroy(&reply);
   bson_free(json);
   json = bson_strdup_printf("{\"find\": \"databases\", \"filter\": {\"_id\": \"%s\"}}", db);
   must("config", json, &reply);
   bson_iter_t primary;
   cr_assert(bson_iter_init(&primary, &reply) &&
                bson_iter_find_descendant(&primary, "cursor.firstBatch.0.primary", &primary),
             "config.databases has the database with its primary shard");
   bson_destroy(&reply);
   bson_free(json);
}

/* Documents land on the shard owning their chunk: once a chunk holds documents it can no
 * longer be moved (no migration), before that it could. */
Test(mongos, range_key_chunks_decide_the_shard)
{
   bson_error_t error;
   shard_tenants();
   must("db",
        "{\"insert\": \"t\", \"documents\": [{\"_id\": 1, \"tenant\": \"a\"}, "
        "{\"_id\": 2, \"tenant\": \"z\"}, {\"_id\": 3, \"tenant\": \"n\"}]}",
        NULL);
   cr_assert_eq(count("t", "{}"), 3);
   cr_assert(!run("admin",
                  "{\"moveChunk\": \"%s.t\", \"find\": {\"tenant\": \"x\"}, "
                  "\"to\": \"shard0\"}",
                  NULL, &error),
             "the upper chunk holds documents now");
   cr_assert(strstr(error.message, "chunk migration"), "%s", error.message);
   cr_assert_eq(error.code, 20);
   /* the shard key pins the shard: both documents are found by their full key */
   cr_assert_eq(count("t", "{\"tenant\": \"z\", \"_id\": 2}"), 1);
   cr_assert_eq(count("t", "{\"tenant\": \"a\", \"_id\": 1}"), 1);
}

/* 6.0 treats a missing shard key field as null: the document goes to the chunk of null. */
Test(mongos, insert_without_shard_key_field)
{
   shard_tenants();
   must("db", "{\"insert\": \"t\", \"documents\": [{\"_id\": 7}]}", NULL);
   cr_assert_eq(count("t", "{\"tenant\": null}"), 1);
   bson_t reply;
   must("db",
        "{\"findAndModify\": \"t\", \"query\": {\"tenant\": null, \"_id\": 7}, "
        "\"update\": {\"$set\": {\"seen\": true}}, \"new\": true}",
        &reply);
   md_test_assert_json(&reply, "value.seen", "true");
   bson_destroy(&reply);
}

Test(mongos, single_document_writes_need_the_shard_key)
{
   bson_t reply;
   bson_error_t error;
   shard_tenants();
   must("db",
        "{\"insert\": \"t\", \"documents\": [{\"_id\": 1, \"tenant\": \"a\", \"x\": 1}, "
        "{\"_id\": 2, \"tenant\": \"z\", \"x\": 1}]}",
        NULL);
   /* updateOne without shard key or _id: 72 as 6.0's ChunkManagerTargeter::targetUpdate */
   must("db",
        "{\"update\": \"t\", \"updates\": [{\"q\": {\"x\": 1}, \"u\": {\"$set\": "
        "{\"y\": 1}}}]}",
        &reply);
   md_test_assert_json(&reply, "writeErrors.0.code", "72");
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, &reply) &&
             bson_iter_find_descendant(&it, "writeErrors.0.errmsg", &it));
   cr_assert(strstr(bson_iter_utf8(&it, NULL),
                    "A {multi:false} update on a sharded collection must contain an exact "
                    "match on _id (and have the collection default collation) or target a "
                    "single shard (and have the simple collation), but this update targeted 2 "
                    "shards. Update request: { q: { x: 1 }, u: { $set: { y: 1 } }, multi: "
                    "false, upsert: false }, shard key pattern: { tenant: 1, _id: 1 }"),
             "%s", bson_iter_utf8(&it, NULL));
   bson_destroy(&reply);
   /* deleteOne without either: 61 ShardKeyNotFound */
   must("db", "{\"delete\": \"t\", \"deletes\": [{\"q\": {\"x\": 1}, \"limit\": 1}]}", &reply);
   md_test_assert_json(&reply, "writeErrors.0.code", "61");
   bson_destroy(&reply);
   /* findAndModify needs the shard key, _id is not enough */
   cr_assert(!run("db", "{\"findAndModify\": \"t\", \"query\": {\"_id\": 1}, \"remove\": true}",
                  NULL, &error));
   cr_assert_eq(error.code, 61);
   cr_assert_str_eq(error.message, "Query for sharded findAndModify must contain the shard key");
   /* an upsert needs the whole shard key in its query */
   must("db",
        "{\"update\": \"t\", \"updates\": [{\"q\": {\"_id\": 9}, \"u\": {\"$set\": "
        "{\"y\": 1}}, \"upsert\": true}]}",
        &reply);
   md_test_assert_json(&reply, "writeErrors.0.code", "61");
   bson_destroy(&reply);
   /* _id equality is enough for updateOne and deleteOne; multi writes go everywhere */
   must("db",
        "{\"update\": \"t\", \"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$set\": "
        "{\"y\": 1}}}]}",
        &reply);
   md_test_assert_json(&reply, "nModified", "1");
   bson_destroy(&reply);
   must("db",
        "{\"update\": \"t\", \"updates\": [{\"q\": {\"x\": 1}, \"u\": {\"$inc\": "
        "{\"x\": 1}}, \"multi\": true}]}",
        &reply);
   md_test_assert_json(&reply, "nModified", "2");
   bson_destroy(&reply);
   must("db", "{\"delete\": \"t\", \"deletes\": [{\"q\": {\"_id\": 1}, \"limit\": 1}]}", &reply);
   md_test_assert_json(&reply, "n", "1");
   bson_destroy(&reply);
   cr_assert_eq(count("t", "{\"x\": 2}"), 1);
}

Test(mongos, reads_merge_every_shard)
{
   bson_t reply;
   must("admin", "{\"enableSharding\": \"%s\"}", NULL);
   must("admin", "{\"shardCollection\": \"%s.h\", \"key\": {\"_id\": \"hashed\"}}", NULL);
   bson_t *docs = bson_new(), *cmd = bson_new();
   for (int i = 0; i < 50; i++) {
      char key[16];
      const char *k;
      bson_t d;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(docs, k, &d);
      BSON_APPEND_INT32(&d, "_id", i);
      BSON_APPEND_INT32(&d, "v", i % 5);
      bson_append_document_end(docs, &d);
   }
   BSON_APPEND_UTF8(cmd, "insert", "h");
   BSON_APPEND_ARRAY(cmd, "documents", docs);
   bson_error_t error;
   cr_assert(mongoc_client_command_simple(client, db, cmd, NULL, &reply, &error), "%s",
             error.message);
   md_test_assert_json(&reply, "n", "50");
   bson_destroy(&reply);
   bson_destroy(docs);
   bson_destroy(cmd);
   cr_assert_eq(count("h", "{}"), 50);
   must("db", "{\"find\": \"h\", \"sort\": {\"_id\": -1}, \"limit\": 2, \"batchSize\": 1}", &reply);
   md_test_assert_json(&reply, "cursor.firstBatch.0._id", "49");
   bson_destroy(&reply);
   must("db", "{\"distinct\": \"h\", \"key\": \"v\"}", &reply);
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "values.4", &it));
   cr_assert(!(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "values.5", &it)),
             "each value once, merged from both shards");
   bson_destroy(&reply);
   must("db",
        "{\"aggregate\": \"h\", \"pipeline\": [{\"$group\": {\"_id\": null, \"n\": "
        "{\"$sum\": 1}}}], \"cursor\": {}}",
        &reply);
   md_test_assert_json(&reply, "cursor.firstBatch.0.n", "50");
   bson_destroy(&reply);
   /* a cursor over the merged results, followed with getMore */
   mongoc_collection_t *coll = mongoc_client_get_collection(client, db, "h");
   bson_t *opts = BCON_NEW("batchSize", BCON_INT32(7));
   bson_t filter = BSON_INITIALIZER;
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
   const bson_t *doc;
   int n = 0;
   while (mongoc_cursor_next(cursor, &doc)) {
      n++;
   }
   cr_assert(!mongoc_cursor_error(cursor, &error), "%s", error.message);
   cr_assert_eq(n, 50);
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   mongoc_collection_destroy(coll);
}

Test(mongos, unsupported_is_named)
{
   bson_error_t error;
   must("admin", "{\"enableSharding\": \"%s\"}", NULL);
   must("admin", "{\"shardCollection\": \"%s.h\", \"key\": {\"_id\": \"hashed\"}}", NULL);
   cr_assert(!run("admin", "{\"replSetGetStatus\": 1}", NULL, &error));
   cr_assert_eq(error.code, 59);
   cr_assert(!run("db",
                  "{\"aggregate\": \"h\", \"pipeline\": [{\"$lookup\": {\"from\": \"x\", "
                  "\"localField\": \"a\", \"foreignField\": \"b\", \"as\": \"c\"}}], "
                  "\"cursor\": {}}",
                  NULL, &error));
   cr_assert(strstr(error.message, "$lookup"), "%s", error.message);
   mongoc_client_session_t *session = mongoc_client_start_session(client, NULL, &error);
   cr_assert_not_null(session, "%s", error.message);
   cr_assert(mongoc_client_session_start_transaction(session, NULL, &error));
   mongoc_collection_t *coll = mongoc_client_get_collection(client, db, "h");
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   bson_t opts = BSON_INITIALIZER;
   cr_assert(mongoc_client_session_append(session, &opts, &error));
   /* Transactions run through mongos (as 6.0's): the insert commits on its shard. */
   cr_assert(mongoc_collection_insert_one(coll, doc, &opts, NULL, &error), "%s", error.message);
   bson_t reply;
   cr_assert(mongoc_client_session_commit_transaction(session, &reply, &error), "%s",
             error.message);
   bson_destroy(&reply);
   cr_assert_eq(mongoc_collection_count_documents(coll, doc, NULL, NULL, NULL, &error), 1, "%s",
                error.message);
   bson_destroy(&opts);
   bson_destroy(doc);
   mongoc_collection_destroy(coll);
   mongoc_client_session_destroy(session);
}
