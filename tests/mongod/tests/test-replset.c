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

#include "tests/test-util.h"

#define N_MEMBERS 3

typedef struct {
   char host[N_MEMBERS][256];
   int primary; /* index into host, -1 if none */
} members_t;

static mongoc_client_t *
direct(const char *host)
{
   char *uri_str = bson_strdup_printf("mongodb://%s/?directConnection=true&appname=rs-direct"
                                      "&serverSelectionTimeoutMS=5000",
                                      host);
   mongoc_client_t *client = mongoc_client_new(uri_str);
   cr_assert_not_null(client, "bad URI %s", uri_str);
   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   bson_free(uri_str);
   return client;
}

static void
hello_of(const char *host, bson_t *reply)
{
   mongoc_client_t *client = direct(host);
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   md_test_admin(client, cmd, reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

static bool
flag(const bson_t *doc, const char *field)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, field) && bson_iter_as_bool(&it);
}

/* The members the seed names, and which of them says it is primary now. */
static void
members(members_t *m)
{
   mongoc_client_t *seed = md_test_client(NULL, false);
   bson_t reply, sub;
   bson_iter_t it, h;
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   md_test_admin(seed, cmd, &reply);
   int n = 0;
   if (bson_iter_init_find(&it, &reply, "hosts") && bson_iter_recurse(&it, &h)) {
      while (bson_iter_next(&h) && n < N_MEMBERS) {
         bson_strncpy(m->host[n++], bson_iter_utf8(&h, NULL), sizeof m->host[0]);
      }
   }
   if (n < N_MEMBERS) {
      cr_skip_test("needs a replica set of %d members (test-mongod --members 3)", N_MEMBERS);
   }
   m->primary = -1;
   for (int i = 0; i < N_MEMBERS; i++) {
      hello_of(m->host[i], &sub);
      if (flag(&sub, "isWritablePrimary")) {
         m->primary = i;
      }
      bson_destroy(&sub);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(seed);
}

static bool
admin_on(const char *host, bson_t *cmd, bson_t *reply, bson_error_t *error)
{
   mongoc_client_t *client = direct(host);
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, reply, error);
   mongoc_client_destroy(client);
   bson_destroy(cmd);
   return ok;
}

static void
freeze(const char *host, int secs)
{
   bson_t reply;
   bson_error_t error;
   bool ok = admin_on(host, BCON_NEW("replSetFreeze", BCON_INT32(secs)), &reply, &error);
   cr_assert(ok, "replSetFreeze %d on %s: %s", secs, host, error.message);
   bson_destroy(&reply);
}

/* Waits up to 5 s for a primary; returns its index. */
static int
await_primary(members_t *m)
{
   for (int i = 0; i < 100; i++) {
      members(m);
      if (m->primary >= 0) {
         return m->primary;
      }
      usleep(50 * 1000);
   }
   cr_assert_fail("no primary elected within 5 s");
   return -1;
}

Test(replset, one_seed_discovers_every_member)
{
   members_t m;
   members(&m);
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
   cr_assert_eq(n, N_MEMBERS, "the client knows %zu servers", n);
   cr_assert_eq(primaries, 1);
   cr_assert_eq(secondaries, N_MEMBERS - 1);
   mongoc_server_descriptions_destroy_all(all, n);
   mongoc_client_destroy(client);
}

