/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests: commits whose outcome is unknown. The server's failCommand fail point
 * (one per server: the tests of this binary run one at a time, CRITERION_JOBS=1 in meson;
 * filtered by this test's appName, so other clients are not hit) drops the connection or
 * answers with a writeConcernError; the commit must then say OUTBOX_ERROR_UNKNOWN_OUTCOME, and
 * a retry with the same event objects must store the events exactly once. mongoc's own
 * retryable-write retry stays in play: one transient failure is absorbed by it.
 * Runs against the test server or a real replica set (enableTestCommands=1).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "lib-test.h"

static lt_t t;
static char app_name[64];
/* The w of every insert and update sent, as "majority" or "other", and the finds that wait
 * for the majority to reach an earlier read (readConcern majority with afterClusterTime). */
static int majority_writes, other_writes, majority_finds;

static void
started(const mongoc_apm_command_started_t *event)
{
   const char *name = mongoc_apm_command_started_get_command_name(event);
   bson_iter_t it;

   if (strcmp(name, "find") == 0) {
      majority_finds += bson_iter_init(&it, mongoc_apm_command_started_get_command(event)) &&
                        bson_iter_find_descendant(&it, "readConcern.afterClusterTime", &it) &&
                        bson_iter_init(&it, mongoc_apm_command_started_get_command(event)) &&
                        bson_iter_find_descendant(&it, "readConcern.level", &it) &&
                        BSON_ITER_HOLDS_UTF8(&it) &&
                        strcmp(bson_iter_utf8(&it, NULL), "majority") == 0;
      return;
   }
   if (strcmp(name, "insert") != 0 && strcmp(name, "update") != 0) {
      return;
   }
   if (bson_iter_init(&it, mongoc_apm_command_started_get_command(event)) &&
       bson_iter_find_descendant(&it, "writeConcern.w", &it) && BSON_ITER_HOLDS_UTF8(&it) &&
       strcmp(bson_iter_utf8(&it, NULL), "majority") == 0) {
      majority_writes++;
   } else {
      other_writes++;
   }
}

/* After a dropped connection or a "shutting down" error mongoc waits for the next heartbeat
 * to select the server again: make that 0.5 s rather than 10. And the URI asks for w:1,
 * which the library must not use. */
static void
fast_heartbeat_w1(mongoc_uri_t *uri)
{
   mongoc_write_concern_t *wc = mongoc_write_concern_new();

   cr_assert(mongoc_uri_set_option_as_int32(uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 500));
   mongoc_write_concern_set_w(wc, 1);
   mongoc_uri_set_write_concern(uri, wc);
   mongoc_write_concern_destroy(wc);
}

static void
setup(void)
{
   mongoc_apm_callbacks_t *apm = mongoc_apm_callbacks_new();
   uint32_t r = 0;

   mongoc_apm_set_command_started_cb(apm, started);
   lt_init_uri(&t, "outcome", fast_heartbeat_w1, apm, NULL);
   mongoc_apm_callbacks_destroy(apm);
   majority_writes = other_writes = majority_finds = 0;
   cr_assert_eq(getrandom(&r, sizeof r, 0), (ssize_t)sizeof r);
   snprintf(app_name, sizeof app_name, "outcome-%d-%08x", (int)getpid(), r);
   cr_assert(mongoc_client_pool_set_appname(t.pool, app_name));
   lt_open(&t, NULL);
   lt_requires(&t, "test commands"); /* every test arms failCommand */
}

static void
teardown(void)
{
   lt_cleanup(&t);
}

TestSuite(outcome, .init = setup, .fini = teardown, .timeout = 60);

/* Arms failCommand for the next `times` `command`s of this test's clients; `data_json` holds
 * the fail point's actions (closeConnection, errorCode, errorLabels, writeConcernError). */
static void
fail_next(const char *command, int times, const char *data_json)
{
   mongoc_client_t *client = mongoc_client_pool_pop(t.pool);
   bson_error_t e;
   bson_t *data = bson_new_from_json((const uint8_t *)data_json, -1, &e);
   bson_t cmd = BSON_INITIALIZER, child, arr;

   cr_assert_not_null(data, "%s", e.message);
   BSON_APPEND_UTF8(&cmd, "configureFailPoint", "failCommand");
   BCON_APPEND(&cmd, "mode", "{", "times", BCON_INT32(times), "}");
   BSON_APPEND_DOCUMENT_BEGIN(&cmd, "data", &child);
   bson_concat(&child, data);
   BSON_APPEND_ARRAY_BEGIN(&child, "failCommands", &arr);
   BSON_APPEND_UTF8(&arr, "0", command);
   bson_append_array_end(&child, &arr);
   BSON_APPEND_UTF8(&child, "appName", app_name);
   bson_append_document_end(&cmd, &child);
   cr_assert(mongoc_client_command_simple(client, "admin", &cmd, NULL, NULL, &e), "%s", e.message);
   bson_destroy(&cmd);
   bson_destroy(data);
   mongoc_client_pool_push(t.pool, client);
}

/* Applied, then the wait for the majority timed out: the write may or may not stay. mongoc
 * does not retry it (64 is not a retryable write concern error). */
#define WTIMEOUT                                                                                   \
   "{\"writeConcernError\": {\"code\": 64, \"codeName\": \"WriteConcernFailed\","                  \
   " \"errmsg\": \"waiting for replication timed out\", \"errInfo\": {\"wtimeout\": true}}}"
/* Applied, then the primary stepped down before the majority had it: retryable. */
#define STEPPED_DOWN                                                                               \
   "{\"writeConcernError\": {\"code\": 91, \"codeName\": \"ShutdownInProgress\","                  \
   " \"errmsg\": \"shutting down\"}, \"errorLabels\": [\"RetryableWriteError\"]}"
/* The connection drops before the command runs: not applied, retryable. */
#define DROPPED "{\"closeConnection\": true}"

static void
create_entity(const bson_value_t *id)
{
   bson_error_t e;

   cr_assert(outbox_collection_create(t.coll, id, NULL, NULL, 0, NULL, &e), "%s", e.message);
}

static void
assert_unknown(const bson_error_t *e)
{
   cr_assert_eq(e->domain, OUTBOX_ERROR_DOMAIN, "%" PRIu32 ".%" PRIu32 " %s", e->domain, e->code,
                e->message);
   cr_assert_eq(e->code, OUTBOX_ERROR_UNKNOWN_OUTCOME, "%" PRIu32 " %s", e->code, e->message);
}

/* Asserts the stored entity is at `version` with exactly evs[0..n) as its events, seq 1..n
 * and eventSeq n, and that the events know their seq. */
static void
assert_stored_once(const bson_value_t *id, int64_t version, outbox_event_t **evs, int n)
{
   bson_t *doc = lt_raw_get(&t, id);
   char key[32];
   bson_iter_t it;

   cr_assert_not_null(doc);
   cr_assert_eq(lt_int64(doc, "version"), version);
   cr_assert_eq(lt_int64(doc, "eventSeq"), n);
   cr_assert_eq(lt_array_len(doc, "events"), n);
   for (int i = 0; i < n; i++) {
      snprintf(key, sizeof key, "events.%d.id", i);
      cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, key, &it));
      cr_assert_str_eq(bson_iter_utf8(&it, NULL), outbox_event_get_id(evs[i]));
      snprintf(key, sizeof key, "events.%d.seq", i);
      cr_assert_eq(lt_int64(doc, key), i + 1);
      cr_assert_eq(outbox_event_get_seq(evs[i]), i + 1);
   }
   bson_destroy(doc);
}

