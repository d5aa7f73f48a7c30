/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * An unknown outcome resolved across a failover (issue 34, 11): the retry's first read reaches
 * the cut-off primary, which holds the attempt in a history that will be rolled back; its
 * majority read then reaches the new primary, where another writer's commit filled the
 * attempt's seqs. The retry must not report success for those events (it did when the
 * majority eventSeq alone decided). The reads are steered with test-mongod's member faults
 * (isolate) and a failCommand that holds the majority read until the cut-off primary has
 * stepped down, so that mongoc sends it again to the new one.
 * Needs test-mongod --members 3 --enable-test-commands (skipped against other servers).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "lib-test.h"

static lt_t t;
static char app_name[64];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char find_hosts[8][300]; /* the host of each find this test's pool sent */
static atomic_int n_finds;
static atomic_bool stop_ticks;
/* Set: the second find (the retry's majority read) arms a fail point that holds it, just
 * before it is sent (configured from the command-started callback, so nothing is timed). */
static char hold_second_find[512];
static char fp_host[128];
static pthread_cond_t held_cond = PTHREAD_COND_INITIALIZER;
static bool held; /* the majority find is held: the other writer may go */

static void failpoint(const char *host, const char *json);

static void
started(const mongoc_apm_command_started_t *event)
{
   if (strcmp(mongoc_apm_command_started_get_command_name(event), "find") != 0) {
      return;
   }
   pthread_mutex_lock(&lock);
   int i = atomic_load(&n_finds);
   if (i < 8) {
      const mongoc_host_list_t *h = mongoc_apm_command_started_get_host(event);
      snprintf(find_hosts[i], sizeof find_hosts[i], "%s", h->host_and_port);
   }
   atomic_store(&n_finds, i + 1);
   pthread_mutex_unlock(&lock);
   if (i == 1 && hold_second_find[0]) {
      failpoint(fp_host, hold_second_find);
      pthread_mutex_lock(&lock);
      held = true;
      pthread_cond_signal(&held_cond);
      pthread_mutex_unlock(&lock);
   }
}

static char hosts[3][128];
static int n_hosts;
static char set_name[64];
static bool have_members; /* the server is test-mongod with three members and test commands */

/* The attempt's pool keeps its first picture of the set: a monitor that looked again would
 * find the new primary before the retry's first read, and nothing would be steered. */
static void
slow_heartbeat(mongoc_uri_t *uri)
{
   cr_assert(mongoc_uri_set_option_as_int32(uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 60000));
}

static mongoc_client_t *
direct(const char *host)
{
   char *s =
      bson_strdup_printf("mongodb://%s/?directConnection=true&serverSelectionTimeoutMS=3000", host);
   mongoc_client_t *c = mongoc_client_new(s);
   cr_assert_not_null(c, "%s", s);
   mongoc_client_set_error_api(c, MONGOC_ERROR_API_VERSION_2);
   bson_free(s);
   return c;
}

/* Runs @cmd on admin of @host; false (with @error) when it fails. */
static bool
admin_cmd(const char *host, const bson_t *cmd, bson_t *reply, bson_error_t *error)
{
   mongoc_client_t *c = direct(host);
   bson_t local;
   bool ok = mongoc_client_command_simple(c, "admin", cmd, NULL, reply ? reply : &local, error);
   if (!reply) {
      bson_destroy(&local);
   }
   mongoc_client_destroy(c);
   return ok;
}

static bool
hello_of(const char *host, bson_t *reply)
{
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   bson_error_t error;
   bool ok = admin_cmd(host, cmd, reply, &error);
   bson_destroy(cmd);
   return ok;
}

/* Whether @host says it is the writable primary. */
static bool
is_primary(const char *host)
{
   bson_t reply;
   bson_iter_t it;
   bool yes = hello_of(host, &reply) && bson_iter_init_find(&it, &reply, "isWritablePrimary") &&
              bson_iter_as_bool(&it);
   bson_destroy(&reply);
   return yes;
}

