/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The library benchmark (issue 4): commits/s through outbox_collection_update() next to a
 * plain mongoc_collection_update_one() that writes the same document shape (version check in
 * the filter, $set of a business field, $inc of version and eventSeq, $push of the events),
 * same write concern, same entities, same server, in the same run. No relay runs, so events
 * accumulate; each run therefore gets a fresh collection, and with two repetitions the order
 * is plain, lib, lib, plain so a slow drift of the machine favours neither.
 */
#include <mongoc/mongoc.h>
#include <outbox/outbox.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backlog.h"
#include "parts.h"

typedef struct {
   const bench_opts_t *opts;
   mongoc_client_pool_t *pool;
   outbox_collection_t *oc; /* NULL: the plain mongoc update */
   const char *coll;
   int index, threads, per_commit;
   size_t entities;
   pthread_barrier_t *start;
   _Atomic int64_t *stop_ns; /* shared; INT64_MAX until the timed part starts */
   size_t commits;
   char error[600];
} worker_t;

typedef struct {
   int64_t version, event_seq;
} entity_state_t;

static bool
commit_lib(worker_t *w, size_t e, entity_state_t *st, int64_t n)
{
   char id[32];
   bench_entity_id(id, sizeof id, e);
   bson_value_t idv = {.value_type = BSON_TYPE_UTF8};
   idv.value.v_utf8.str = id;
   idv.value.v_utf8.len = (uint32_t)strlen(id);
   outbox_event_t *evs[16];
   for (int j = 0; j < w->per_commit; j++) {
      bson_t data = BSON_INITIALIZER;
      bench_event_data(&data, n + j, w->opts->payload);
      evs[j] = outbox_event_new("bench.event", &data);
      bson_destroy(&data);
   }
   bson_t *upd = BCON_NEW("$set", "{", "counter", BCON_INT64(n), "}");
   outbox_commit_t res;
   bson_error_t err;
   bool ok = outbox_collection_update(w->oc, &idv, st->version, upd, evs, (size_t)w->per_commit,
                                      &res, &err);
   if (ok) {
      st->version = res.version;
      st->event_seq = res.last_seq;
   } else {
      snprintf(w->error, sizeof w->error, "outbox_collection_update: %s", err.message);
   }
   bson_destroy(upd);
   for (int j = 0; j < w->per_commit; j++) {
      outbox_event_destroy(evs[j]);
   }
   return ok;
}

static bool
commit_plain(worker_t *w, mongoc_collection_t *col, const bson_t *opts, size_t e,
             entity_state_t *st, int64_t n)
{
   char id[32];
   bench_entity_id(id, sizeof id, e);
   bson_t *filter = BCON_NEW("_id", BCON_UTF8(id), "version", BCON_INT64(st->version), "eventSeq",
                             BCON_INT64(st->event_seq));
   bson_t upd = BSON_INITIALIZER, doc, each, arr;
   BSON_APPEND_DOCUMENT_BEGIN(&upd, "$set", &doc);
   BSON_APPEND_INT64(&doc, "counter", n);
   bson_append_document_end(&upd, &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&upd, "$inc", &doc);
   BSON_APPEND_INT64(&doc, "version", 1);
   BSON_APPEND_INT64(&doc, "eventSeq", w->per_commit);
   bson_append_document_end(&upd, &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&upd, "$push", &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&doc, "events", &each);
   BSON_APPEND_ARRAY_BEGIN(&each, "$each", &arr);
   for (int j = 0; j < w->per_commit; j++) {
      char key[16];
      const char *kp;
      bson_uint32_to_string((uint32_t)j, &kp, key, sizeof key);
      bench_append_event(&arr, kp, n + j, st->event_seq + j + 1, w->opts->payload);
   }
   bson_append_array_end(&each, &arr);
   bson_append_document_end(&doc, &each);
   bson_append_document_end(&upd, &doc);
   bson_t reply;
   bson_error_t err;
   bool ok = mongoc_collection_update_one(col, filter, &upd, opts, &reply, &err);
   bson_iter_t it;
   if (ok && (!bson_iter_init_find(&it, &reply, "matchedCount") || bson_iter_as_int64(&it) != 1)) {
      snprintf(err.message, sizeof err.message, "version check failed (matchedCount != 1)");
      ok = false;
   }
   if (ok) {
      st->version++;
      st->event_seq += w->per_commit;
   } else {
      snprintf(w->error, sizeof w->error, "update_one: %s", err.message);
   }
   bson_destroy(&reply);
   bson_destroy(&upd);
   bson_destroy(filter);
   return ok;
}