/* wtimeout on an append (OUTBOX_ANY_VERSION): applied but unknown; the retry with the same
 * events finds them stored and returns the first attempt's result. */
Test(outcome, wtimeout_append_then_retry_stores_once)
{
   bson_value_t id = lt_str_id("wt-append");
   outbox_event_t *evs[2], *other = outbox_event_new("t.other", NULL);
   outbox_event_t *mixed[2];
   outbox_commit_t res;
   bson_error_t e;

   create_entity(&id);
   lt_events_new(evs, 2, "t.appended");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 2, &res, &e));
   assert_unknown(&e);
   cr_assert(strstr(e.message, "waiting for replication timed out"), "%s", e.message);
   cr_assert_eq(outbox_event_get_seq(evs[0]), 0);
   /* A retry must carry exactly the attempt's events. */
   mixed[0] = evs[0];
   mixed[1] = other;
   cr_assert_not(outbox_collection_append(t.coll, &id, mixed, 2, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", e.message);
   cr_assert_eq(majority_finds, 0);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
   /* Success only once a majority read, waiting for what the primary showed, has it. */
   cr_assert_eq(majority_finds, 1);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 1);
   cr_assert_eq(res.last_seq, 2);
   assert_stored_once(&id, 2, evs, 2);
   lt_events_destroy(evs, 2);
   outbox_event_destroy(other);
}

/* wtimeout on an update with an expected version: the retry at the same expected version
 * finds the version moved by its own first attempt, which is success, not a conflict. */
