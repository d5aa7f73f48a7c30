/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * An open transaction is aborted after the transaction lifetime limit (server started with
 * --transaction-lifetime 1; mongod's default transactionLifetimeLimitSeconds is 60, so
 * against an external server this test is skipped). A write waiting for the transaction's
 * document proceeds once it is gone.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tests/test-util.h"

Test(txn_expiry, an_expired_transaction_is_aborted, .timeout = 30)
{
   if (!getenv("OUTBOX_TEST_MONGOD_PID") || !getenv("OUTBOX_TEST_MONGOD_TXN_LIFETIME")) {
      cr_skip_test("needs test-mongod started with --transaction-lifetime");
   }
   bson_error_t error;
   bson_t reply;
   mongoc_client_t *client = md_test_client(NULL, false);
   char *name = md_test_name("txnexp");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "v", BCON_INT32(0));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   mongoc_client_session_t *s = mongoc_client_start_session(client, NULL, &error);
   cr_assert(mongoc_client_session_start_transaction(s, NULL, &error), "%s", error.message);
   bson_t *opts = bson_new();
   cr_assert(mongoc_client_session_append(s, opts, &error));
   bson_t *filter = BCON_NEW("_id", BCON_INT32(1));
   bson_t *in_txn = BCON_NEW("$set", "{", "v", BCON_INT32(1), "}");
   bson_t *outside = BCON_NEW("$set", "{", "w", BCON_INT32(2), "}");
   cr_assert(mongoc_collection_update_one(coll, filter, in_txn, opts, NULL, &error), "%s",
             error.message);
   /* Waits for the transaction, which ends when its lifetime runs out. */
   cr_assert(mongoc_collection_update_one(coll, filter, outside, NULL, NULL, &error), "%s",
             error.message);
   cr_assert(!mongoc_client_session_commit_transaction(s, &reply, &error));
   cr_assert_eq(error.code, 251, "the transaction was aborted: %s", error.message);
   bson_destroy(&reply);
   bson_t *check = BCON_NEW("v", BCON_INT32(0), "w", BCON_INT32(2));
   cr_assert_eq(mongoc_collection_count_documents(coll, check, NULL, NULL, NULL, &error), 1);
   bson_destroy(check);
   bson_destroy(outside);
   bson_destroy(in_txn);
   bson_destroy(filter);
   bson_destroy(opts);
   bson_destroy(doc);
   mongoc_client_session_destroy(s);
   mongoc_collection_destroy(coll);
   bson_free(name);
   mongoc_client_destroy(client);
}
