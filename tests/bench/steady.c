/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Steady state: writer threads commit one event per change through liboutbox while the relay
 * runs; latency is measured from the moment outbox_collection_update() returned to the moment
 * the subscriber received the message (both CLOCK_MONOTONIC in this process).
 * First an unthrottled run finds the maximum sustainable rate (events delivered per second
 * while writers push as hard as they can); then fixed-rate runs at 25, 50 and 90% of it.
 * Writers keep a schedule (commit k is due at t0 + k / rate); one that falls behind commits
 * its overdue slots back to back, so the achieved rate equals the target unless the writers
 * themselves cannot keep up, and then the achieved rate shows it.
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
#include "drain.h"
#include "parts.h"

#define MAX_WRITERS 64

typedef struct {
   int64_t version;
} entity_state_t;

typedef struct phase phase_t;

typedef struct {
   phase_t *ph;
   int index;
   entity_state_t *st; /* this writer's entities: index, index + writers, ... */
   size_t mine, next;
   char error[600];
} writer_t;

struct phase {
   const bench_opts_t *o;
   outbox_collection_t *oc;
   int writers;
   double rate; /* events/s for all writers together; 0 = as fast as possible */
   int64_t t0, stop_ns;
   int64_t base;       /* bench_n of the phase's first event */
   size_t cap;         /* events at most (size of commit_ns) */
   atomic_size_t next; /* next event index */
   atomic_size_t committed;
   int64_t *commit_ns; /* per event index; 0 = not committed */
   writer_t w[MAX_WRITERS];
};

static bool
commit_one(writer_t *w, int64_t n)
{
   phase_t *ph = w->ph;
   size_t i = w->next;
   w->next = (w->next + 1) % w->mine;
   char id[32];
   bench_entity_id(id, sizeof id, (size_t)w->index + i * (size_t)ph->writers);
   bson_value_t idv = {.value_type = BSON_TYPE_UTF8};
   idv.value.v_utf8.str = id;
   idv.value.v_utf8.len = (uint32_t)strlen(id);
   bson_t data = BSON_INITIALIZER;
   bench_event_data(&data, n, ph->o->payload);
   outbox_event_t *ev = outbox_event_new("bench.event", &data);
   bson_destroy(&data);
   outbox_commit_t res;
   bson_error_t err;
   bool ok = outbox_collection_update(ph->oc, &idv, w->st[i].version, NULL, &ev, 1, &res, &err);
   if (ok) {
      w->st[i].version = res.version;
   } else {
      snprintf(w->error, sizeof w->error, "outbox_collection_update(%s): %s", id, err.message);
   }
   outbox_event_destroy(ev);
   return ok;
}

static void *
writer_main(void *arg)
{
   writer_t *w = arg;
   phase_t *ph = w->ph;
   /* Writer k of W owns every W-th slot of the schedule, offset by k, so together the
    * writers commit evenly spaced, not in synchronized bursts. */
   double interval = ph->rate > 0 ? 1e9 * ph->writers / ph->rate : 0;
   for (int64_t k = 0;; k++) {
      if (interval > 0) {
         int64_t due = ph->t0 + (int64_t)(interval * ((double)k + (double)w->index / ph->writers));
         if (due >= ph->stop_ns) {
            break;
         }
         int64_t wait = due - bench_now_ns();
         if (wait > 0) {
            nanosleep(&(struct timespec){wait / 1000000000, wait % 1000000000}, NULL);
         }
      } else if (bench_now_ns() >= ph->stop_ns) {
         break;
      }
      size_t idx = atomic_fetch_add(&ph->next, 1);
      if (idx >= ph->cap) {
         break;
      }
      if (!commit_one(w, ph->base + (int64_t)idx)) {
         break;
      }
      ph->commit_ns[idx] = bench_now_ns();
      atomic_fetch_add(&ph->committed, 1);
   }
   return NULL;
}

static int
cmp_double(const void *a, const void *b)
{
   double x = *(const double *)a, y = *(const double *)b;
   return x < y ? -1 : x > y;
}

