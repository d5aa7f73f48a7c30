/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams through mongoc_collection_watch: event shapes (updateDescription as the
 * server logs it), fullDocument updateLookup, filters, invalidate, and resume across a
 * forced disconnect without losing or repeating events.
 */
#include <criterion/criterion.h>

#include "tests/test-util.h"

typedef struct {
   mongoc_client_t *client; /* the watcher */
   mongoc_client_t *writer;
   mongoc_collection_t *coll; /* watcher's handle */
   mongoc_collection_t *wcoll;
   char *name;
   char app[64];
} fixture_t;

static fixture_t fx;

static void
setup(void)
{
   fx.name = md_test_name("cs");
   snprintf(fx.app, sizeof fx.app, "watch-%s", fx.name);
   fx.client = md_test_client(fx.app, false);
   fx.writer = md_test_client(NULL, false);
   fx.coll = mongoc_client_get_collection(fx.client, "mdtest", fx.name);
   fx.wcoll = mongoc_client_get_collection(fx.writer, "mdtest", fx.name);
}

static void
teardown(void)
{
   mongoc_collection_destroy(fx.coll);
   mongoc_collection_destroy(fx.wcoll);
   mongoc_client_destroy(fx.client);
   mongoc_client_destroy(fx.writer);
   bson_free(fx.name);
}

TestSuite(changestream, .init = setup, .fini = teardown, .timeout = 30);

static mongoc_change_stream_t *
watch(const char *pipeline_json, const char *opts_json)
{
   bson_error_t error;
   bson_t *pipeline = bson_new_from_json(
      (const uint8_t *)(pipeline_json ? pipeline_json : "{\"pipeline\": []}"), -1, &error);
   bson_t *opts = bson_new_from_json(
      (const uint8_t *)(opts_json ? opts_json : "{\"maxAwaitTimeMS\": 200}"), -1, &error);
   cr_assert(pipeline && opts, "%s", error.message);
   mongoc_change_stream_t *cs = mongoc_collection_watch(fx.coll, pipeline, opts);
   const bson_t *err_doc;
   cr_assert(!mongoc_change_stream_error_document(cs, &error, &err_doc), "watch: %s",
             error.message);
   bson_destroy(pipeline);
   bson_destroy(opts);
   return cs;
}

/* The next event (a copy, caller destroys), or NULL after `ms` without one. Asserts no
 * error unless `error` is given, which then receives it. */
static bson_t *
next_event(mongoc_change_stream_t *cs, int ms, bson_error_t *error)
{
   const bson_t *doc;
   bson_error_t local;
   int64_t deadline = bson_get_monotonic_time() + ms * 1000;
   while (bson_get_monotonic_time() < deadline) {
      if (mongoc_change_stream_next(cs, &doc)) {
         return bson_copy(doc);
      }
      if (mongoc_change_stream_error_document(cs, error ? error : &local, NULL)) {
         cr_assert_not_null(error, "change stream error: %s", local.message);
         return NULL;
      }
   }
   return NULL;
}

static void
write_json(const char *filter, const char *update)
{
   bson_error_t error;
   bson_t *f = bson_new_from_json((const uint8_t *)filter, -1, &error);
   cr_assert_not_null(f);
   if (!update) {
      cr_assert(mongoc_collection_insert_one(fx.wcoll, f, NULL, NULL, &error), "%s", error.message);
   } else {
      bson_t *u = bson_new_from_json((const uint8_t *)update, -1, &error);
      cr_assert_not_null(u);
      cr_assert(mongoc_collection_update_one(fx.wcoll, f, u, NULL, NULL, &error), "%s",
                error.message);
      bson_destroy(u);
   }
   bson_destroy(f);
}

/* Applies `update` to {_id: 1} and asserts the event's updateDescription. */
static void
expect_description(mongoc_change_stream_t *cs, const char *update, const char *want)
{
   write_json("{\"_id\": 1}", update);
   bson_t *ev = next_event(cs, 5000, NULL);
   cr_assert_not_null(ev, "no event for %s", update);
   md_test_assert_json(ev, "operationType", "\"update\"");
   md_test_assert_json(ev, "updateDescription", want);
   bson_destroy(ev);
}