Test(outcome, wtimeout_update_expected_version_then_retry_is_success)
{
   bson_value_t id = lt_str_id("wt-update");
   bson_t *update = BCON_NEW("$set", "{", "name", BCON_UTF8("Grace"), "}");
   outbox_event_t *evs[1];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;
   bson_iter_t it;

   create_entity(&id);
   lt_events_new(evs, 1, "t.renamed");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, update, evs, 1, &res, &e));
   assert_unknown(&e);
   cr_assert_eq(res.version, 0);
   cr_assert(outbox_collection_update(t.coll, &id, 1, update, evs, 1, &res, &e), "%" PRIu32 " %s",
             e.code, e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 1);
   assert_stored_once(&id, 2, evs, 1);
   doc = lt_raw_get(&t, &id);
   cr_assert(bson_iter_init_find(&it, doc, "name"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "Grace");
   bson_destroy(doc);
   /* Someone else's change at the same version is still a conflict. */
   lt_events_destroy(evs, 1);
   lt_events_new(evs, 1, "t.renamed");
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, update, evs, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT);
   lt_events_destroy(evs, 1);
   bson_destroy(update);
}

/* The connection drops twice in a row: mongoc's one retry fails too, nothing was applied,
 * the outcome is unknown to the caller; its retry commits the events exactly once. */
Test(outcome, dropped_twice_then_retry_commits_once)
{
   bson_value_t id = lt_str_id("dropped");
   outbox_event_t *evs[3];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create_entity(&id);
   lt_events_new(evs, 3, "t.appended");
   fail_next("update", 2, DROPPED);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, evs, 3, &res, &e));
   assert_unknown(&e);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "version"), 1);
   cr_assert_eq(lt_array_len(doc, "events"), 0);
   bson_destroy(doc);
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, evs, 3, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.last_seq, 3);
   assert_stored_once(&id, 2, evs, 3);
   lt_events_destroy(evs, 3);
}

/* Applied, then a retryable writeConcernError on the attempt and on mongoc's retry (the server
 * recognizes the retry and does not apply it again): unknown to the caller, whose retry finds
 * the events stored once. */
Test(outcome, applied_then_retry_failed_too_then_retry_finds_it)
{
   bson_value_t id = lt_str_id("applied-twice");
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;

   create_entity(&id);
   lt_events_new(evs, 2, "t.appended");
   fail_next("update", 2, STEPPED_DOWN);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 2, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.last_seq, 2);
   assert_stored_once(&id, 2, evs, 2);
   lt_events_destroy(evs, 2);
}

/* One transient failure is mongoc's to absorb (retryable writes): success, events once,
 * whether the failed try was applied (stepped down after writing) or not (dropped). */
Test(outcome, single_transient_failure_is_retried_by_the_driver)
{
   bson_value_t id = lt_str_id("transient");
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;

   create_entity(&id);
   lt_events_new(evs, 1, "t.appended");
   fail_next("update", 1, DROPPED);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 1, &res, &e), "%s", e.message);
   assert_stored_once(&id, 2, evs, 1);
   lt_events_new(evs + 1, 1, "t.appended");
   fail_next("update", 1, STEPPED_DOWN);
   cr_assert(outbox_collection_append(t.coll, &id, evs + 1, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 2);
   assert_stored_once(&id, 3, evs, 2);
   lt_events_destroy(evs, 2);
}

/* Applied, then the relay published and cleared the events before the retry: recentCommits
 * still lists the attempt, so the retry is success with the attempt's result and writes
 * nothing. */
Test(outcome, retry_after_relay_cleared_finds_it_in_recent_commits)
{
   bson_value_t id = lt_str_id("cleared");
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   create_entity(&id);
   lt_events_new(evs, 2, "t.appended");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 2, &res, &e));
   assert_unknown(&e);
   lt_publish_all(&t, &id);
   before = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(before, "eventSeq"), 2);
   cr_assert_eq(lt_array_len(before, "events"), 0);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 1);
   cr_assert_eq(res.last_seq, 2);
   cr_assert_eq(outbox_event_get_seq(evs[1]), 2);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   lt_events_destroy(evs, 2);
}

/* Not stored, and another writer's commit took its place and was cleared: recentCommits shows
 * that commit at the attempt's seq, so the retry commits the events as new, once. */
Test(outcome, retry_after_other_commit_cleared_commits_as_new)
{
   bson_value_t id = lt_str_id("other-cleared");
   outbox_event_t *evs[2], *theirs[1];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create_entity(&id);
   lt_events_new(evs, 2, "t.ours");
   lt_events_new(theirs, 1, "t.theirs");
   fail_next("update", 2, DROPPED);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 2, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_append(t.coll, &id, theirs, 1, &res, &e), "%s", e.message);
   lt_publish_all(&t, &id);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 2);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 3);
   cr_assert_eq(lt_array_len(doc, "events"), 2);
   bson_destroy(doc);
   lt_events_destroy(evs, 2);
   lt_events_destroy(theirs, 1);
}

/* Applied and cleared, then more commits than recentCommits keeps, cleared too: nothing in
 * the entity tells "stored" from "another change won", so the retry says unknown again and,
 * above all, does not store the events a second time. */
