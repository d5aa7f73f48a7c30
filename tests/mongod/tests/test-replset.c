/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A replica set of three members (test-mongod --members 3 --election-timeout-ms 500), seen
 * by libmongoc: one seed finds every member, each member's hello answers as that member, a
 * secondary refuses writes, and a stepdown (also an election after a forced one, freeze and
 * stepUp) moves the primary, which the client follows, retrying a retryable write once.
 * The tests change who is primary, so they run one at a time (CRITERION_JOBS=1) and find
 * the primary afresh. Against a real server they need a set of three members.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

Test(replset, one_seed_discovers_every_member)
{
   md_rs_members_t m;
   md_rs_members(&m);
   mongoc_client_t *client = md_test_client("rs-discover", true);
   bson_error_t error;
   mongoc_server_description_t *sd = mongoc_client_select_server(client, true, NULL, &error);
   cr_assert_not_null(sd, "no primary: %s", error.message);
   cr_assert_str_eq(mongoc_server_description_host(sd)->host_and_port, m.host[m.primary]);
   mongoc_server_description_destroy(sd);
   size_t n;
   mongoc_server_description_t **all = mongoc_client_get_server_descriptions(client, &n);
   int primaries = 0, secondaries = 0;
   for (size_t i = 0; i < n; i++) {
      const char *type = mongoc_server_description_type(all[i]);
      primaries += strcmp(type, "RSPrimary") == 0;
      secondaries += strcmp(type, "RSSecondary") == 0;
   }
   cr_assert_eq(n, MD_RS_MEMBERS, "the client knows %zu servers", n);
   cr_assert_eq(primaries, 1);
   cr_assert_eq(secondaries, MD_RS_MEMBERS - 1);
   mongoc_server_descriptions_destroy_all(all, n);
   mongoc_client_destroy(client);
}

Test(replset, hello_answers_as_each_member)
{
   md_rs_members_t m;
   md_rs_members(&m);
   cr_assert_geq(m.primary, 0);
   bson_oid_t process_ids[MD_RS_MEMBERS];
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      bson_t r;
      bson_iter_t it;
      md_rs_hello(m.host[i], &r);
      cr_assert(bson_iter_init_find(&it, &r, "me") && BSON_ITER_HOLDS_UTF8(&it));
      cr_assert_str_eq(bson_iter_utf8(&it, NULL), m.host[i]);
      cr_assert(bson_iter_init_find(&it, &r, "primary") && BSON_ITER_HOLDS_UTF8(&it));
      cr_assert_str_eq(bson_iter_utf8(&it, NULL), m.host[m.primary]);
      md_test_assert_json(&r, "setName", "\"rs0\"");
      cr_assert_eq(md_rs_flag(&r, "isWritablePrimary"), i == m.primary);
      cr_assert_eq(md_rs_flag(&r, "secondary"), i != m.primary);
      /* electionId only from the primary (fillHelloForReplSet). */
      cr_assert_eq(bson_iter_init_find(&it, &r, "electionId"), i == m.primary);
      cr_assert(bson_iter_init(&it, &r) &&
                bson_iter_find_descendant(&it, "topologyVersion.processId", &it));
      bson_oid_copy(bson_iter_oid(&it), &process_ids[i]);
      for (int j = 0; j < i; j++) {
         cr_assert(!bson_oid_equal(&process_ids[i], &process_ids[j]),
                   "members %d and %d share a processId", i, j);
      }
      bson_destroy(&r);
   }
}

Test(replset, secondary_refuses_writes_as_6_0)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *secondary = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   mongoc_client_t *client = md_rs_direct(secondary);
   bson_t reply;
   bson_error_t error;
   bson_t *cmd = BCON_NEW("insert", "refused", "documents", "[", "{", "x", BCON_INT32(1), "}", "]");
   bool ok = mongoc_client_write_command_with_opts(client, "mdtest", cmd, NULL, &reply, &error);
   cr_assert(!ok, "a secondary accepted a write");
   cr_assert_eq(error.code, 10107, "code %u: %s", error.code, error.message);
   cr_assert_str_eq(error.message, "not primary");
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, &reply, "topologyVersion"), "no topologyVersion");
   bson_destroy(&reply);
   bson_destroy(cmd);
   /* Reads with a secondary read preference are served. */
   mongoc_read_prefs_t *rp = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   cmd = BCON_NEW("find", "refused", "filter", "{", "}");
   ok = mongoc_client_read_command_with_opts(client, "mdtest", cmd, rp, NULL, &reply, &error);
   cr_assert(ok, "read on a secondary: %s", error.message);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_read_prefs_destroy(rp);
   mongoc_client_destroy(client);
}

