/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * TTL indexes expire documents (server started with --ttl-interval 1; mongod's monitor runs
 * every 60 s, so against an external server this test is skipped).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "tests/test-util.h"

Test(ttl, expired_documents_are_deleted, .timeout = 30)
{
   if (!getenv("OUTBOX_TEST_MONGOD_PID") || !getenv("OUTBOX_TEST_MONGOD_TTL_INTERVAL")) {
      cr_skip_test("needs test-mongod started with --ttl-interval");
   }
   mongoc_client_t *client = md_test_client(NULL, false);
   char *name = md_test_name("ttl");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *cmd = BCON_NEW("createIndexes", BCON_UTF8(name), "indexes", "[", "{", "key", "{", "at",
                          BCON_INT32(1), "}", "name", BCON_UTF8("at_1"), "expireAfterSeconds",
                          BCON_INT32(2), "}", "]");
   cr_assert(mongoc_collection_write_command_with_opts(coll, cmd, NULL, NULL, &error), "%s",
             error.message);
   int64_t now = (int64_t)time(NULL) * 1000;
   bson_t *old = BCON_NEW("_id", BCON_INT32(1), "at", BCON_DATE_TIME(now - 60000));
   bson_t *fresh = BCON_NEW("_id", BCON_INT32(2), "at", BCON_DATE_TIME(now + 600000));
   bson_t *no_date = BCON_NEW("_id", BCON_INT32(3), "at", BCON_UTF8("not a date"));
   cr_assert(mongoc_collection_insert_one(coll, old, NULL, NULL, &error));
   cr_assert(mongoc_collection_insert_one(coll, fresh, NULL, NULL, &error));
   cr_assert(mongoc_collection_insert_one(coll, no_date, NULL, NULL, &error));
   bson_t *all = bson_new();
   int64_t n = 3;
   for (int i = 0; i < 100 && n == 3; i++) {
      usleep(100 * 1000);
      n = mongoc_collection_count_documents(coll, all, NULL, NULL, NULL, &error);
   }
   cr_assert_eq(n, 2, "the expired document is gone, the others stay");
   bson_destroy(all);
   bson_destroy(no_date);
   bson_destroy(fresh);
   bson_destroy(old);
   bson_destroy(cmd);
   mongoc_collection_destroy(coll);
   bson_free(name);
   mongoc_client_destroy(client);
}
