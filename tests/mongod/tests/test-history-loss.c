/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Resuming after the history bound fails with 286 ChangeStreamHistoryLost, as in MongoDB
 * when the oplog rolled over. Needs a server started with a small history
 * (test-mongod --oplog-size 16); skipped against an external server (a real replica set).
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tests/test-util.h"

static void
insert_n(mongoc_collection_t *coll, int first, int n)
{
   bson_error_t error;
   for (int i = first; i < first + n; i++) {
      bson_t *doc = BCON_NEW("_id", BCON_INT32(i));
      cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
      bson_destroy(doc);
   }
}

static int
oplog_size(void)
{
   /* Only when with-servers started test-mongod itself (with the small history). */
   const char *s = getenv("OUTBOX_TEST_MONGOD_OPLOG_SIZE");
   return s && getenv("OUTBOX_TEST_MONGOD_PID") ? atoi(s) : 0;
}

Test(history_loss, resume_token_too_old_is_286, .timeout = 30)
{
   int size = oplog_size();
   if (size <= 0) {
      cr_skip_test("needs a server with a small history (OUTBOX_TEST_MONGOD_OPLOG_SIZE)");
   }
   mongoc_client_t *client = md_test_client(NULL, false);
   char *name = md_test_name("hl");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *pipeline = bson_new();
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(100));
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, pipeline, opts);
   const bson_t *doc;
   bson_error_t error;
   insert_n(coll, 0, 1);
   while (!mongoc_change_stream_next(cs, &doc)) {
      cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
   }
   bson_t *token = bson_copy(mongoc_change_stream_get_resume_token(cs));
   mongoc_change_stream_destroy(cs);
   insert_n(coll, 1, size * 2);
   bson_destroy(opts);
   opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(100), "resumeAfter", BCON_DOCUMENT(token));
   cs = mongoc_collection_watch(coll, pipeline, opts);
   bool got = mongoc_change_stream_next(cs, &doc);
   cr_assert(!got);
   cr_assert(mongoc_change_stream_error_document(cs, &error, NULL));
   cr_assert_eq(error.code, 286, "got %d: %s", error.code, error.message);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
   bson_destroy(pipeline);
   bson_destroy(token);
   mongoc_collection_destroy(coll);
   bson_free(name);
   mongoc_client_destroy(client);
}

Test(history_loss, stream_left_behind_gets_286, .timeout = 30)
{
   int size = oplog_size();
   if (size <= 0) {
      cr_skip_test("needs a server with a small history (OUTBOX_TEST_MONGOD_OPLOG_SIZE)");
   }
   mongoc_client_t *client = md_test_client(NULL, false);
   mongoc_client_t *writer = md_test_client(NULL, false);
   char *name = md_test_name("hl");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   mongoc_collection_t *wcoll = mongoc_client_get_collection(writer, "mdtest", name);
   bson_t *pipeline = bson_new();
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(100), "batchSize", BCON_INT32(1));
   mongoc_change_stream_t *cs = mongoc_collection_watch(coll, pipeline, opts);
   const bson_t *doc;
   bson_error_t error;
   insert_n(wcoll, 0, 1);
   while (!mongoc_change_stream_next(cs, &doc)) {
      cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
   }
   insert_n(wcoll, 1, size * 2);
   /* The driver does not resume on 286 (NonResumableChangeStreamError). */
   bool failed = false;
   for (int i = 0; i < size * 2 && !failed; i++) {
      if (!mongoc_change_stream_next(cs, &doc)) {
         failed = mongoc_change_stream_error_document(cs, &error, NULL);
      }
   }
   cr_assert(failed, "the stream never reported the lost history");
   cr_assert_eq(error.code, 286, "got %d: %s", error.code, error.message);
   mongoc_change_stream_destroy(cs);
   bson_destroy(opts);
   bson_destroy(pipeline);
   mongoc_collection_destroy(coll);
   mongoc_collection_destroy(wcoll);
   bson_free(name);
   mongoc_client_destroy(client);
   mongoc_client_destroy(writer);
}