Test(changestream, update_descriptions)
{
   write_json("{\"_id\": 1, \"a\": {\"b\": 1}, \"n\": 1, \"events\": [{\"id\": 1}]}", NULL);
   mongoc_change_stream_t *cs = watch(NULL, NULL);
   const char *empty = ", \"removedFields\" : [  ], \"truncatedArrays\" : [  ] }";
   char want[512];
   snprintf(want, sizeof want, "{ \"updatedFields\" : { \"a.b\" : 2, \"n\" : 2 }%s", empty);
   expect_description(cs, "{\"$set\": {\"a.b\": 2}, \"$inc\": {\"n\": 1}}", want);
   snprintf(want, sizeof want, "{ \"updatedFields\" : { \"x\" : { \"y\" : 1 } }%s", empty);
   expect_description(cs, "{\"$set\": {\"x.y\": 1}}", want);
   snprintf(want, sizeof want,
            "{ \"updatedFields\" : { \"events.1\" : { \"id\" : 2 }, \"events.2\" : "
            "{ \"id\" : 3 } }%s",
            empty);
   expect_description(cs, "{\"$push\": {\"events\": {\"$each\": [{\"id\": 2}, {\"id\": 3}]}}}",
                      want);
   snprintf(want, sizeof want,
            "{ \"updatedFields\" : { \"events\" : [ { \"id\" : 1 }, { \"id\" : 3 } ] }%s", empty);
   expect_description(cs, "{\"$pull\": {\"events\": {\"id\": 2}}}", want);
   snprintf(want, sizeof want, "{ \"updatedFields\" : { \"fresh\" : [ 1 ] }%s", empty);
   expect_description(cs, "{\"$push\": {\"fresh\": 1}}", want);
   expect_description(cs, "{\"$unset\": {\"a\": \"\"}}",
                      "{ \"updatedFields\" : {  }, \"removedFields\" : [ \"a\" ], "
                      "\"truncatedArrays\" : [  ] }");
   mongoc_change_stream_destroy(cs);
}

Test(changestream, insert_shape_and_update_lookup)
{
   mongoc_change_stream_t *cs = watch(NULL, "{\"maxAwaitTimeMS\": 200, "
                                            "\"fullDocument\": \"updateLookup\"}");
   write_json("{\"_id\": 1, \"v\": 1}", NULL);
   write_json("{\"_id\": 1}", "{\"$inc\": {\"v\": 1}}");
   bson_t *ins = next_event(cs, 5000, NULL), *upd = next_event(cs, 5000, NULL);
   cr_assert(ins && upd);
   md_test_assert_json(ins, "operationType", "\"insert\"");
   md_test_assert_json(ins, "fullDocument", "{ \"_id\" : 1, \"v\" : 1 }");
   md_test_assert_json(ins, "documentKey", "{ \"_id\" : 1 }");
   char *ns = bson_strdup_printf("{ \"db\" : \"mdtest\", \"coll\" : \"%s\" }", fx.name);
   md_test_assert_json(ins, "ns", ns);
   bson_free(ns);
   md_test_assert_json(upd, "fullDocument", "{ \"_id\" : 1, \"v\" : 2 }");
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, upd, "clusterTime") && BSON_ITER_HOLDS_TIMESTAMP(&it));
   cr_assert(bson_iter_init_find(&it, upd, "wallTime") && BSON_ITER_HOLDS_DATE_TIME(&it));
   bson_destroy(ins);
   bson_destroy(upd);
   mongoc_change_stream_destroy(cs);
}

Test(changestream, match_on_operation_type_and_updated_fields)
{
   /* The relay's filter: inserts, plus updates that touched the events array. */
   mongoc_change_stream_t *cs =
      watch("{\"pipeline\": [{\"$match\": {\"$or\": [{\"operationType\": \"insert\"}, "
            "{\"operationType\": \"update\", \"updateDescription.updatedFields.version\": "
            "{\"$exists\": true}}]}}]}",
            NULL);
   write_json("{\"_id\": 1, \"version\": 1}", NULL);
   write_json("{\"_id\": 1}", "{\"$set\": {\"other\": 1}}");
   write_json("{\"_id\": 1}", "{\"$inc\": {\"version\": 1}}");
   bson_t *a = next_event(cs, 5000, NULL), *b = next_event(cs, 5000, NULL);
   cr_assert(a && b);
   md_test_assert_json(a, "operationType", "\"insert\"");
   md_test_assert_json(b, "updateDescription.updatedFields", "{ \"version\" : 2 }");
   bson_destroy(a);
   bson_destroy(b);
   mongoc_change_stream_destroy(cs);
}