/* testMemberFault through any member that answers. */
static void
fault(const char *member, const char *mode)
{
   bson_t *cmd = BCON_NEW("testMemberFault", BCON_UTF8(member), "mode", BCON_UTF8(mode));
   bson_error_t error;
   bool ok = false;
   for (int i = 0; i < n_hosts && !ok; i++) {
      ok = admin_cmd(hosts[i], cmd, NULL, &error);
   }
   bson_destroy(cmd);
   cr_assert(ok, "testMemberFault %s %s: %s", member, mode, error.message);
}

static void
failpoint(const char *host, const char *json)
{
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   cr_assert(admin_cmd(host, cmd, NULL, &error), "configureFailPoint: %s", error.message);
   bson_destroy(cmd);
}

/* The members, from the seed's hello; false when the server cannot do what the test needs. */
static bool
find_members(void)
{
   const char *uri_string = getenv("OUTBOX_TEST_MONGODB_URI");
   mongoc_uri_t *uri = mongoc_uri_new(uri_string);
   const mongoc_host_list_t *seed = uri ? mongoc_uri_get_hosts(uri) : NULL;
   bson_t reply;
   bson_iter_t it, arr;
   bool ok = seed && hello_of(seed->host_and_port, &reply);

   n_hosts = 0;
   if (ok && bson_iter_init_find(&it, &reply, "setName") && BSON_ITER_HOLDS_UTF8(&it)) {
      snprintf(set_name, sizeof set_name, "%s", bson_iter_utf8(&it, NULL));
   }
   if (ok && bson_iter_init_find(&it, &reply, "hosts") && bson_iter_recurse(&it, &arr)) {
      while (bson_iter_next(&arr) && n_hosts < 3) {
         snprintf(hosts[n_hosts++], sizeof hosts[0], "%s", bson_iter_utf8(&arr, NULL));
      }
   }
   if (ok) {
      bson_destroy(&reply);
   }
   mongoc_uri_destroy(uri);
   if (n_hosts < 3) {
      return false;
   }
   /* testMemberFault exists only on test-mongod with --enable-test-commands. */
   bson_t *cmd = BCON_NEW("testMemberFault", BCON_UTF8(hosts[1]), "mode", BCON_UTF8("resume"));
   bson_error_t error;
   ok = admin_cmd(hosts[0], cmd, NULL, &error);
   bson_destroy(cmd);
   return ok;
}

/* The set's election timeout (replSetGetConfig; 10 s, MongoDB's default, if it does not say):
 * the steering below is timed by it, so that the test runs against a set started with any. */
static int
election_timeout_ms(void)
{
   bson_t *cmd = BCON_NEW("replSetGetConfig", BCON_INT32(1));
   bson_t reply;
   bson_iter_t it;
   bson_error_t error;
   int ms = 10000;
   if (admin_cmd(hosts[0], cmd, &reply, &error) && bson_iter_init(&it, &reply) &&
       bson_iter_find_descendant(&it, "config.settings.electionTimeoutMillis", &it) &&
       BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) > 0) {
      ms = (int)bson_iter_as_int64(&it);
   }
   bson_destroy(&reply);
   bson_destroy(cmd);
   return ms;
}

static const char *
primary_host(const char *except)
{
   for (int i = 0; i < n_hosts; i++) {
      if ((!except || strcmp(hosts[i], except) != 0) && is_primary(hosts[i])) {
         return hosts[i];
      }
   }
   return NULL;
}

static const char *
wait_primary(const char *except)
{
   const char *p = NULL;
   for (int i = 0; i < 400 && !(p = primary_host(except)); i++) {
      usleep(50 * 1000);
   }
   cr_assert_not_null(p, "no primary other than %s within 20 s", except ? except : "-");
   return p;
}

/* Writes on the new side while the test runs, so that its majority point moves past the
 * cluster time the retry's first read saw (the causal majority read waits for that). */
