/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Fault injection as mongod's test commands provide it (configureFailPoint failCommand and
 * failGetMoreAfterCursorCheckout). Run with CRITERION_JOBS=1: fail points are server-wide.
 */
#include <criterion/criterion.h>

#include "tests/test-util.h"

static void
configure(mongoc_client_t *client, const char *json)
{
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   md_test_admin(client, cmd, NULL);
   bson_destroy(cmd);
}

/* Whether the server is a mongos (hello's msg "isdbgrid"). */
static bool
is_mongos(mongoc_client_t *client)
{
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   bson_t reply;
   bson_iter_t it;
   md_test_admin(client, cmd, &reply);
   bool mongos = bson_iter_init_find(&it, &reply, "msg") && BSON_ITER_HOLDS_UTF8(&it) &&
                 strcmp(bson_iter_utf8(&it, NULL), "isdbgrid") == 0;
   bson_destroy(&reply);
   bson_destroy(cmd);
   return mongos;
}

/* Runs {ping: 1} on the client; returns the error code (0 on success). */
static uint32_t
ping(mongoc_client_t *client, bson_t *reply_out)
{
   bson_error_t error;
   bson_t reply;
   bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error);
   if (reply_out) {
      bson_copy_to(&reply, reply_out);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
   return ok ? 0 : error.code;
}

Test(failpoint, times_and_app_name)
{
   mongoc_client_t *target = md_test_client("fp-times", false);
   mongoc_client_t *other = md_test_client("fp-other", false);
   configure(other, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 2}, "
                    "\"data\": {\"failCommands\": [\"ping\"], \"errorCode\": 2, "
                    "\"appName\": \"fp-times\"}}");
   cr_assert_eq(ping(other, NULL), 0, "another application must not be affected");
   cr_assert_eq(ping(target, NULL), 2);
   cr_assert_eq(ping(target, NULL), 2);
   cr_assert_eq(ping(target, NULL), 0, "the fail point fires twice only");
   mongoc_client_destroy(target);
   mongoc_client_destroy(other);
}

Test(failpoint, skip_then_always)
{
   mongoc_client_t *client = md_test_client("fp-skip", false);
   configure(client, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"skip\": 1}, "
                     "\"data\": {\"failCommands\": [\"ping\"], \"errorCode\": 91, "
                     "\"appName\": \"fp-skip\"}}");
   cr_assert_eq(ping(client, NULL), 0);
   /* 91 makes libmongoc reset the server; later pings fail the same way. */
   cr_assert_eq(ping(client, NULL), 91);
   md_test_failpoint_off(client, "failCommand");
   mongoc_client_destroy(client);
}

Test(failpoint, error_labels_are_sent)
{
   mongoc_client_t *client = md_test_client("fp-labels", false);
   bson_t reply;
   configure(client, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, "
                     "\"data\": {\"failCommands\": [\"ping\"], \"errorCode\": 112, "
                     "\"errorLabels\": [\"TransientTransactionError\"], "
                     "\"appName\": \"fp-labels\"}}");
   cr_assert_eq(ping(client, &reply), 112);
   md_test_assert_json(&reply, "errorLabels", "[ \"TransientTransactionError\" ]");
   md_test_assert_json(&reply, "codeName", "\"WriteConflict\"");
   bson_destroy(&reply);
   mongoc_client_destroy(client);
}

Test(failpoint, close_connection)
{
   mongoc_client_t *client = md_test_client("fp-close", false);
   configure(client, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, "
                     "\"data\": {\"failCommands\": [\"ping\"], \"closeConnection\": true, "
                     "\"appName\": \"fp-close\"}}");
   cr_assert_neq(ping(client, NULL), 0);
   cr_assert_eq(ping(client, NULL), 0, "the client reconnects");
   mongoc_client_destroy(client);
}