Test(replset, hello_answers_as_each_member)
{
   members_t m;
   members(&m);
   cr_assert_geq(m.primary, 0);
   bson_oid_t process_ids[N_MEMBERS];
   for (int i = 0; i < N_MEMBERS; i++) {
      bson_t r;
      bson_iter_t it;
      hello_of(m.host[i], &r);
      cr_assert(bson_iter_init_find(&it, &r, "me") && BSON_ITER_HOLDS_UTF8(&it));
      cr_assert_str_eq(bson_iter_utf8(&it, NULL), m.host[i]);
      cr_assert(bson_iter_init_find(&it, &r, "primary") && BSON_ITER_HOLDS_UTF8(&it));
      cr_assert_str_eq(bson_iter_utf8(&it, NULL), m.host[m.primary]);
      md_test_assert_json(&r, "setName", "\"rs0\"");
      cr_assert_eq(flag(&r, "isWritablePrimary"), i == m.primary);
      cr_assert_eq(flag(&r, "secondary"), i != m.primary);
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
   members_t m;
   members(&m);
   const char *secondary = m.host[(m.primary + 1) % N_MEMBERS];
   mongoc_client_t *client = direct(secondary);
   bson_t reply;
   bson_error_t error;
   bson_t *cmd = BCON_NEW("insert", "refused", "documents", "[", "{", "x", BCON_INT32(1), "}",
                          "]");
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
   bool ok = admin_on(host, BCON_NEW("replSetStepDown", BCON_INT32(5),
                                     "secondaryCatchUpPeriodSecs", BCON_INT32(0)),
                      &reply, &error);
   bson_destroy(&reply);
   return ok ? arg : NULL;
}

Test(replset, client_follows_stepdown_and_retries_the_write_once)
{
   members_t m;
   members(&m);
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
   cr_assert(admin_on(old_primary,
                      BCON_NEW("configureFailPoint", "failCommand", "mode", "{", "times",
                               BCON_INT32(1), "}", "data", "{", "failCommands", "[", "insert",
                               "]", "blockConnection", BCON_BOOL(true), "blockTimeMS",
                               BCON_INT32(1000), "appName", "rs-follow", "}"),
                      &reply, &error), "%s", error.message);
   bson_destroy(&reply);
   memset(&log, 0, sizeof log);
   pthread_t thread;
   pthread_create(&thread, NULL, step_down_later, (void *) old_primary);
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
   cr_assert_eq(n, 1, "the write ran %lld times", (long long) n);
   members(&m);
   cr_assert_str_eq(m.host[m.primary], log.succeeded_on);
   freeze(old_primary, 0); /* electable again for the next tests */
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
   mongoc_client_t *client = direct(a->host);
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
   members_t m;
   members(&m);
   await_t a = {.host = m.host[(m.primary + 1) % N_MEMBERS]};
   bson_t r;
   bson_iter_t it;
   hello_of(a.host, &r);
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
   cr_assert(admin_on(m.host[m.primary],
                      BCON_NEW("replSetStepDown", BCON_INT32(5), "secondaryCatchUpPeriodSecs",
                               BCON_INT32(0)),
                      &r, &error), "%s", error.message);
   bson_destroy(&r);
   void *done;
   pthread_join(thread, &done);
   cr_assert_not_null(done, "awaitable hello failed");
   cr_assert_lt(a.elapsed_ms, 3000, "the hello waited %lld ms", (long long) a.elapsed_ms);
   cr_assert(bson_iter_init(&it, &a.reply) &&
             bson_iter_find_descendant(&it, "topologyVersion.counter", &it));
   cr_assert_gt(bson_iter_as_int64(&it), a.counter);
   cr_assert(bson_iter_init_find(&it, &a.reply, "primary"));
   cr_assert_str_neq(bson_iter_utf8(&it, NULL), m.host[m.primary]);
   freeze(m.host[m.primary], 0);
   bson_destroy(&a.reply);
}

Test(replset, freeze_and_step_up)
{
   members_t m;
   members(&m);
   int p = m.primary, s = (p + 1) % N_MEMBERS;
   bson_t reply;
   bson_error_t error;
   cr_assert(!admin_on(m.host[p], BCON_NEW("replSetFreeze", BCON_INT32(30)), &reply, &error));
   cr_assert_eq(error.code, 95);
   cr_assert_str_eq(error.message, "Cannot freeze node when primary or running for election, "
                                   "state: Primary");
   bson_destroy(&reply);
   freeze(m.host[s], 30);
   cr_assert(!admin_on(m.host[s], BCON_NEW("replSetStepUp", BCON_INT32(1)), &reply, &error));
   cr_assert_eq(error.code, 125, "%s", error.message);
   bson_destroy(&reply);
   freeze(m.host[s], 0);
   cr_assert(admin_on(m.host[s], BCON_NEW("replSetStepUp", BCON_INT32(1)), &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   members(&m);
   cr_assert_eq(m.primary, s);
}

Test(replset, stepdown_waits_for_an_electable_secondary_unless_forced)
{
   members_t m;
   members(&m);
   int p = m.primary;
   bson_t reply;
   bson_error_t error;
   for (int i = 0; i < N_MEMBERS; i++) {
      if (i != p) {
         freeze(m.host[i], 60);
      }
   }
   int64_t start = bson_get_monotonic_time();
   cr_assert(!admin_on(m.host[p], BCON_NEW("replSetStepDown", BCON_INT32(5),
                                           "secondaryCatchUpPeriodSecs", BCON_INT32(1)),
                       &reply, &error));
   cr_assert_eq(error.code, 262, "%s", error.message);
   cr_assert_geq((bson_get_monotonic_time() - start) / 1000, 900, "no catch-up wait");
   bson_destroy(&reply);
   cr_assert(!admin_on(m.host[(p + 1) % N_MEMBERS], BCON_NEW("replSetStepDown", BCON_INT32(60)),
                       &reply, &error));
   cr_assert_eq(error.code, 10107, "%u %s", error.code, error.message);
   cr_assert_str_eq(error.message, "not primary so can't step down");
   bson_destroy(&reply);
   cr_assert(admin_on(m.host[p], BCON_NEW("replSetStepDown", BCON_INT32(30), "force",
                                          BCON_BOOL(true)),
                      &reply, &error), "%s", error.message);
   bson_destroy(&reply);
   members(&m);
   cr_assert_eq(m.primary, -1, "a frozen member was elected");
   int next = (p + 2) % N_MEMBERS;
   freeze(m.host[next], 0); /* electable: elected after the election timeout */
   cr_assert_eq(await_primary(&m), next);
   for (int i = 0; i < N_MEMBERS; i++) {
      if (i != next) {
         freeze(m.host[i], 0);
      }
   }
}