Test(changestream, drop_invalidates)
{
   bson_error_t error;
   write_json("{\"_id\": 1}", NULL);
   mongoc_change_stream_t *cs = watch(NULL, NULL);
   cr_assert(mongoc_collection_drop(fx.wcoll, &error), "%s", error.message);
   bson_t *drop = next_event(cs, 5000, NULL), *inv = next_event(cs, 5000, NULL);
   cr_assert(drop && inv);
   md_test_assert_json(drop, "operationType", "\"drop\"");
   md_test_assert_json(inv, "operationType", "\"invalidate\"");
   bson_destroy(drop);
   bson_destroy(inv);
   mongoc_change_stream_destroy(cs);
}

/* Reads events until `want` distinct ids arrived; asserts order and no repeats. */
static void
expect_ids(mongoc_change_stream_t *cs, int first, int last)
{
   for (int id = first; id <= last; id++) {
      bson_t *ev = next_event(cs, 10000, NULL);
      cr_assert_not_null(ev, "event %d never arrived", id);
      char want[32];
      snprintf(want, sizeof want, "%d", id);
      md_test_assert_json(ev, "documentKey._id", want);
      bson_destroy(ev);
   }
}

static void
resume_after_failure(const char *fail_point, const char *data_json)
{
   mongoc_change_stream_t *cs = watch(NULL, NULL);
   write_json("{\"_id\": 1}", NULL);
   expect_ids(cs, 1, 1);
   char *cmd_json = bson_strdup_printf("{\"configureFailPoint\": \"%s\", \"mode\": "
                                       "{\"times\": 1}, \"data\": {\"failCommands\": "
                                       "[\"getMore\"], \"appName\": \"%s\", %s}}",
                                       fail_point, fx.app, data_json);
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)cmd_json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   md_test_admin(fx.writer, cmd, NULL);
   write_json("{\"_id\": 2}", NULL);
   write_json("{\"_id\": 3}", NULL);
   expect_ids(cs, 2, 3);
   write_json("{\"_id\": 4}", NULL);
   expect_ids(cs, 4, 4);
   cr_assert_null(next_event(cs, 300, NULL), "an event was repeated");
   md_test_failpoint_off(fx.writer, fail_point);
   bson_destroy(cmd);
   bson_free(cmd_json);
   mongoc_change_stream_destroy(cs);
}

Test(changestream, resume_after_closed_connection)
{
   resume_after_failure("failCommand", "\"closeConnection\": true");
}

Test(changestream, resume_after_labelled_error)
{
   resume_after_failure("failCommand", "\"errorCode\": 6, \"errorLabels\": "
                                       "[\"ResumableChangeStreamError\"]");
}

/* The server labels a real change-stream getMore error itself. This fail point is not
 * scoped to an application: another test's stream may resume once too, which is harmless. */
Test(changestream, resume_after_error_on_checked_out_cursor)
{
   resume_after_failure("failGetMoreAfterCursorCheckout", "\"errorCode\": 89");
}

Test(changestream, unlabelled_failcommand_error_is_not_resumed)
{
   mongoc_change_stream_t *cs = watch(NULL, NULL);
   char *cmd_json = bson_strdup_printf("{\"configureFailPoint\": \"failCommand\", \"mode\": "
                                       "{\"times\": 1}, \"data\": {\"failCommands\": "
                                       "[\"getMore\"], \"appName\": \"%s\", "
                                       "\"errorCode\": 6}}",
                                       fx.app);
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)cmd_json, -1, &error);
   md_test_admin(fx.writer, cmd, NULL);
   write_json("{\"_id\": 1}", NULL);
   cr_assert_null(next_event(cs, 5000, &error));
   cr_assert_eq(error.code, 6, "%d %s", error.code, error.message);
   bson_destroy(cmd);
   bson_free(cmd_json);
   mongoc_change_stream_destroy(cs);
}

Test(changestream, resume_token_restarts_stream)
{
   mongoc_change_stream_t *cs = watch(NULL, NULL);
   write_json("{\"_id\": 1}", NULL);
   expect_ids(cs, 1, 1);
   bson_t *token = bson_copy(mongoc_change_stream_get_resume_token(cs));
   mongoc_change_stream_destroy(cs);
   write_json("{\"_id\": 2}", NULL);
   write_json("{\"_id\": 3}", NULL);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(200), "resumeAfter", BCON_DOCUMENT(token));
   bson_t *pipeline = bson_new();
   cs = mongoc_collection_watch(fx.coll, pipeline, opts);
   expect_ids(cs, 2, 3);
   mongoc_change_stream_destroy(cs);
   bson_destroy(pipeline);
   bson_destroy(opts);
   bson_destroy(token);
}