typedef struct {
   int inserts_started, inserts_failed, inserts_succeeded;
   uint32_t first_error;
   char failed_on[256], succeeded_on[256];
} apm_log_t;

static void
on_started(const mongoc_apm_command_started_t *e)
{
   apm_log_t *log = mongoc_apm_command_started_get_context(e);
   log->inserts_started += strcmp(mongoc_apm_command_started_get_command_name(e), "insert") == 0;
}

static void
on_failed(const mongoc_apm_command_failed_t *e)
{
   apm_log_t *log = mongoc_apm_command_failed_get_context(e);
   if (strcmp(mongoc_apm_command_failed_get_command_name(e), "insert") == 0 &&
       log->inserts_failed++ == 0) {
      bson_error_t error;
      mongoc_apm_command_failed_get_error(e, &error);
      log->first_error = error.code;
      bson_strncpy(log->failed_on, mongoc_apm_command_failed_get_host(e)->host_and_port,
                   sizeof log->failed_on);
   }
}

static void
on_succeeded(const mongoc_apm_command_succeeded_t *e)
{
   apm_log_t *log = mongoc_apm_command_succeeded_get_context(e);
   if (strcmp(mongoc_apm_command_succeeded_get_command_name(e), "insert") == 0) {
      log->inserts_succeeded++;
      bson_strncpy(log->succeeded_on, mongoc_apm_command_succeeded_get_host(e)->host_and_port,
                   sizeof log->succeeded_on);
   }
}

static void *
step_down_later(void *arg)
{
   const char *host = arg;
   bson_t reply;
   bson_error_t error;
   usleep(300 * 1000); /* while the insert is held by blockConnection */
   bool ok = md_rs_admin(
      host, BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs", BCON_INT32(0)),
      &reply, &error);
   bson_destroy(&reply);
   return ok ? arg : NULL;
}

Test(replset, client_follows_stepdown_and_retries_the_write_once)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *old_primary = m.host[m.primary];
   apm_log_t log = {0};
   mongoc_client_t *client = md_test_client("rs-follow", true);
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_started_cb(cbs, on_started);
   mongoc_apm_set_command_failed_cb(cbs, on_failed);
   mongoc_apm_set_command_succeeded_cb(cbs, on_succeeded);
   mongoc_client_set_apm_callbacks(client, cbs, &log);
   char *name = md_test_name("follow");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
   /* Hold the next insert on the primary while it steps down: it then fails there with
    * 10107 and RetryableWriteError, and the driver retries it on the new primary. */
   bson_t reply;
   cr_assert(md_rs_admin(old_primary,
                         BCON_NEW("configureFailPoint", "failCommand", "mode", "{", "times",
                                  BCON_INT32(1), "}", "data", "{", "failCommands", "[", "insert",
                                  "]", "blockConnection", BCON_BOOL(true), "blockTimeMS",
                                  BCON_INT32(1000), "appName", "rs-follow", "}"),
                         &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   memset(&log, 0, sizeof log);
   pthread_t thread;
   pthread_create(&thread, NULL, step_down_later, (void *)old_primary);
   doc = BCON_NEW("_id", BCON_INT32(2));
   bool ok = mongoc_collection_insert_one(coll, doc, NULL, NULL, &error);
   void *stepped;
   pthread_join(thread, &stepped);
   cr_assert_not_null(stepped, "replSetStepDown failed");
   cr_assert(ok, "the retryable write was not retried onto the new primary: %s", error.message);
   cr_assert_eq(log.inserts_started, 2, "%d insert attempts", log.inserts_started);
   cr_assert_eq(log.first_error, 10107);
   cr_assert_str_eq(log.failed_on, old_primary);
   cr_assert_str_neq(log.succeeded_on, old_primary);
   int64_t n = mongoc_collection_count_documents(coll, doc, NULL, NULL, NULL, &error);
   cr_assert_eq(n, 1, "the write ran %lld times", (long long)n);
   md_rs_members(&m);
   cr_assert_str_eq(m.host[m.primary], log.succeeded_on);
   md_rs_freeze(old_primary, 0); /* electable again for the next tests */
   bson_destroy(doc);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   mongoc_apm_callbacks_destroy(cbs);
}

typedef struct {
   const char *host;
   bson_oid_t process_id;
   int64_t counter;
   int64_t elapsed_ms;
   bson_t reply;
} await_t;

static void *
awaitable_hello(void *arg)
{
   await_t *a = arg;
   mongoc_client_t *client = md_rs_direct(a->host);
   bson_error_t error;
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1), "topologyVersion", "{", "processId",
                          BCON_OID(&a->process_id), "counter", BCON_INT64(a->counter), "}",
                          "maxAwaitTimeMS", BCON_INT64(10000));
   int64_t start = bson_get_monotonic_time();
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, &a->reply, &error);
   a->elapsed_ms = (bson_get_monotonic_time() - start) / 1000;
   bson_destroy(cmd);
   mongoc_client_destroy(client);
   return ok ? a : NULL;
}