Test(outcome, retry_after_recent_commits_rolled_over_reports_unknown_and_writes_nothing)
{
   bson_value_t id = lt_str_id("rolled-over");
   outbox_event_t *evs[1], *theirs[8];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   create_entity(&id);
   lt_events_new(evs, 1, "t.ours");
   lt_events_new(theirs, 8, "t.theirs");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, &res, &e));
   assert_unknown(&e);
   for (int i = 0; i < 8; i++) {
      cr_assert(outbox_collection_append(t.coll, &id, theirs + i, 1, &res, &e), "%s", e.message);
   }
   lt_publish_all(&t, &id);
   before = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(before, "eventSeq"), 9);
   cr_assert_eq(lt_array_len(before, "recentCommits"), 8);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, &res, &e));
   assert_unknown(&e);
   cr_assert(strstr(e.message, "published and cleared"), "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   lt_events_destroy(evs, 1);
   lt_events_destroy(theirs, 8);
}

/* The same for a create: unknown, then the retry finds the entity with its events. */
Test(outcome, create_unknown_then_retry_finds_it)
{
   bson_value_t id = lt_str_id("created");
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;

   lt_events_new(evs, 2, "t.created");
   fail_next("insert", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_create(t.coll, &id, NULL, evs, 2, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 2, &res, &e), "%" PRIu32 " %s",
             e.code, e.message);
   cr_assert_eq(res.version, 1);
   cr_assert_eq(res.last_seq, 2);
   assert_stored_once(&id, 1, evs, 2);
   lt_events_destroy(evs, 2);
}

/* The attempt was not stored and another writer's commit took the seqs it was to get (still
 * pending: the relay is behind): the retry sees that slot taken and commits the events as new,
 * once. With an expected version the same retry is a plain conflict. */
Test(outcome, slot_taken_by_another_commit_then_retry_commits_as_new)
{
   bson_value_t id = lt_str_id("taken");
   outbox_event_t *evs[2], *theirs[2];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create_entity(&id);
   lt_events_new(evs, 2, "t.ours");
   lt_events_new(theirs, 2, "t.theirs");
   fail_next("update", 2, DROPPED);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 2, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_append(t.coll, &id, theirs, 1, &res, &e), "%s", e.message);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 2);
   cr_assert_eq(res.last_seq, 3);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 3);
   cr_assert_eq(lt_array_len(doc, "events"), 3);
   bson_destroy(doc);
   lt_events_destroy(evs, 2);

   lt_events_new(evs, 1, "t.ours");
   fail_next("update", 2, DROPPED);
   cr_assert_not(outbox_collection_update(t.coll, &id, 3, NULL, evs, 1, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_update(t.coll, &id, 3, NULL, theirs + 1, 1, &res, &e), "%s",
             e.message);
   cr_assert_not(outbox_collection_update(t.coll, &id, 3, NULL, evs, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT, "%" PRIu32 " %s", e.code, e.message);
   cr_assert_eq(res.version, 4);
   lt_events_destroy(evs, 1);
   lt_events_destroy(theirs, 2);
}

/* The retry's own read fails: the earlier attempt's outcome is still unknown, and a later
 * retry still recognizes it. */
Test(outcome, retry_whose_read_fails_is_still_unknown)
{
   bson_value_t id = lt_str_id("read-fails");
   outbox_event_t *evs[1];
   outbox_commit_t res;
   bson_error_t e;

   create_entity(&id);
   lt_events_new(evs, 1, "t.appended");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, &res, &e));
   assert_unknown(&e);
   fail_next("find", 2, DROPPED);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, &res, &e));
   assert_unknown(&e);
   cr_assert(outbox_collection_append(t.coll, &id, evs, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 1);
   assert_stored_once(&id, 2, evs, 1);
   lt_events_destroy(evs, 1);
}

/* The URI of this suite asks for w:1: every commit and its retries still go out with
 * w: "majority" (an acknowledged w:1 commit could be rolled back). */
Test(outcome, uri_w1_is_not_used)
{
   bson_value_t id = lt_str_id("uri-w1");
   outbox_event_t *evs[1];
   bson_error_t e;

   lt_events_new(evs, 1, "t.created");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, NULL, &e), "%s", e.message);
   lt_events_destroy(evs, 1);
   lt_events_new(evs, 1, "t.appended");
   fail_next("update", 1, WTIMEOUT);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, NULL, &e));
   cr_assert(outbox_collection_append(t.coll, &id, evs, 1, NULL, &e), "%s", e.message);
   cr_assert(outbox_collection_update(t.coll, &id, 2, NULL, NULL, 0, NULL, &e), "%s", e.message);
   cr_assert_eq(majority_writes, 3);
   cr_assert_eq(other_writes, 0);
   lt_events_destroy(evs, 1);
}
