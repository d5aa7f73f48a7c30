/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Members that fail (test-mongod --members 3 --election-timeout-ms 500
 * --enable-test-commands; testMemberFault): a primary that is gone (connections refused)
 * or stopped (connections hang) is replaced after the election timeout and libmongoc
 * follows, retrying a write once; a primary that cannot see a majority steps down; a healed
 * member comes back as a secondary. One test at a time (CRITERION_JOBS=1); each heals
 * what it broke. Skipped against a server without the command (a real set).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

/* md_rs_fault, and `target` marked down for md_rs_members until a "heal". */
static void
fault(const char *via, const char *target, const char *mode)
{
   md_rs_fault(via, target, mode);
   md_rs_mark_down(target, strcmp(mode, "heal") != 0);
}

typedef struct {
   int started;
   char failed_on[256], succeeded_on[256];
} attempts_t;

static void
on_started(const mongoc_apm_command_started_t *e)
{
   attempts_t *a = mongoc_apm_command_started_get_context(e);
   a->started += strcmp(mongoc_apm_command_started_get_command_name(e), "insert") == 0;
}

static void
on_failed(const mongoc_apm_command_failed_t *e)
{
   attempts_t *a = mongoc_apm_command_failed_get_context(e);
   if (strcmp(mongoc_apm_command_failed_get_command_name(e), "insert") == 0) {
      bson_strncpy(a->failed_on, mongoc_apm_command_failed_get_host(e)->host_and_port,
                   sizeof a->failed_on);
   }
}

static void
on_succeeded(const mongoc_apm_command_succeeded_t *e)
{
   attempts_t *a = mongoc_apm_command_succeeded_get_context(e);
   if (strcmp(mongoc_apm_command_succeeded_get_command_name(e), "insert") == 0) {
      bson_strncpy(a->succeeded_on, mongoc_apm_command_succeeded_get_host(e)->host_and_port,
                   sizeof a->succeeded_on);
   }
}

/* The primary fails in `mode`. "refuse": a retryable insert through a replicaSet=rs0
 * client fails once on it (connection reset) and the driver's one retry runs on the member
 * elected after the election timeout. "hang": the attempt times out (a socket timeout does
 * not make the driver give up on its primary, so its retry times out too, as against a
 * stopped mongod); the application's next attempt, once the driver's monitor saw the old
 * primary time out, runs on the new one. Either way the document is written once. */
static void
fail_over(const char *mode)
{
   bool hang = strcmp(mode, "hang") == 0;
   md_rs_members_t m;
   md_rs_members(&m);
   const char *old = m.host[m.primary], *via = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   /* The retry's server selection waits for the election instead of giving up at once. */
   mongoc_client_t *client = md_rs_failover_client("rs-fault", 1000);
   attempts_t a = {0};
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_started_cb(cbs, on_started);
   mongoc_apm_set_command_failed_cb(cbs, on_failed);
   mongoc_apm_set_command_succeeded_cb(cbs, on_succeeded);
   mongoc_client_set_apm_callbacks(client, cbs, &a);
   char *name = md_test_name("fault");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
   fault(via, old, mode);
   memset(&a, 0, sizeof a);
   doc = BCON_NEW("_id", BCON_INT32(2));
   bool ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
   for (int i = 0; hang && !ok && i < 40; i++) {
      cr_assert_str_eq(a.failed_on, old, "failed on %s: %s", a.failed_on, error.message);
      usleep(250 * 1000);
      ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
   }
   cr_assert(ok, "the write did not fail over: %s", error.message);
   cr_assert(hang || a.started == 2, "%d attempts", a.started);
   cr_assert_str_eq(a.failed_on, old);
   cr_assert_str_neq(a.succeeded_on, old);
   cr_assert_eq(md_rs_await_primary(&m) >= 0, true);
   cr_assert_str_eq(m.host[m.primary], a.succeeded_on);
   fault(via, old, "heal");
   bson_t hello;
   md_rs_hello(old, &hello);
   cr_assert(md_rs_flag(&hello, "secondary"), "a healed former primary is not a secondary");
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, &hello, "primary") && BSON_ITER_HOLDS_UTF8(&it));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), a.succeeded_on);
   bson_destroy(&hello);
   int64_t n = mongoc_collection_count_documents(coll, doc, NULL, NULL, NULL, &error);
   cr_assert_eq(n, 1, "the write ran %lld times", (long long)n);
   bson_destroy(doc);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   mongoc_apm_callbacks_destroy(cbs);
}