Test(replset, stepdown_wakes_awaitable_hello_with_a_higher_counter)
{
   md_rs_members_t m;
   md_rs_members(&m);
   await_t a = {.host = m.host[(m.primary + 1) % MD_RS_MEMBERS]};
   bson_t r;
   bson_iter_t it;
   md_rs_hello(a.host, &r);
   cr_assert(bson_iter_init(&it, &r) &&
             bson_iter_find_descendant(&it, "topologyVersion.processId", &it));
   bson_oid_copy(bson_iter_oid(&it), &a.process_id);
   cr_assert(bson_iter_init(&it, &r) &&
             bson_iter_find_descendant(&it, "topologyVersion.counter", &it));
   a.counter = bson_iter_as_int64(&it);
   bson_destroy(&r);
   pthread_t thread;
   pthread_create(&thread, NULL, awaitable_hello, &a);
   usleep(300 * 1000);
   bson_error_t error;
   cr_assert(md_rs_admin(m.host[m.primary],
                         BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs",
                                  BCON_INT32(0)),
                         &r, &error),
             "%s", error.message);
   bson_destroy(&r);
   void *done;
   pthread_join(thread, &done);
   cr_assert_not_null(done, "awaitable hello failed");
   cr_assert_lt(a.elapsed_ms, 3000, "the hello waited %lld ms", (long long)a.elapsed_ms);
   cr_assert(bson_iter_init(&it, &a.reply) &&
             bson_iter_find_descendant(&it, "topologyVersion.counter", &it));
   cr_assert_gt(bson_iter_as_int64(&it), a.counter);
   cr_assert(bson_iter_init_find(&it, &a.reply, "primary"));
   cr_assert_str_neq(bson_iter_utf8(&it, NULL), m.host[m.primary]);
   md_rs_freeze(m.host[m.primary], 0);
   bson_destroy(&a.reply);
}

Test(replset, freeze_and_step_up)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int p = m.primary, s = (p + 1) % MD_RS_MEMBERS;
   bson_t reply;
   bson_error_t error;
   cr_assert(!md_rs_admin(m.host[p], BCON_NEW("replSetFreeze", BCON_INT32(30)), &reply, &error));
   cr_assert_eq(error.code, 95);
   cr_assert_str_eq(error.message, "Cannot freeze node when primary or running for election, "
                                   "state: Primary");
   bson_destroy(&reply);
   md_rs_freeze(m.host[s], 30);
   cr_assert(!md_rs_admin(m.host[s], BCON_NEW("replSetStepUp", BCON_INT32(1)), &reply, &error));
   cr_assert_eq(error.code, 125, "%s", error.message);
   bson_destroy(&reply);
   md_rs_freeze(m.host[s], 0);
   cr_assert(md_rs_admin(m.host[s], BCON_NEW("replSetStepUp", BCON_INT32(1)), &reply, &error), "%s",
             error.message);
   bson_destroy(&reply);
   md_rs_members(&m);
   cr_assert_eq(m.primary, s);
}

Test(replset, stepdown_waits_for_an_electable_secondary_unless_forced)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int p = m.primary;
   bson_t reply;
   bson_error_t error;
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      if (i != p) {
         md_rs_freeze(m.host[i], 60);
      }
   }
   int64_t start = bson_get_monotonic_time();
   cr_assert(!md_rs_admin(
      m.host[p],
      BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs", BCON_INT32(1)),
      &reply, &error));
   cr_assert_eq(error.code, 262, "%s", error.message);
   cr_assert_geq((bson_get_monotonic_time() - start) / 1000, 900, "no catch-up wait");
   bson_destroy(&reply);
   cr_assert(!md_rs_admin(m.host[(p + 1) % MD_RS_MEMBERS],
                          BCON_NEW("replSetStepDown", BCON_INT32(60)), &reply, &error));
   cr_assert_eq(error.code, 10107, "%u %s", error.code, error.message);
   cr_assert_str_eq(error.message, "not primary so can't step down");
   bson_destroy(&reply);
   cr_assert(md_rs_admin(m.host[p],
                         BCON_NEW("replSetStepDown", BCON_INT32(30), "force", BCON_BOOL(true)),
                         &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   md_rs_members(&m);
   cr_assert_eq(m.primary, -1, "a frozen member was elected");
   int next = (p + 2) % MD_RS_MEMBERS;
   md_rs_freeze(m.host[next], 0); /* electable: elected after the election timeout */
   cr_assert_eq(md_rs_await_primary(&m), next);
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      if (i != next) {
         md_rs_freeze(m.host[i], 0);
      }
   }
}