static void *
worker_main(void *arg)
{
   worker_t *w = arg;
   size_t mine = (w->entities - (size_t)w->index + (size_t)w->threads - 1) / (size_t)w->threads;
   entity_state_t *st = calloc(mine ? mine : 1, sizeof *st);
   for (size_t i = 0; i < mine; i++) {
      st[i].version = 1;
   }
   mongoc_client_t *client = mongoc_client_pool_pop(w->pool);
   mongoc_collection_t *col = mongoc_client_get_collection(client, w->opts->database, w->coll);
   /* The library writes with w: "majority" by default; the plain update does the same. */
   bson_t *opts = BCON_NEW("writeConcern", "{", "w", BCON_UTF8("majority"), "}");
   int64_t n = (int64_t)w->index << 40; /* bench_n values only need to be distinct */
   bool ok = true;
   /* Untimed: one commit per entity first, so the library's (id -> version) cache is warm as
    * in a long-running service, and both variants start on the same document sizes. */
   for (size_t i = 0; i < mine && ok; i++, n += w->per_commit) {
      size_t e = (size_t)w->index + i * (size_t)w->threads;
      ok = w->oc ? commit_lib(w, e, &st[i], n) : commit_plain(w, col, opts, e, &st[i], n);
   }
   pthread_barrier_wait(w->start);
   for (size_t i = 0; ok && bench_now_ns() < atomic_load(w->stop_ns); i = (i + 1) % mine) {
      size_t e = (size_t)w->index + i * (size_t)w->threads;
      ok = w->oc ? commit_lib(w, e, &st[i], n) : commit_plain(w, col, opts, e, &st[i], n);
      n += w->per_commit;
      w->commits += ok;
   }
   bson_destroy(opts);
   mongoc_collection_destroy(col);
   mongoc_client_pool_push(w->pool, client);
   free(st);
   return NULL;
}

/* Commands sent through the benchmark's pool, counted by command monitoring: an extra
 * round trip per commit shows here long before it is clear in a noisy rate. */
static atomic_size_t commands_sent;

static void
on_command_started(const mongoc_apm_command_started_t *event)
{
   atomic_fetch_add(&commands_sent, 1);
}

typedef struct {
   double per_s;         /* commits/s, -1 on an error */
   double cmds;          /* commands sent per commit */
   double cpu_us;        /* this process's CPU per commit (all threads) */
   double server_cpu_us; /* test-mongod's CPU per commit (0 when not ours) */
} run_result_t;