/* Fills the percentiles from the committed events that arrived. */
static void
latency_stats(const phase_t *ph, const int64_t *recv, bench_steady_t *out)
{
   double *lat = malloc((ph->cap ? ph->cap : 1) * sizeof *lat);
   size_t n = 0;
   for (size_t i = 0; i < ph->cap; i++) {
      if (ph->commit_ns[i] && recv[i]) {
         /* The change stream can deliver before the commit's reply reached the writer. */
         int64_t d = recv[i] - ph->commit_ns[i];
         lat[n++] = d > 0 ? (double)d / 1e6 : 0;
      }
   }
   qsort(lat, n, sizeof *lat, cmp_double);
   out->p50_ms = bench_percentile(lat, n, 50);
   out->p95_ms = bench_percentile(lat, n, 95);
   out->p99_ms = bench_percentile(lat, n, 99);
   out->max_ms = n ? lat[n - 1] : 0;
   free(lat);
}

typedef struct {
   const bench_opts_t *o;
   const bench_servers_t *s;
   bench_sub_t *sub;
   pid_t relay;
   char prefix[96];
   int64_t next_base;
   phase_t ph;
} steady_t;

static void
start_writers(steady_t *sd, pthread_t *tid)
{
   for (int i = 0; i < sd->ph.writers; i++) {
      sd->ph.w[i].ph = &sd->ph;
      sd->ph.w[i].error[0] = '\0';
      pthread_create(&tid[i], NULL, writer_main, &sd->ph.w[i]);
   }
}

static bool
join_writers(steady_t *sd, pthread_t *tid)
{
   bool ok = true;
   for (int i = 0; i < sd->ph.writers; i++) {
      pthread_join(tid[i], NULL);
      if (sd->ph.w[i].error[0]) {
         fprintf(stderr, "outbox-bench: steady state: %s\n", sd->ph.w[i].error);
         ok = false;
      }
   }
   return ok;
}

/* One phase at `rate` events/s (0: unthrottled) for `seconds`. */
static bool
run_phase(steady_t *sd, double rate, double seconds, bench_steady_t *out)
{
   phase_t *ph = &sd->ph;
   ph->rate = rate;
   ph->cap = rate > 0 ? (size_t)(rate * seconds) + (size_t)ph->writers + 16
                      : (size_t)(seconds * 100000) + 1000;
   ph->base = sd->next_base;
   sd->next_base += (int64_t)ph->cap;
   ph->commit_ns = calloc(ph->cap, sizeof *ph->commit_ns);
   atomic_store(&ph->next, 0);
   atomic_store(&ph->committed, 0);
   bench_sub_reset(sd->sub, sd->prefix, ph->base, ph->cap);
   /* A short lead lets every writer reach its first slot on time. */
   ph->t0 = bench_now_ns() + 20000000;
   ph->stop_ns = ph->t0 + (int64_t)(seconds * 1e9);
   pthread_t tid[MAX_WRITERS];
   start_writers(sd, tid);
   bool ok = join_writers(sd, tid);
   size_t committed = atomic_load(&ph->committed);
   const char *why = "";
   int64_t deadline = bench_now_ns() + (int64_t)(sd->o->timeout_s * 1e9);
   ok = bench_relay_wait(sd->sub, committed, &sd->relay, deadline, &why) && ok;
   bench_sub_stats_t st;
   bench_sub_stats(sd->sub, &st);
   *out = (bench_steady_t){
      .ok = ok, .target_per_s = rate, .events = committed, .received = st.distinct};
   out->achieved_per_s = (double)committed / seconds;
   latency_stats(ph, bench_sub_recv_ns(sd->sub), out);
   out->catchup_ms = st.last_ns > ph->stop_ns ? (double)(st.last_ns - ph->stop_ns) / 1e6 : 0;
   if (rate == 0 && st.last_ns > ph->t0) {
      /* Delivered per second while writers pushed as hard as they could: if the relay fell
       * behind, the time to catch up counts against it. */
      int64_t end = st.last_ns > ph->stop_ns ? st.last_ns : ph->stop_ns;
      out->target_per_s = (double)committed / bench_secs(ph->t0, end);
   }
   if (!ok) {
      fprintf(stderr, "outbox-bench: steady phase at %.0f/s: %s (%zu of %zu received)\n", rate, why,
              st.distinct, committed);
   }
   free(ph->commit_ns);
   ph->commit_ns = NULL;
   return ok;
}