/* An open transaction on the primary that steps down is aborted (6.0 aborts unprepared
 * transactions at stepdown): its commit fails wherever the driver sends it. */
Test(replset, stepdown_aborts_open_transactions)
{
   md_rs_members_t m;
   md_rs_members(&m);
   mongoc_client_t *client = md_test_client("rs-txn", true);
   char *name = md_test_name("rstxn");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(0));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
   mongoc_client_session_t *session = mongoc_client_start_session(client, NULL, &error);
   cr_assert_not_null(session, "%s", error.message);
   cr_assert(mongoc_client_session_start_transaction(session, NULL, &error), "%s", error.message);
   bson_t opts = BSON_INITIALIZER;
   cr_assert(mongoc_client_session_append(session, &opts, &error));
   doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, &opts, NULL, &error), "%s", error.message);
   bson_t reply;
   cr_assert(md_rs_admin(m.host[m.primary],
                         BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs",
                                  BCON_INT32(0)),
                         &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   bool ok = mongoc_client_session_commit_transaction(session, &reply, &error);
   cr_assert(!ok, "a transaction open across the stepdown committed");
   bson_destroy(&reply);
   int64_t n = mongoc_collection_count_documents(coll, doc, NULL, NULL, NULL, &error);
   cr_assert_eq(n, 0, "the aborted transaction's write is visible");
   md_rs_freeze(m.host[m.primary], 0);
   bson_destroy(doc);
   bson_destroy(&opts);
   mongoc_client_session_destroy(session);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

typedef struct {
   const char *host, *coll;
   bson_error_t error;
   bool ok;
} blocked_write_t;

static void *
blocked_update(void *arg)
{
   blocked_write_t *w = arg;
   mongoc_client_t *client = md_rs_direct(w->host);
   bson_t *cmd = BCON_NEW("update", w->coll, "updates", "[", "{", "q", "{", "_id", BCON_INT32(1),
                          "}", "u", "{", "$set", "{", "x", BCON_INT32(2), "}", "}", "}", "]");
   bson_t reply;
   w->ok = mongoc_client_write_command_with_opts(client, "mdtest", cmd, NULL, &reply, &w->error);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
   return NULL;
}

/* A write waiting for a transaction's document when its primary steps down is killed with
 * 11602 InterruptedDueToReplStateChange (not retryable here: no txnNumber). */
Test(replset, stepdown_interrupts_a_waiting_write)
{
   md_rs_members_t m;
   md_rs_members(&m);
   mongoc_client_t *client = md_rs_direct(m.host[m.primary]);
   char *name = md_test_name("rswait");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   mongoc_client_session_t *session = mongoc_client_start_session(client, NULL, &error);
   cr_assert(mongoc_client_session_start_transaction(session, NULL, &error), "%s", error.message);
   bson_t opts = BSON_INITIALIZER, reply;
   cr_assert(mongoc_client_session_append(session, &opts, &error));
   bson_t *set = BCON_NEW("$set", "{", "x", BCON_INT32(1), "}");
   cr_assert(mongoc_collection_update_one(coll, doc, set, &opts, NULL, &error), "%s",
             error.message);
   blocked_write_t w = {.host = m.host[m.primary], .coll = name};
   pthread_t thread;
   pthread_create(&thread, NULL, blocked_update, &w);
   usleep(300 * 1000); /* the update now waits for the transaction */
   cr_assert(md_rs_admin(m.host[m.primary],
                         BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs",
                                  BCON_INT32(0)),
                         &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   pthread_join(thread, NULL);
   cr_assert(!w.ok, "the waiting write ran on a former primary");
   cr_assert_eq(w.error.code, 11602, "%u %s", w.error.code, w.error.message);
   cr_assert_str_eq(w.error.message, "operation was interrupted");
   md_rs_freeze(m.host[m.primary], 0);
   bson_destroy(set);
   bson_destroy(doc);
   bson_destroy(&opts);
   mongoc_client_session_destroy(session);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* testMemberFault is a test command: without --enable-test-commands it does not exist. */
Test(replset, fault_command_needs_enable_test_commands)
{
   md_rs_members_t m;
   md_rs_members(&m);
   bson_t reply;
   bson_error_t error;
   cr_assert(!md_rs_admin(m.host[m.primary],
                          BCON_NEW("testMemberFault", m.host[m.primary], "mode", "heal"), &reply,
                          &error));
   cr_assert_eq(error.code, 59, "%u %s", error.code, error.message);
   bson_destroy(&reply);
}