Test(faults, refused_primary_is_replaced_and_the_write_retried_once, .fini = md_rs_heal_all)
{
   fail_over("refuse");
}

Test(faults, hung_primary_is_replaced_and_the_write_goes_to_the_new_one, .fini = md_rs_heal_all)
{
   fail_over("hang");
}

Test(faults, refused_member_refuses_connections, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *target = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   fault(m.host[m.primary], target, "refuse");
   mongoc_client_t *client = md_rs_direct(target);
   bson_t *ping = BCON_NEW("ping", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;
   cr_assert(!mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &error),
             "a refusing member answered");
   bson_destroy(&reply);
   mongoc_client_destroy(client);
   fault(m.host[m.primary], target, "heal");
   client = md_rs_direct(target);
   cr_assert(mongoc_client_command_simple(client, "admin", ping, NULL, &reply, &error),
             "a healed member does not answer: %s", error.message);
   bson_destroy(&reply);
   bson_destroy(ping);
   mongoc_client_destroy(client);
}

Test(faults, primary_without_a_majority_steps_down, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int p = m.primary;
   const char *s1 = m.host[(p + 1) % MD_RS_MEMBERS], *s2 = m.host[(p + 2) % MD_RS_MEMBERS];
   fault(m.host[p], s1, "refuse");
   fault(m.host[p], s2, "refuse");
   bson_t hello;
   bool stepped_down = false;
   for (int i = 0; i < 60 && !stepped_down; i++) {
      usleep(50 * 1000);
      md_rs_hello(m.host[p], &hello);
      stepped_down = !md_rs_flag(&hello, "isWritablePrimary");
      if (stepped_down) {
         bson_iter_t it;
         cr_assert(!bson_iter_init_find(&it, &hello, "primary"), "a primary is named");
      }
      bson_destroy(&hello);
   }
   cr_assert(stepped_down, "the primary kept its role without a majority");
   fault(m.host[p], s1, "heal");
   cr_assert_geq(md_rs_await_primary(&m), 0);
   fault(m.host[m.primary], s2, "heal");
}

static bool
insert_w(mongoc_collection_t *coll, int id, const char *w, int wtimeout, bson_t *reply,
         bson_error_t *error)
{
   bson_t *doc = BCON_NEW("_id", BCON_INT32(id));
   bson_t *opts =
      BCON_NEW("writeConcern", "{", "w", BCON_UTF8(w), "wtimeout", BCON_INT32(wtimeout), "}");
   bool ok = mongoc_collection_insert_one(coll, doc, opts, reply, error);
   bson_destroy(doc);
   bson_destroy(opts);
   return ok;
}

/* w: "majority" waits for a majority to hold the write; past wtimeout it answers 6.0's
 * writeConcernError 64 and the write stays. */
Test(faults, majority_write_waits_for_a_majority, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s1 = m.host[(m.primary + 1) % MD_RS_MEMBERS],
              *s2 = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   md_rs_fault_ms(p, s1, "pause", 0);
   md_rs_fault_ms(p, s2, "pause", 0);
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("wmaj");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t reply;
   bson_error_t error;
   int64_t start = bson_get_monotonic_time();
   cr_assert(!insert_w(coll, 1, "majority", 300, &reply, &error), "w: majority was satisfied");
   cr_assert_geq((bson_get_monotonic_time() - start) / 1000, 280, "no wait for wtimeout");
   cr_assert_eq(error.code, 64, "%u %s", error.code, error.message);
   md_test_assert_json(&reply, "writeConcernErrors.0.codeName", "\"WriteConcernFailed\"");
   md_test_assert_json(&reply, "writeConcernErrors.0.errInfo.wtimeout", "true");
   bson_destroy(&reply);
   bson_t *one = BCON_NEW("_id", BCON_INT32(1));
   cr_assert_eq(mongoc_collection_count_documents(coll, one, NULL, NULL, NULL, &error), 1,
                "the write did not stay");
   md_rs_fault_ms(p, s1, "resume", 0);
   cr_assert(insert_w(coll, 2, "majority", 5000, &reply, &error), "%s", error.message);
   bson_destroy(&reply);
   md_rs_fault_ms(p, s2, "resume", 0);
   bson_destroy(one);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* A change stream shows a write only once a majority holds it, as MongoDB's. */
Test(faults, change_stream_shows_only_majority_committed_writes, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s1 = m.host[(m.primary + 1) % MD_RS_MEMBERS],
              *s2 = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("csmaj");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT64(300));
   bson_t *pipeline = bson_new();
   mongoc_change_stream_t *stream = mongoc_collection_watch(coll, pipeline, opts);
   const bson_t *event;
   bson_error_t error;
   md_rs_fault_ms(p, s1, "pause", 0);
   md_rs_fault_ms(p, s2, "pause", 0);
   bson_t reply;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, &reply, &error), "%s", error.message);
   bson_destroy(doc);
   bson_destroy(&reply);
   cr_assert(!mongoc_change_stream_next(stream, &event), "an uncommitted write was shown");
   cr_assert(!mongoc_change_stream_error_document(stream, &error, NULL), "%s", error.message);
   md_rs_fault_ms(p, s2, "resume", 0);
   bool got = false;
   for (int i = 0; i < 10 && !got; i++) {
      got = mongoc_change_stream_next(stream, &event);
   }
   cr_assert(got, "the committed write never came");
   md_test_assert_json(event, "documentKey._id", "1");
   md_rs_fault_ms(p, s1, "resume", 0);
   mongoc_change_stream_destroy(stream);
   bson_destroy(pipeline);
   bson_destroy(opts);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* With a replication lag, w: "majority" waits about as long. */
