/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Drain: how fast the relay publishes and clears a backlog of pending events.
 *   sweep:  the backlog exists before the relay starts (recovery path: the sweep through the
 *           pending index); timed from the relay's start, so its start-up is included.
 *   stream: the relay is running and watching; the backlog is written as appends of k events
 *           per commit (change-stream path); timed from the first write.
 * Both end when the subscriber has every event and no document has pending events left.
 */
#include "drain.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backlog.h"

void
bench_relay_log_tail(const bench_servers_t *s, const char *log_name)
{
   char path[256], line[512];
   snprintf(path, sizeof path, "%s/%s", s->workdir, log_name);
   FILE *f = fopen(path, "r");
   if (!f) {
      return;
   }
   /* Keep the last 20 lines in a ring; relay logs of a failed run are short. */
   static char ring[20][512];
   int n = 0;
   while (fgets(line, sizeof line, f)) {
      snprintf(ring[n % 20], sizeof ring[0], "%s", line);
      n++;
   }
   fclose(f);
   fprintf(stderr, "outbox-bench: last lines of %s:\n", path);
   for (int i = n > 20 ? n - 20 : 0; i < n; i++) {
      fprintf(stderr, "  | %s", ring[i % 20]);
   }
}

bool
bench_relay_wait(bench_sub_t *sub, size_t n, pid_t *relay, int64_t deadline, const char **why)
{
   static char exited[64]; /* only the main thread waits */
   int status;
   while (!bench_sub_wait_n(
      sub, n, deadline < bench_now_ns() + 200000000 ? deadline : bench_now_ns() + 200000000)) {
      if (bench_now_ns() >= deadline) {
         *why = "timed out waiting for messages";
         return false;
      }
      if (*relay > 0 && waitpid(*relay, &status, WNOHANG) == *relay) {
         *relay = 0; /* reaped: never signal that pid again */
         if (WIFSIGNALED(status)) {
            snprintf(exited, sizeof exited, "the relay was killed by signal %d", WTERMSIG(status));
         } else {
            snprintf(exited, sizeof exited, "the relay exited with status %d", WEXITSTATUS(status));
         }
         *why = exited;
         return false;
      }
   }
   return true;
}

static bool
wait_cleared(mongoc_client_t *c, const char *db, const char *coll, int64_t deadline,
             const char **why)
{
   for (;;) {
      int pending = bench_pending_any(c, db, coll);
      if (pending == 0) {
         return true;
      }
      if (pending < 0 || bench_now_ns() >= deadline) {
         *why = pending < 0 ? "cannot query pending events" : "timed out waiting for clears";
         return false;
      }
      usleep(5000);
   }
}

size_t
bench_order_violations(const bench_layout_t *l, const uint32_t *rank)
{
   uint32_t *last = calloc(l->entities, sizeof *last);
   size_t bad = 0;
   for (size_t n = 0; n < l->events; n++) {
      uint32_t e = l->entity_of[n];
      if (rank[n] && rank[n] < last[e]) {
         bad++;
      }
      if (rank[n] > last[e]) {
         last[e] = rank[n];
      }
   }
   free(last);
   return bad;
}

/* The stream mode starts timing only once the relay is watching: one probe event proves it. */
static bool
probe(const bench_drain_run_t *run, mongoc_client_t *c, const char *coll, bench_sub_t *sub,
      pid_t *relay, const char **why)
{
   mongoc_collection_t *col = mongoc_client_get_collection(c, run->opts->database, coll);
   bson_t doc = BSON_INITIALIZER, arr;
   BSON_APPEND_UTF8(&doc, "_id", "probe");
   BSON_APPEND_INT64(&doc, "version", 1);
   BSON_APPEND_INT64(&doc, "eventSeq", 1);
   bson_append_array_begin(&doc, "events", 6, &arr);
   bench_append_event(&arr, "0", (int64_t)run->events, 1, 16);
   bson_append_array_end(&doc, &arr);
   bson_error_t err;
   bool ok = mongoc_collection_insert_one(col, &doc, NULL, NULL, &err);
   if (!ok) {
      *why = "cannot insert the probe event";
   }
   bson_destroy(&doc);
   mongoc_collection_destroy(col);
   int64_t deadline = bench_now_ns() + (int64_t)(run->opts->timeout_s * 1e9);
   return ok && bench_relay_wait(sub, 1, relay, deadline, why);
}

static bool
load(const bench_drain_run_t *run, mongoc_client_t *c, const char *coll, bench_layout_t *l)
{
   const char *db = run->opts->database;
   if (!bench_coll_prepare(c, db, coll)) {
      return false;
   }
   if (run->stream) {
      return bench_entities_insert(c, db, coll, run->entities);
   }
   return bench_backlog_insert(c, db, coll, l, run->payload);
}

static void
finish(const bench_drain_run_t *run, bench_sub_t *sub, const bench_layout_t *l, int64_t t0,
       int64_t t_end, bench_drain_t *out)
{
   bench_sub_stats_t st;
   bench_sub_stats(sub, &st);
   size_t expected = run->events + (run->stream ? 1 : 0);
   out->received = st.distinct > expected ? expected : st.distinct;
   out->duplicates = st.total - st.distinct - st.stray;
   out->seconds = bench_secs(t0, t_end);
   out->msgs_per_s = out->ok ? (double)run->events / out->seconds : 0;
   out->first_msg_s = st.first_ns > t0 ? bench_secs(t0, st.first_ns) : 0;
   out->all_received_s = st.last_ns > t0 ? bench_secs(t0, st.last_ns) : 0;
   out->avg_msg_bytes = st.total ? (double)st.bytes / (double)st.total : 0;
   out->order_violations = bench_order_violations(l, bench_sub_rank(sub));
}