static void *
ticks(void *arg)
{
   mongoc_client_t *c = direct(arg);
   mongoc_collection_t *coll = mongoc_client_get_collection(c, LT_DB, "outcome_rollback_ticks");
   while (!atomic_load(&stop_ticks)) {
      bson_t *doc = BCON_NEW("t", BCON_INT64(lt_now_ms()));
      mongoc_collection_insert_one(coll, doc, NULL, NULL, NULL);
      bson_destroy(doc);
      usleep(50 * 1000);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(c);
   return NULL;
}

static void
setup(void)
{
   mongoc_apm_callbacks_t *apm = mongoc_apm_callbacks_new();
   uint32_t r = 0;

   mongoc_apm_set_command_started_cb(apm, started);
   mongoc_init();
   have_members = find_members();
   if (have_members) {
      /* The whole set: with the seed alone mongoc talks to that one member only. */
      char *uri = bson_strdup_printf("mongodb://%s,%s,%s/?replicaSet=%s", hosts[0], hosts[1],
                                     hosts[2], set_name);
      setenv("OUTBOX_TEST_MONGODB_URI", uri, 1);
      bson_free(uri);
   }
   lt_init_uri(&t, "rollback", slow_heartbeat, apm, NULL);
   mongoc_apm_callbacks_destroy(apm);
   cr_assert_eq(getrandom(&r, sizeof r, 0), (ssize_t)sizeof r);
   snprintf(app_name, sizeof app_name, "rollback-%d-%08x", (int)getpid(), r);
   cr_assert(mongoc_client_pool_set_appname(t.pool, app_name));
}

static void
teardown(void)
{
   lt_cleanup(&t);
}

TestSuite(outcome_rollback, .init = setup, .fini = teardown, .timeout = 90);

/* The other writer: once the retry's majority read is held on the cut-off primary, it waits
 * for the new primary, commits its own event at the seq the attempt had (majority-committed
 * there), and keeps writing so that the new side's majority point moves on. */
typedef struct {
   const char *old_host;
   int wait_ms; /* for the new primary */
   char fresh[128];
   char coll_name[64];
   outbox_event_t **other;
   int64_t first_seq;
   bson_error_t error;
   bool ok;
} writer_t;

static void *
other_writer(void *arg)
{
   writer_t *w = arg;
   pthread_mutex_lock(&lock);
   while (!held) {
      pthread_cond_wait(&held_cond, &lock);
   }
   pthread_mutex_unlock(&lock);
   const char *p = NULL;
   for (int i = 0; i < w->wait_ms / 25 && !(p = primary_host(w->old_host)); i++) {
      usleep(25 * 1000);
   }
   if (!p) {
      bson_set_error(&w->error, 0, 0, "no new primary within %d ms", w->wait_ms);
      return NULL;
   }
   snprintf(w->fresh, sizeof w->fresh, "%.120s", p);
   char *s = bson_strdup_printf("mongodb://%s/?directConnection=true", p);
   mongoc_uri_t *uri = mongoc_uri_new(s);
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   outbox_collection_t *x = outbox_collection_new(pool, LT_DB, w->coll_name, NULL, &w->error);
   bson_value_t id = lt_str_id("e");
   outbox_commit_t res;
   w->ok = x && outbox_collection_append(x, &id, w->other, 1, &res, &w->error);
   w->first_seq = w->ok ? res.first_seq : 0;
   outbox_collection_destroy(x);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   bson_free(s);
   ticks(w->fresh);
   return NULL;
}

Test(outcome_rollback, majority_read_on_the_new_primary_is_not_success)
{
   if (!have_members) {
      lt_skip("needs test-mongod's fault injection (testMemberFault: members cut off, paused, "
              "clocks offset) on three members");
   }
   bson_t *opts =
      BCON_NEW("writeConcern", "{", "w", BCON_UTF8("majority"), "wtimeout", BCON_INT32(300), "}");
   lt_open(&t, opts);
   bson_destroy(opts);
   bson_value_t id = lt_str_id("e");
   outbox_event_t *evs[1], *other[1];
   outbox_commit_t res;
   bson_error_t e;
   lt_events_new(evs, 1, "t.attempt");
   lt_events_new(other, 1, "t.other");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, NULL, 0, &res, &e), "%s", e.message);
   const char *old = wait_primary(NULL);
   char old_host[128];
   snprintf(old_host, sizeof old_host, "%.120s", old);
   int election_ms = election_timeout_ms();
   writer_t w = {.old_host = old_host, .other = other, .wait_ms = election_ms + 8000};
   snprintf(w.coll_name, sizeof w.coll_name, "%s", t.coll_name);
   pthread_t writer;
   atomic_store(&stop_ticks, false);
   cr_assert_eq(pthread_create(&writer, NULL, other_writer, &w), 0);

   /* The attempt: the cut-off primary takes it, the majority never does (wtimeout 300 ms).
    * The retry follows at once, before the others elect (the election timeout: 2 s in CI,
    * --election-timeout-ms 2000): its first find runs on the cut-off primary, which holds the
    * attempt. Its majority find is held there for the election timeout + 2.5 s (the other
    * writer commits on the new primary meanwhile), until that primary has stepped down (one
    * heartbeat, 2 s, after the others could elect), then refused as "not primary" (10107):
    * mongoc looks at the set again and sends it to the new primary, as it would have had the
    * stepdown come a moment earlier. */
   snprintf(hold_second_find, sizeof hold_second_find,
            "{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, \"data\": "
            "{\"failCommands\": [\"find\"], \"blockConnection\": true, \"blockTimeMS\": %d, "
            "\"errorCode\": 10107, \"appName\": \"%s\"}}",
            election_ms + 2500, app_name);
   /* On the primary, which after earlier tests against the same set need not be the seed. */
   snprintf(fp_host, sizeof fp_host, "%s", old_host);
   fault(old_host, "isolate");
   cr_assert_not(outbox_collection_append(t.coll, &id, evs, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_UNKNOWN_OUTCOME, "%s", e.message);
   atomic_store(&n_finds, 0);
   bool retried = outbox_collection_append(t.coll, &id, evs, 1, &res, &e);
   bson_error_t retry_error = e;
   hold_second_find[0] = '\0';
   atomic_store(&stop_ticks, true);
   pthread_mutex_lock(&lock);
   held = true; /* a retry that never held its read lets the writer go too */
   pthread_cond_signal(&held_cond);
   pthread_mutex_unlock(&lock);
   pthread_join(writer, NULL);
   cr_assert(w.ok, "the other writer: %s", w.error.message);
   cr_assert_eq(w.first_seq, 1, "the other writer's event got seq %" PRId64, w.first_seq);

   /* The steering happened: first find and majority find sent to the cut-off primary, the
    * majority find then sent again to the new one. */
   pthread_mutex_lock(&lock);
   int n = atomic_load(&n_finds);
   char seen[2600] = "";
   for (int i = 0; i < n && i < 8; i++) {
      snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s%.300s", i ? ", " : "",
               find_hosts[i]);
   }
   bool steered = n >= 3 && !strcmp(find_hosts[0], old_host) && !strcmp(find_hosts[1], old_host) &&
                  !strcmp(find_hosts[2], w.fresh);
   pthread_mutex_unlock(&lock);
   cr_assert(steered,
             "the reads were not steered as planned (finds on: %s; cut-off %s, new %s; the "
             "retry: %s)",
             seen, old_host, w.fresh, retried ? "success" : retry_error.message);
   cr_assert_not(retried,
                 "the retry reported success (seqs %" PRId64 "-%" PRId64 ") for events the "
                 "new primary's majority does not hold: seq 1 is the other writer's event",
                 res.first_seq, res.last_seq);
   cr_assert_eq(retry_error.code, OUTBOX_ERROR_UNKNOWN_OUTCOME, "%s", retry_error.message);

   /* Healed, the cut-off member rolls the attempt back; a retry then stores it once, after
    * the other writer's event. */
   fault(old_host, "heal");
   bool stored = false;
   for (int i = 0; i < 100 && !stored; i++) {
      stored = outbox_collection_append(t.coll, &id, evs, 1, &res, &e);
      cr_assert(stored || e.code == OUTBOX_ERROR_UNKNOWN_OUTCOME, "%s", e.message);
      if (!stored) {
         usleep(200 * 1000);
      }
   }
   cr_assert(stored, "the retry never stored the events: %s", e.message);
   cr_assert_eq(res.first_seq, 2, "stored at seq %" PRId64, res.first_seq);
   lt_events_destroy(evs, 1);
   lt_events_destroy(other, 1);
}