static void
init_writers(steady_t *sd, int writers, size_t entities)
{
   sd->ph.writers = writers;
   for (int i = 0; i < writers; i++) {
      writer_t *w = &sd->ph.w[i];
      w->index = i;
      w->mine = (entities - (size_t)i + (size_t)writers - 1) / (size_t)writers;
      w->st = calloc(w->mine, sizeof *w->st);
      for (size_t k = 0; k < w->mine; k++) {
         w->st[k].version = 1;
      }
   }
}

static void
phases(steady_t *sd, bench_results_t *r)
{
   static const double pct[3] = {25, 50, 90};
   bench_steady_t warm;
   /* Warm-up: proves the relay is watching before anything is timed. */
   if (!run_phase(sd, 100, 0.5, &warm)) {
      bench_fail(r, "steady state: warm-up events did not arrive");
      return;
   }
   if (!run_phase(sd, 0, sd->o->phase_s, &r->saturation)) {
      bench_fail(r, "steady state: saturation run incomplete");
      return;
   }
   r->max_sustainable_per_s = r->saturation.target_per_s;
   for (int i = 0; i < 3 && sd->relay > 0; i++) {
      if (sd->o->verbose) {
         fprintf(stderr, "outbox-bench: steady state at %.0f%% (%.0f/s)\n", pct[i],
                 r->max_sustainable_per_s * pct[i] / 100);
      }
      if (!run_phase(sd, r->max_sustainable_per_s * pct[i] / 100, sd->o->phase_s, &r->steady[i])) {
         bench_fail(r, "steady state at %.0f%% incomplete", pct[i]);
      }
      r->steady[i].target_pct = pct[i];
   }
}

void
bench_steady_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                     bench_results_t *r)
{
   steady_t *sd = calloc(1, sizeof *sd);
   *sd = (steady_t){.o = o, .s = s, .sub = sub};
   char coll[64];
   snprintf(coll, sizeof coll, "steady_%ld", (long)getpid());
   snprintf(sd->prefix, sizeof sd->prefix, "outbox/%s/", coll);
   bson_error_t err;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(s->mongodb_uri, &err);
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   mongoc_client_t *c = mongoc_client_pool_pop(pool);
   size_t entities = o->entities_few;
   bool ok = bench_coll_prepare(c, o->database, coll) &&
             bench_entities_insert(c, o->database, coll, entities);
   sd->ph.o = o;
   sd->ph.oc = ok ? outbox_collection_new(pool, o->database, coll, NULL, &err) : NULL;
   if (ok && !sd->ph.oc) {
      fprintf(stderr, "outbox-bench: outbox_collection_new: %s\n", err.message);
   }
   sd->relay = sd->ph.oc ? bench_relay_start(o, s, coll, o->window, "relay-steady.log") : 0;
   if (sd->relay > 0) {
      init_writers(sd, o->writers < MAX_WRITERS ? o->writers : MAX_WRITERS, entities);
      phases(sd, r);
      if (sd->relay > 0 && bench_stop_child(sd->relay, 15) != 0) {
         bench_fail(r, "steady state: the relay did not exit with 0 on SIGTERM");
      }
   } else {
      bench_fail(r, "steady state could not start");
   }
   if (r->failed) {
      bench_relay_log_tail(s, "relay-steady.log");
   } else {
      bench_relay_log_remove(s, "relay-steady.log");
   }
   for (int i = 0; i < sd->ph.writers; i++) {
      free(sd->ph.w[i].st);
   }
   outbox_collection_destroy(sd->ph.oc);
   bench_coll_drop(c, o->database, coll);
   mongoc_client_pool_push(pool, c);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   free(sd);
}