Test(faults, replication_lag_delays_majority_writes, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary];
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_fault_ms(p, m.host[(m.primary + i) % MD_RS_MEMBERS], "lag", 400);
   }
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("lag");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t reply;
   bson_error_t error;
   int64_t start = bson_get_monotonic_time();
   cr_assert(insert_w(coll, 1, "majority", 5000, &reply, &error), "%s", error.message);
   int64_t ms = (bson_get_monotonic_time() - start) / 1000;
   cr_assert_geq(ms, 350, "a majority write with 400 ms of lag took %lld ms", (long long)ms);
   cr_assert_lt(ms, 3000);
   bson_destroy(&reply);
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_fault_ms(p, m.host[(m.primary + i) % MD_RS_MEMBERS], "lag", -1);
   }
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* An election goes to the member holding the newest write, not the next in line. */
Test(faults, election_prefers_the_most_up_to_date_member, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int p = m.primary, behind = (p + 1) % MD_RS_MEMBERS, ahead = (p + 2) % MD_RS_MEMBERS;
   md_rs_fault_ms(m.host[p], m.host[behind], "pause", 0);
   mongoc_client_t *client = md_rs_direct(m.host[p]);
   char *name = md_test_name("newest");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t reply;
   bson_error_t error;
   cr_assert(insert_w(coll, 1, "majority", 5000, &reply, &error), "%s", error.message);
   bson_destroy(&reply);
   cr_assert(md_rs_admin(m.host[p],
                         BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs",
                                  BCON_INT32(0)),
                         &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   md_rs_find_primary(&m);
   cr_assert_eq(m.primary, ahead, "member %d was elected, not the up-to-date %d", m.primary, ahead);
   md_rs_fault_ms(m.host[ahead], m.host[behind], "resume", 0);
   md_rs_freeze(m.host[p], 0);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* A change stream whose primary goes away resumes on the new primary (libmongoc resumes
 * after the network error) without a missed or repeated event. */
Test(faults, change_stream_resumes_on_the_new_primary, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *old = m.host[m.primary], *via = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   mongoc_client_t *client = md_rs_failover_client("rs-stream", 0);
   char *name = md_test_name("csfail");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT64(200));
   bson_t *pipeline = bson_new();
   mongoc_change_stream_t *stream = mongoc_collection_watch(coll, pipeline, opts);
   bson_error_t error;
   const bson_t *event;
   int seen[4] = {0};
   for (int id = 1; id <= 3; id++) {
      if (id == 2) {
         fault(via, old, "refuse");
      }
      bson_t *doc = BCON_NEW("_id", BCON_INT32(id));
      cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "insert %d: %s", id,
                error.message);
      bson_destroy(doc);
      bool got = false;
      for (int i = 0; i < 25 && !got; i++) {
         got = mongoc_change_stream_next(stream, &event);
         cr_assert(got || !mongoc_change_stream_error_document(stream, &error, NULL),
                   "the stream failed instead of resuming: %s", error.message);
      }
      cr_assert(got, "event %d never came", id);
      bson_iter_t it;
      cr_assert(bson_iter_init(&it, event) &&
                bson_iter_find_descendant(&it, "documentKey._id", &it));
      int key = bson_iter_int32(&it);
      cr_assert_eq(key, id, "expected event %d, got %d", id, key);
      seen[key]++;
   }
   cr_assert(seen[1] == 1 && seen[2] == 1 && seen[3] == 1);
   cr_assert(!mongoc_change_stream_next(stream, &event), "an event came twice");
   mongoc_change_stream_destroy(stream);
   bson_destroy(pipeline);
   bson_destroy(opts);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

static int64_t
date_at(const bson_t *doc, const char *path)
{
   bson_iter_t it;
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
                BSON_ITER_HOLDS_DATE_TIME(&it),
             "no date at %s", path);
   return bson_iter_date_time(&it);
}