Test(failpoint, block_connection)
{
   mongoc_client_t *client = md_test_client("fp-block", false);
   cr_assert_eq(ping(client, NULL), 0);
   configure(client, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, "
                     "\"data\": {\"failCommands\": [\"ping\"], \"blockConnection\": true, "
                     "\"blockTimeMS\": 300, \"appName\": \"fp-block\"}}");
   int64_t start = bson_get_monotonic_time();
   cr_assert_eq(ping(client, NULL), 0);
   int64_t elapsed_ms = (bson_get_monotonic_time() - start) / 1000;
   cr_assert_geq(elapsed_ms, 290);
   mongoc_client_destroy(client);
}

Test(failpoint, write_concern_error)
{
   mongoc_client_t *client = md_test_client("fp-wce", false);
   configure(client, "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, "
                     "\"data\": {\"failCommands\": [\"insert\"], \"writeConcernError\": "
                     "{\"code\": 100, \"errmsg\": \"injected\"}, \"appName\": \"fp-wce\"}}");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", "fp_wce");
   bson_t *doc = BCON_NEW("x", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;
   bool ok = mongoc_collection_insert_one(coll, doc, NULL, &reply, &error);
   cr_assert(!ok, "a write concern error fails the insert");
   cr_assert_eq(error.code, 100, "%d %s", error.code, error.message);
   bson_destroy(&reply);
   bson_destroy(doc);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

Test(failpoint, get_more_after_cursor_checkout)
{
   mongoc_client_t *client = md_test_client("fp-getmore", false);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", "fp_getmore");
   bson_error_t error;
   for (int i = 0; i < 3; i++) {
      bson_t *doc = BCON_NEW("_id", BCON_INT32(i));
      mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
      bson_destroy(doc);
   }
   configure(client, "{\"configureFailPoint\": \"failGetMoreAfterCursorCheckout\", "
                     "\"mode\": {\"times\": 1}, \"data\": {\"errorCode\": 8}}");
   bson_t *filter = bson_new();
   bson_t *opts = BCON_NEW("batchSize", BCON_INT32(1));
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
   const bson_t *doc;
   cr_assert(mongoc_cursor_next(cur, &doc));
   cr_assert(!mongoc_cursor_next(cur, &doc));
   cr_assert(mongoc_cursor_error(cur, &error));
   cr_assert_eq(error.code, 8);
   mongoc_cursor_destroy(cur);
   bson_destroy(opts);
   bson_destroy(filter);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* A connection lost after the write committed: libmongoc retries with the same txnNumber
 * and the server answers from its record instead of appending the event twice. */
Test(failpoint, retried_write_applies_once)
{
   mongoc_client_t *client = md_test_client("fp-retry", false);
   if (is_mongos(client)) {
      mongoc_client_destroy(client);
      cr_skip_test("onPrimaryTransactionalWrite is a mongod fail point (r6.0 "
                   "src/mongo/db/transaction_participant.cpp): a mongos refuses it");
   }
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", "fp_retry");
   bson_error_t error;
   bson_t reply;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "events", "[", "]");
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   configure(client, "{\"configureFailPoint\": \"onPrimaryTransactionalWrite\", "
                     "\"mode\": {\"times\": 1}, \"data\": {\"closeConnection\": true}}");
   bson_t *f = BCON_NEW("_id", BCON_INT32(1));
   bson_t *u = BCON_NEW("$push", "{", "events", BCON_UTF8("once"), "}");
   cr_assert(mongoc_collection_update_one(coll, f, u, NULL, &reply, &error), "%s", error.message);
   md_test_assert_json(&reply, "modifiedCount", "1");
   bson_destroy(&reply);
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, f, NULL, NULL);
   const bson_t *found;
   cr_assert(mongoc_cursor_next(cur, &found));
   md_test_assert_json(found, "events", "[ \"once\" ]");
   mongoc_cursor_destroy(cur);
   bson_destroy(u);
   bson_destroy(f);
   bson_destroy(doc);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}