static double
process_cpu_s(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
   return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A fresh collection of entities without events and, for the library, a handle on it.
 * Returns false (having said why) if either could not be made. */
static bool
setup_run(const bench_opts_t *o, mongoc_client_pool_t *pool, const char *coll, bool lib,
          outbox_collection_t **oc)
{
   mongoc_client_t *c = mongoc_client_pool_pop(pool);
   bool ok = bench_coll_prepare(c, o->database, coll) &&
             bench_entities_insert(c, o->database, coll, o->entities_few);
   mongoc_client_pool_push(pool, c);
   *oc = NULL;
   if (ok && lib) {
      bson_error_t err;
      /* No relay clears the events here, so the per-entity limit must not be what stops it. */
      bson_t *copts = BCON_NEW("maxPendingEvents", BCON_INT32(1000000));
      *oc = outbox_collection_new(pool, o->database, coll, copts, &err);
      bson_destroy(copts);
      if (!*oc) {
         fprintf(stderr, "outbox-bench: outbox_collection_new: %s\n", err.message);
         ok = false;
      }
   }
   return ok;
}

/* Releases the workers, times them, and joins them. */
static run_result_t
time_workers(const bench_opts_t *o, const bench_servers_t *s, worker_t *w, pthread_t *tid,
             int threads, pthread_barrier_t *start, _Atomic int64_t *stop_at)
{
   run_result_t res = {.per_s = -1};
   pthread_barrier_wait(start);
   int64_t t0 = bench_now_ns();
   double cpu0 = process_cpu_s(), server0 = bench_proc_cpu_s(s->mongod_pid);
   size_t cmds0 = atomic_load(&commands_sent);
   atomic_store(stop_at, t0 + (int64_t)(o->lib_s * 1e9));
   size_t commits = 0;
   bool ok = true;
   for (int i = 0; i < threads; i++) {
      pthread_join(tid[i], NULL);
      commits += w[i].commits;
      if (w[i].error[0]) {
         fprintf(stderr, "outbox-bench: %s benchmark: %s\n", w[i].oc ? "library" : "plain",
                 w[i].error);
         ok = false;
      }
   }
   if (ok && commits) {
      res.per_s = (double)commits / bench_secs(t0, bench_now_ns());
      res.cpu_us = (process_cpu_s() - cpu0) * 1e6 / (double)commits;
      res.server_cpu_us = (bench_proc_cpu_s(s->mongod_pid) - server0) * 1e6 / (double)commits;
      res.cmds = (double)(atomic_load(&commands_sent) - cmds0) / (double)commits;
   }
   return res;
}

/* One timed run on a fresh collection. CPU per commit is reported next to the rate: on a
 * busy machine it varies far less than throughput does. */
static run_result_t
timed_run(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_pool_t *pool, bool lib,
          int threads, int per_commit)
{
   static int counter;
   char coll[64];
   snprintf(coll, sizeof coll, "lib%d_%ld", ++counter, (long)getpid());
   outbox_collection_t *oc;
   run_result_t res = {.per_s = -1};
   if (setup_run(o, pool, coll, lib, &oc)) {
      worker_t w[8];
      pthread_t tid[8];
      pthread_barrier_t start;
      pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
      _Atomic int64_t stop_at = INT64_MAX;
      for (int i = 0; i < threads; i++) {
         w[i] = (worker_t){.opts = o,
                           .pool = pool,
                           .oc = oc,
                           .coll = coll,
                           .index = i,
                           .threads = threads,
                           .per_commit = per_commit,
                           .entities = o->entities_few,
                           .start = &start,
                           .stop_ns = &stop_at};
         pthread_create(&tid[i], NULL, worker_main, &w[i]);
      }
      res = time_workers(o, s, w, tid, threads, &start, &stop_at);
      pthread_barrier_destroy(&start);
   }
   outbox_collection_destroy(oc);
   mongoc_client_t *c = mongoc_client_pool_pop(pool);
   bench_coll_drop(c, o->database, coll);
   mongoc_client_pool_push(pool, c);
   return res;
}

void
bench_lib_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_results_t *r)
{
   static const int threads[] = {1, 2, 8};
   static const int per_commit[] = {1, 10};
   bson_error_t err;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(s->mongodb_uri, &err);
   if (!uri) {
      bench_fail(r, "library benchmark: %s", err.message);
      return;
   }
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   mongoc_apm_callbacks_t *apm = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_started_cb(apm, on_command_started);
   mongoc_client_pool_set_apm_callbacks(pool, apm, NULL);
   mongoc_client_pool_max_size(pool, 16);
   for (size_t k = 0; k < 2; k++) {
      for (size_t t = 0; t < 3; t++) {
         bench_libcase_t *c = &r->lib[r->n_lib++];
         *c = (bench_libcase_t){.threads = threads[t], .events_per_commit = per_commit[k]};
         if (o->verbose) {
            fprintf(stderr, "outbox-bench: library, %d threads, %d events per commit\n", c->threads,
                    c->events_per_commit);
         }
         run_result_t sum[2] = {{0}}; /* [0] plain, [1] lib */
         bool ok = true;
         /* plain, lib (, lib, plain, plain, lib, lib, plain ...): short runs interleaved, so
          * a drift of the machine favours neither side */
         for (int rep = 0; rep < 2 * o->lib_reps && ok; rep++) {
            int is_lib = rep % 4 == 1 || rep % 4 == 2;
            run_result_t v = timed_run(o, s, pool, is_lib, c->threads, c->events_per_commit);
            ok = v.per_s >= 0;
            sum[is_lib].per_s += v.per_s / o->lib_reps;
            sum[is_lib].cpu_us += v.cpu_us / o->lib_reps;
            sum[is_lib].server_cpu_us += v.server_cpu_us / o->lib_reps;
            sum[is_lib].cmds += v.cmds / o->lib_reps;
         }
         c->ok = ok;
         c->plain_per_s = sum[0].per_s;
         c->lib_per_s = sum[1].per_s;
         c->plain_cpu_us = sum[0].cpu_us;
         c->lib_cpu_us = sum[1].cpu_us;
         c->plain_server_cpu_us = sum[0].server_cpu_us;
         c->lib_server_cpu_us = sum[1].server_cpu_us;
         c->plain_cmds = sum[0].cmds;
         c->lib_cmds = sum[1].cmds;
         c->overhead_pct = ok && c->lib_per_s > 0 ? (c->plain_per_s / c->lib_per_s - 1) * 100 : 0;
         if (!ok) {
            bench_fail(r, "library benchmark (%d threads, %d events) failed", c->threads,
                       c->events_per_commit);
         }
      }
   }
   mongoc_client_pool_destroy(pool);
   mongoc_apm_callbacks_destroy(apm);
   mongoc_uri_destroy(uri);
}
