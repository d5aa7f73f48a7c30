/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams on members that are cut off or roll back (test-mongod --members 3
 * --election-timeout-ms 500 --enable-test-commands), with libmongoc: a member streams only
 * what it has applied (an isolated one nothing new until healed); at a rollback its
 * waiting getMores are killed with their connections, so libmongoc resumes on the new
 * primary by itself, and an idle stream's next getMore fails with 175 QueryPlanKilled
 * without ResumableChangeStreamError (6.0), so the application resumes from its token.
 * Either way no event is missed or repeated and the rolled-back write is never shown. One
 * test at a time (CRITERION_JOBS=1); each heals what it broke. Skipped against a server
 * without testMemberFault (a real set).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

static const bson_t empty_pipeline = BSON_INITIALIZER;

static void
insert_id(mongoc_collection_t *coll, int id, bool majority)
{
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(id));
   bson_t *opts = majority ? BCON_NEW("writeConcern", "{", "w", "majority", "}") : NULL;
   cr_assert(mongoc_collection_insert_one(coll, doc, opts, NULL, &error), "insert %d: %s", id,
             error.message);
   bson_destroy(opts);
   bson_destroy(doc);
}

/* The _ids of the inserts `stream` delivers in up to `rounds` calls to next, appended to
 * `out` as " id" words; stops after `want` events. */
static void
take(mongoc_change_stream_t *stream, int rounds, int want, char *out, size_t len)
{
   const bson_t *event;
   bson_iter_t it;
   for (int got = 0, i = 0; i < rounds && got < want; i++) {
      while (got < want && mongoc_change_stream_next(stream, &event)) {
         size_t n = strlen(out);
         int id =
            bson_iter_init(&it, event) && bson_iter_find_descendant(&it, "documentKey._id", &it)
               ? bson_iter_int32(&it)
               : -1;
         snprintf(out + n, len - n, " %d", id);
         got++;
      }
   }
}

/* A stream opened on a secondary that is then isolated shows none of the set's writes
 * while cut off (it applies none), and all of them once healed. */
Test(streams, isolated_secondary_streams_nothing_new_until_the_heal, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("isolated_stream");
   mongoc_client_t *on_s = md_rs_direct(s), *on_p = md_rs_direct(p);
   mongoc_collection_t *coll_s = mongoc_client_get_collection(on_s, "mdtest", name);
   mongoc_collection_t *coll_p = mongoc_client_get_collection(on_p, "mdtest", name);
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   mongoc_collection_set_read_prefs(coll_s, prefs);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(300));
   mongoc_change_stream_t *stream = mongoc_collection_watch(coll_s, &empty_pipeline, opts);
   bson_error_t error;
   cr_assert_not(mongoc_change_stream_error_document(stream, &error, NULL), "%s", error.message);
   char seen[256] = "";
   insert_id(coll_p, 1, true);
   take(stream, 5, 1, seen, sizeof seen);
   cr_assert_str_eq(seen, " 1");
   md_rs_fault(p, s, "isolate");
   insert_id(coll_p, 2, true); /* the primary and the other secondary: a majority */
   insert_id(coll_p, 3, true);
   take(stream, 3, 2, seen, sizeof seen);
   cr_assert_str_eq(seen, " 1", "an isolated member streamed writes it never applied");
   md_rs_fault(p, s, "heal");
   take(stream, 10, 2, seen, sizeof seen);
   cr_assert_str_eq(seen, " 1 2 3");
   cr_assert_not(mongoc_change_stream_error_document(stream, &error, NULL), "%s", error.message);
   mongoc_change_stream_destroy(stream);
   bson_destroy(opts);
   mongoc_read_prefs_destroy(prefs);
   mongoc_collection_destroy(coll_p);
   mongoc_collection_destroy(coll_s);
   mongoc_client_destroy(on_p);
   mongoc_client_destroy(on_s);
   bson_free(name);
}

typedef struct {
   const char *new_primary;
   int aggregates_there;
} apm_ctx_t;

static void
on_started(const mongoc_apm_command_started_t *e)
{
   apm_ctx_t *ctx = mongoc_apm_command_started_get_context(e);
   if (strcmp(mongoc_apm_command_started_get_command_name(e), "aggregate") == 0 &&
       ctx->new_primary &&
       strcmp(mongoc_apm_command_started_get_host(e)->host_and_port, ctx->new_primary) == 0) {
      ctx->aggregates_there++;
   }
}

/* The set as the tests leave it: a client given every member, counting its aggregates. */
typedef struct {
   md_rs_members_t m;
   int old;
   mongoc_client_t *client, *old_direct;
   mongoc_collection_t *coll, *old_coll;
   mongoc_change_stream_t *stream;
   apm_ctx_t apm;
   char *name;
   char seen[256];
} scene_t;

/* Opens a stream through every seed, shows insert 1, isolates the primary, writes 2 on it
 * (to be rolled back) and 3 on the newly elected primary. */