static void
init_out(const bench_drain_run_t *run, bench_drain_t *out)
{
   memset(out, 0, sizeof *out);
   out->events = run->events;
   out->entities = run->entities;
   out->window = run->window;
   out->events_per_commit = run->per_commit;
   out->payload = run->payload;
   out->mode = run->stream ? "stream" : "sweep";
}

static void
use_end(bench_drain_t *out, pid_t relay)
{
   if (relay <= 0) {
      out->relay.pid = 0; /* reaped already: its pid may belong to someone else by now */
   }
   bench_proc_use_end(&out->relay);
   bench_proc_use_end(&out->mongod);
   bench_proc_use_end(&out->mosquitto);
   bench_proc_use_end(&out->self);
}

/* Starts the relay (after the backlog in sweep mode, before the writes in stream mode) and
 * waits until everything arrived and was cleared. Returns the start of the timed interval. */
static int64_t
measure(const bench_drain_run_t *run, const bench_servers_t *s, mongoc_client_t *c,
        bench_sub_t *sub, const char *coll, bench_layout_t *l, pid_t *relay, bool *ok,
        const char **why, bench_systrace_t *trace, double *traced_from)
{
   const bench_opts_t *o = run->opts;
   char log[96];
   snprintf(log, sizeof log, "relay-%s.log", coll);
   int64_t t0 = bench_now_ns();
   *relay = *ok ? bench_relay_start_with(o, s, coll, run->window, log, run->extra_args) : 0;
   *ok = *ok && *relay > 0;
   if (*ok && run->stream) {
      *ok = probe(run, c, coll, sub, relay, why);
      if (*ok && (o->syscalls || o->allocs)) {
         /* Watching: every thread of the relay exists; traced from the first write. */
         bench_systrace_start(trace, s->workdir, *relay, o->allocs);
         *traced_from = 1;
      }
      t0 = bench_now_ns();
      *ok = *ok && bench_stream_write(c, o->database, coll, l, run->per_commit, run->payload, 0);
   }
   int64_t deadline = t0 + (int64_t)(o->timeout_s * 1e9);
   if (*ok && (o->syscalls || o->allocs) && !run->stream) {
      /* Attached once a tenth has arrived: every thread of the relay exists by then. */
      bench_sub_stats_t st;
      *ok = bench_relay_wait(sub, run->events / 10 + 1, relay, deadline, why);
      bench_sub_stats(sub, &st);
      *traced_from = (double)st.distinct;
      bench_systrace_start(trace, s->workdir, *relay, o->allocs);
   }
   *ok = *ok && bench_relay_wait(sub, run->events + (run->stream ? 1 : 0), relay, deadline, why);
   *ok = *ok && wait_cleared(c, o->database, coll, deadline, why);
   return t0;
}

bool
bench_drain_run(const bench_drain_run_t *run, const bench_servers_t *s, mongoc_client_t *c,
                bench_sub_t *sub, bench_drain_t *out)
{
   static int counter;
   char coll[64], log[96], prefix[96];
   snprintf(coll, sizeof coll, "drain%d_%ld", ++counter, (long)getpid());
   snprintf(log, sizeof log, "relay-%s.log", coll);
   snprintf(prefix, sizeof prefix, "outbox/%s/", coll);
   init_out(run, out);
   bench_layout_t l;
   bench_layout_init(&l, run->events, run->entities);
   const char *why = "could not write the backlog";
   bool ok = load(run, c, coll, &l);
   /* The probe in stream mode is event number `events`, one past the measured ones. */
   bench_sub_reset(sub, prefix, 0, run->events + (run->stream ? 1 : 0));
   bench_proc_use_begin(&out->mongod, s->mongod_pid);
   bench_proc_use_begin(&out->mosquitto, s->mosquitto_pid);
   bench_proc_use_begin(&out->self, getpid());
   bench_proc_use_begin(&out->relay, 0);
   pid_t relay = 0;
   bench_systrace_t trace = {0};
   double traced_from = 0;
   int64_t t0 = measure(run, s, c, sub, coll, &l, &relay, &ok, &why, &trace, &traced_from);
   if ((run->opts->syscalls || run->opts->allocs)) {
      bench_systrace_stop(&trace, relay,
                          (double)(run->events + (run->stream ? 1 : 0)) - traced_from,
                          &out->relay_sys);
   }
   int64_t t_end = bench_now_ns();
   out->relay.pid = relay; /* started at ~0 CPU: its total is the interval's */
   use_end(out, relay);
   if (relay > 0 && bench_stop_child(relay, 15) != 0 && ok) {
      why = "the relay did not exit with 0 on SIGTERM";
      ok = false;
   }
   out->ok = ok;
   finish(run, sub, &l, t0, t_end, out);
   if (ok && out->order_violations) {
      why = "events of one entity arrived out of seq order";
      out->ok = ok = false;
   }
   if (!ok) {
      fprintf(stderr, "outbox-bench: drain (%s, %zu events, %zu entities): %s (%zu received)\n",
              out->mode, run->events, run->entities, why, out->received);
      bench_relay_log_tail(s, log);
   } else {
      bench_relay_log_remove(s, log);
   }
   bench_coll_drop(c, run->opts->database, coll);
   bench_layout_free(&l);
   return ok;
}