static int64_t
real_ms(void)
{
   return (int64_t)time(NULL) * 1000;
}

/* A member whose clock is an hour fast stamps that time: hello's localTime, $$NOW, the
 * wallTime of the changes it writes; the other members keep the right time. */
Test(faults, clock_offset_moves_what_a_member_stamps, .fini = md_rs_heal_all)
{
   const int64_t hour = 3600 * 1000;
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   md_rs_fault_ms(p, p, "clock", (int)hour);
   bson_t hello;
   md_rs_hello(p, &hello);
   cr_assert_geq(date_at(&hello, "localTime") - real_ms(), hour - 60000);
   bson_destroy(&hello);
   md_rs_hello(s, &hello);
   cr_assert_lt(llabs(date_at(&hello, "localTime") - real_ms()), 60000);
   bson_destroy(&hello);
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("clock");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_t *pipeline = bson_new();
   mongoc_change_stream_t *stream = mongoc_collection_watch(coll, pipeline, NULL);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   const bson_t *event;
   bool got = false;
   for (int i = 0; i < 10 && !got; i++) {
      got = mongoc_change_stream_next(stream, &event);
   }
   cr_assert(got, "no change event");
   cr_assert_geq(date_at(event, "wallTime") - real_ms(), hour - 60000);
   bson_t *agg = BCON_NEW("pipeline", "[", "{", "$project", "{", "now", "$$NOW", "}", "}", "]");
   mongoc_cursor_t *cursor = mongoc_collection_aggregate(coll, MONGOC_QUERY_NONE, agg, NULL, NULL);
   const bson_t *row;
   cr_assert(mongoc_cursor_next(cursor, &row), "no result");
   cr_assert_geq(date_at(row, "now") - real_ms(), hour - 60000);
   mongoc_cursor_destroy(cursor);
   bson_destroy(agg);
   md_rs_fault_ms(p, p, "clock", 0);
   mongoc_change_stream_destroy(stream);
   bson_destroy(pipeline);
   bson_destroy(doc);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

static uint64_t
op_ts(const bson_t *doc, const char *path)
{
   bson_iter_t it;
   uint32_t t, i;
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it) &&
                BSON_ITER_HOLDS_TIMESTAMP(&it),
             "no timestamp at %s", path);
   bson_iter_timestamp(&it, &t, &i);
   return (uint64_t)t << 32 | i;
}

/* A paused secondary's hello (lastWrite) and replSetGetStatus (optime) show it behind the
 * primary until it resumes. */
Test(faults, lagging_secondary_reports_its_own_position, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int s = (m.primary + 1) % MD_RS_MEMBERS;
   const char *p = m.host[m.primary];
   md_rs_fault_ms(p, m.host[s], "pause", 0);
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("behind");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_t hp, hs, status;
   md_rs_hello(p, &hp);
   md_rs_hello(m.host[s], &hs);
   cr_assert_lt(op_ts(&hs, "lastWrite.opTime.ts"), op_ts(&hp, "lastWrite.opTime.ts"));
   cr_assert_eq(op_ts(&hs, "lastWrite.majorityOpTime.ts"), op_ts(&hp, "lastWrite.opTime.ts"),
                "the third member holds the write");
   cr_assert(md_rs_admin(p, BCON_NEW("replSetGetStatus", BCON_INT32(1)), &status, &error), "%s",
             error.message);
   char ps[32], ss[32];
   snprintf(ps, sizeof ps, "members.%d.optime.ts", m.primary);
   snprintf(ss, sizeof ss, "members.%d.optime.ts", s);
   cr_assert_lt(op_ts(&status, ss), op_ts(&status, ps));
   bson_destroy(&status);
   bson_destroy(&hs);
   md_rs_fault_ms(p, m.host[s], "resume", 0);
   md_rs_hello(m.host[s], &hs);
   cr_assert_eq(op_ts(&hs, "lastWrite.opTime.ts"), op_ts(&hp, "lastWrite.opTime.ts"));
   bson_destroy(&hs);
   bson_destroy(&hp);
   bson_destroy(doc);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}