static void
scene_start(scene_t *sc, const char *prefix)
{
   memset(sc, 0, sizeof *sc);
   md_rs_members(&sc->m);
   sc->old = sc->m.primary;
   const md_rs_members_t *m = &sc->m;
   char *uri = bson_strdup_printf("mongodb://%s,%s,%s/?replicaSet=rs0"
                                  "&serverSelectionTimeoutMS=5000&serverSelectionTryOnce=false",
                                  m->host[0], m->host[1], m->host[2]);
   sc->client = mongoc_client_new(uri);
   bson_free(uri);
   mongoc_client_set_error_api(sc->client, MONGOC_ERROR_API_VERSION_2);
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_started_cb(cbs, on_started);
   mongoc_client_set_apm_callbacks(sc->client, cbs, &sc->apm);
   mongoc_apm_callbacks_destroy(cbs);
   sc->name = md_test_name(prefix);
   sc->coll = mongoc_client_get_collection(sc->client, "mdtest", sc->name);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(3000));
   sc->stream = mongoc_collection_watch(sc->coll, &empty_pipeline, opts);
   bson_destroy(opts);
   insert_id(sc->coll, 1, true);
   take(sc->stream, 3, 1, sc->seen, sizeof sc->seen);
   cr_assert_str_eq(sc->seen, " 1");
   const char *p = m->host[sc->old], *via = m->host[(sc->old + 1) % MD_RS_MEMBERS];
   sc->old_direct = md_rs_direct(p);
   sc->old_coll = mongoc_client_get_collection(sc->old_direct, "mdtest", sc->name);
   md_rs_fault(via, p, "isolate");
   md_rs_mark_down(p, true);
   insert_id(sc->old_coll, 2, false); /* w:1 on the isolated primary: rolled back later */
   int now = md_rs_await_other_primary(m, sc->old);
   sc->apm.new_primary = m->host[now];
   mongoc_client_t *direct = md_rs_direct(m->host[now]);
   mongoc_collection_t *coll = mongoc_client_get_collection(direct, "mdtest", sc->name);
   insert_id(coll, 3, true);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(direct);
}

static void
scene_heal(scene_t *sc)
{
   const char *p = sc->m.host[sc->old];
   md_rs_fault(sc->apm.new_primary, p, "heal");
   md_rs_mark_down(p, false);
}

static void
scene_end(scene_t *sc)
{
   mongoc_change_stream_destroy(sc->stream);
   mongoc_collection_destroy(sc->old_coll);
   mongoc_client_destroy(sc->old_direct);
   mongoc_collection_destroy(sc->coll);
   mongoc_client_destroy(sc->client);
   bson_free(sc->name);
}

static void *
take_one(void *arg)
{
   scene_t *sc = arg;
   take(sc->stream, 3, 1, sc->seen, sizeof sc->seen);
   return NULL;
}

/* A getMore waiting on the isolated former primary when it rolls back is killed with its
 * connection: libmongoc resumes by itself on the new primary (an aggregate there) and
 * delivers 3 and then 4, never the rolled-back 2, nothing twice. */
Test(streams, waiting_stream_resumes_on_the_new_primary_after_a_rollback, .fini = md_rs_heal_all)
{
   scene_t sc;
   scene_start(&sc, "rollback_waiting");
   pthread_t reader;
   pthread_create(&reader, NULL, take_one, &sc);
   usleep(500 * 1000); /* its getMore waits on the isolated member (maxAwaitTimeMS 3 s) */
   scene_heal(&sc);
   pthread_join(reader, NULL);
   insert_id(sc.coll, 4, true);
   take(sc.stream, 5, 1, sc.seen, sizeof sc.seen);
   bson_error_t error;
   cr_assert_not(mongoc_change_stream_error_document(sc.stream, &error, NULL), "%s", error.message);
   cr_assert_str_eq(sc.seen, " 1 3 4");
   cr_assert_gt(sc.apm.aggregates_there, 0, "the stream never resumed on the new primary");
   scene_end(&sc);
}

/* A stream idle at the rollback gets 175 QueryPlanKilled on its next getMore, without
 * ResumableChangeStreamError (6.0), so libmongoc reports it; the application resumes from
 * its last token on the new primary and sees 3 once, never 2. */
Test(streams, idle_stream_fails_with_175_and_resumes_from_its_token, .fini = md_rs_heal_all)
{
   scene_t sc;
   scene_start(&sc, "rollback_idle");
   scene_heal(&sc);
   const bson_t *event, *doc;
   bson_error_t error;
   cr_assert_not(mongoc_change_stream_next(sc.stream, &event));
   cr_assert(mongoc_change_stream_error_document(sc.stream, &error, &doc));
   cr_assert_eq(error.code, 175, "%d %s", error.code, error.message);
   bson_iter_t it;
   char *json = md_test_json(doc);
   cr_assert_not(bson_iter_init_find(&it, doc, "errorLabels"), "labelled: %s", json);
   bson_free(json);
   bson_t *opts =
      BCON_NEW("resumeAfter", BCON_DOCUMENT(mongoc_change_stream_get_resume_token(sc.stream)),
               "maxAwaitTimeMS", BCON_INT32(300));
   mongoc_change_stream_t *again = mongoc_collection_watch(sc.coll, &empty_pipeline, opts);
   take(again, 5, 1, sc.seen, sizeof sc.seen);
   insert_id(sc.coll, 4, true);
   take(again, 5, 1, sc.seen, sizeof sc.seen);
   cr_assert_not(mongoc_change_stream_error_document(again, &error, NULL), "%s", error.message);
   cr_assert_str_eq(sc.seen, " 1 3 4");
   mongoc_change_stream_destroy(again);
   bson_destroy(opts);
   scene_end(&sc);
}
