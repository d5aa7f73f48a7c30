/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Relay groups: several outbox-relay processes with one name sharing the partitions.
 *   failover: two members under a steady load; one is killed with kill -9; timed from the
 *             kill to the first message of an event written after it to an entity of a
 *             partition the dead member owned (the survivor took the lease after it expired,
 *             swept and published). Repeated `kills` times, the dead member replaced each time.
 *   drain:    1, 2 and 4 members, settled first, drain a backlog written live; aggregate rate
 *             against the sum of the members' separate ceilings (k x one publisher process
 *             alone) and against k publisher processes side by side, CPU per event of each
 *             member over its own partitions' events (from the leases). On a 2-core machine
 *             more members cannot go faster (they share the cores with MongoDB and the
 *             broker): the CPU per event is what lets the scaling on larger hosts be projected.
 * Lease timings are short (ttl 3 s), as in the tests; the failover time scales with the ttl.
 * The writer thread and the subscriber run beside the main thread; the subscriber's arrival
 * times are read while it runs (aligned 64-bit stores and loads: a late read only delays the
 * measurement by one poll).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backlog.h"
#include "bench.h"
#include "drain.h"
#include "group/hash.h"
#include "base/partition.h"
#include "parts.h"
#include "subscriber.h"

#define PARTS 32
#define ENTITIES 400
#define MAX_EVENTS 2000000

static const char *const lease_args[] = {
   "--lease-ttl-ms", "3000", "--lease-renew-ms", "500", "--lease-margin-ms", "1000", NULL};

typedef struct {
   mongoc_client_t *client;
   const char *db, *coll;
   size_t payload;
   int64_t *write_ns;   /* per event n */
   uint32_t *entity_of; /* per event n */
   int64_t round[ENTITIES];
   volatile size_t n; /* events written (read by the main thread) */
   volatile bool stop;
   bool ok;
} writer_t;

static void *
write_loop(void *arg)
{
   writer_t *w = arg;
   mongoc_collection_t *col = mongoc_client_get_collection(w->client, w->db, w->coll);
   size_t e = 0;
   w->ok = true;
   while (!w->stop && w->n < MAX_EVENTS && w->ok) {
      size_t n = w->n;
      w->entity_of[n] = (uint32_t)e;
      w->write_ns[n] = bench_now_ns();
      w->ok = bench_append_one(col, e, w->round[e]++, (int64_t)n, w->payload);
      w->n = n + 1;
      e = (e + 1) % ENTITIES;
      usleep(1000);
   }
   mongoc_collection_destroy(col);
   return NULL;
}

static int
part_of_entity(size_t e)
{
   char id[32];
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   bench_entity_id(id, sizeof id, e);
   v.value.v_utf8.str = id;
   v.value.v_utf8.len = (uint32_t)strlen(id);
   return relay_partition_of(relay_hash_value(&v), PARTS);
}

/* Counts the leases each of `pids` owns (and the partitions of pids[who] in `mine`). */
static int
lease_counts(mongoc_client_t *c, const char *db, const char *name, const pid_t *pids, int n,
             int *counts, int who, relay_partset_t *mine)
{
   mongoc_collection_t *col = mongoc_client_get_collection(c, db, "outbox_relay_state");
   bson_t *filter =
      BCON_NEW("_id.relay", BCON_UTF8(name), "_id.partition", "{", "$exists", BCON_BOOL(true), "}");
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(col, filter, NULL, NULL);
   const bson_t *doc;
   int total = 0;
   memset(counts, 0, sizeof(int) * (size_t)n);
   if (mine) {
      relay_partset_clear(mine);
   }
   while (mongoc_cursor_next(cur, &doc)) {
      bson_iter_t it, p;
      if (!bson_iter_init_find(&it, doc, "owner") || !BSON_ITER_HOLDS_UTF8(&it) ||
          !bson_iter_init(&p, doc) || !bson_iter_find_descendant(&p, "_id.partition", &p)) {
         continue;
      }
      for (int i = 0; i < n; i++) {
         char mark[32];
         snprintf(mark, sizeof mark, "/%d/", (int)pids[i]);
         if (strstr(bson_iter_utf8(&it, NULL), mark)) {
            counts[i]++;
            total++;
            if (mine && i == who) {
               relay_partset_add(mine, bson_iter_int32(&p));
            }
         }
      }
   }
   mongoc_cursor_destroy(cur);
   bson_destroy(filter);
   mongoc_collection_destroy(col);
   return total;
}

/* Waits until `pids` own all partitions, within one of each other. */
static bool
wait_settled(mongoc_client_t *c, const char *db, const char *name, const pid_t *pids, int n,
             double timeout_s)
{
   int64_t deadline = bench_now_ns() + (int64_t)(timeout_s * 1e9);
   int counts[8];
   while (bench_now_ns() < deadline) {
      int lo = PARTS, hi = 0;
      int total = lease_counts(c, db, name, pids, n, counts, -1, NULL);
      for (int i = 0; i < n; i++) {
         lo = counts[i] < lo ? counts[i] : lo;
         hi = counts[i] > hi ? counts[i] : hi;
      }
      if (total == PARTS && hi - lo <= 1) {
         return true;
      }
      usleep(100000);
   }
   return false;
}

/* Time from `kill_ns` to the first arrival of an event written after it to an entity of
 * `orphans`; negative on timeout. */
static double
first_orphan_message(bench_sub_t *sub, writer_t *w, size_t from, const relay_partset_t *orphans,
                     const int *part, int64_t kill_ns, double timeout_s)
{
   int64_t deadline = kill_ns + (int64_t)(timeout_s * 1e9);
   const int64_t *recv = bench_sub_recv_ns(sub);
   while (bench_now_ns() < deadline) {
      int64_t best = 0;
      for (size_t n = from; n < w->n; n++) {
         if (w->write_ns[n] > kill_ns && relay_partset_has(orphans, part[w->entity_of[n]]) &&
             recv[n] && (!best || recv[n] < best)) {
            best = recv[n];
         }
      }
      if (best) {
         return bench_secs(kill_ns, best);
      }
      usleep(5000);
   }
   return -1;
}

static int
cmp_double(const void *a, const void *b)
{
   double x = *(const double *)a, y = *(const double *)b;
   return x < y ? -1 : x > y;
}

static pid_t
start_member(const bench_opts_t *o, const bench_servers_t *s, const char *coll, int i)
{
   char log[96];
   snprintf(log, sizeof log, "relay-%s-%d.log", coll, i);
   return bench_relay_start_with(o, s, coll, o->window, log, lease_args);
}

/* The members' logs are kept only when something failed. */
static void
drop_logs(const bench_servers_t *s, const char *coll, int n)
{
   for (int i = 0; i < n; i++) {
      char log[96];
      snprintf(log, sizeof log, "relay-%s-%d.log", coll, i);
      bench_relay_log_remove(s, log);
   }
}

static void
kill_member(pid_t pid)
{
   kill(pid, SIGKILL);
   waitpid(pid, NULL, 0);
}

/* One kill: the victim's partitions, kill -9, wait for their first message, replace it. */
static bool
one_failover(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c, const char *coll,
             const char *name, bench_sub_t *sub, writer_t *w, pid_t *pids, int k, const int *part,
             double *out)
{
   int counts[2];
   relay_partset_t orphans;
   int victim = k % 2;
   if (!wait_settled(c, o->database, name, pids, 2, 60)) {
      fprintf(stderr, "outbox-bench: failover: the group did not settle\n");
      return false;
   }
   usleep(500000); /* let the load flow through both */
   lease_counts(c, o->database, name, pids, 2, counts, victim, &orphans);
   size_t from = w->n;
   int64_t kill_ns = bench_now_ns();
   kill_member(pids[victim]);
   *out = first_orphan_message(sub, w, from, &orphans, part, kill_ns, 60);
   pids[victim] = start_member(o, s, coll, k + 2);
   return *out >= 0 && pids[victim] > 0;
}

void
bench_group_failover(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                     bench_sub_t *sub, bench_results_t *r)
{
   static int part[ENTITIES];
   bench_failover_t *f = &r->failover;
   char coll[64], name[96], prefix[96];
   pthread_t thread;
   writer_t w = {.db = o->database, .payload = o->payload};
   pid_t pids[2] = {0, 0};
   bool writing = false;

   snprintf(coll, sizeof coll, "failover_%ld", (long)getpid());
   snprintf(name, sizeof name, "bench-%s", coll);
   snprintf(prefix, sizeof prefix, "outbox/%s/", coll);
   *f = (bench_failover_t){.ttl_ms = 3000, .renew_ms = 500, .margin_ms = 1000};
   f->kills = o->mode == BENCH_QUICK ? 3 : o->mode == BENCH_SMOKE ? 1 : 10;
   for (size_t e = 0; e < ENTITIES; e++) {
      part[e] = part_of_entity(e);
   }
   w.coll = coll;
   w.client = mongoc_client_new(s->mongodb_uri);
   w.write_ns = calloc(MAX_EVENTS, sizeof *w.write_ns);
   w.entity_of = calloc(MAX_EVENTS, sizeof *w.entity_of);
   bool ok = bench_coll_prepare(c, o->database, coll) &&
             bench_entities_insert(c, o->database, coll, ENTITIES);
   bench_sub_reset(sub, prefix, 0, MAX_EVENTS);
   for (int i = 0; i < 2 && ok; i++) {
      pids[i] = start_member(o, s, coll, i);
      ok = pids[i] > 0;
   }
   ok = ok && (writing = pthread_create(&thread, NULL, write_loop, &w) == 0);
   for (int k = 0; ok && k < f->kills && k < BENCH_MAX_KILLS; k++) {
      ok = one_failover(o, s, c, coll, name, sub, &w, pids, k, part, &f->failover_s[k]);
      if (o->verbose && ok) {
         fprintf(stderr, "outbox-bench: failover %d: %.2f s\n", k + 1, f->failover_s[k]);
      }
   }
   w.stop = true;
   if (writing) {
      pthread_join(thread, NULL);
   }
   for (int i = 0; i < 2; i++) {
      if (pids[i] > 0) {
         bench_stop_child(pids[i], 15);
      }
   }
   f->ok = ok && w.ok;
   if (f->ok) {
      double sorted[BENCH_MAX_KILLS];
      memcpy(sorted, f->failover_s, sizeof sorted);
      qsort(sorted, (size_t)f->kills, sizeof *sorted, cmp_double);
      f->p50_s = bench_percentile(sorted, (size_t)f->kills, 50);
      f->max_s = sorted[f->kills - 1];
      drop_logs(s, coll, f->kills + 2);
   } else {
      bench_fail(r, "group failover incomplete");
   }
   bench_coll_drop(c, o->database, coll);
   mongoc_client_destroy(w.client);
   free(w.write_ns);
   free(w.entity_of);
}

static bool
wait_cleared(mongoc_client_t *c, const char *db, const char *coll, int64_t deadline)
{
   int pending;
   while ((pending = bench_pending_any(c, db, coll)) == 1 && bench_now_ns() < deadline) {
      usleep(5000);
   }
   return pending == 0;
}

/* Which member (index into pids) holds each partition's lease, -1 for none. False unless
 * every partition has an owner among them. */
static bool
owners(mongoc_client_t *c, const char *db, const char *name, const pid_t *pids, int k, int *owner)
{
   relay_partset_t mine;
   int counts[4], total = 0;
   for (int p = 0; p < PARTS; p++) {
      owner[p] = -1;
   }
   for (int m = 0; m < k; m++) {
      total = lease_counts(c, db, name, pids, k, counts, m, &mine);
      for (int p = 0; p < PARTS; p++) {
         if (relay_partset_has(&mine, p)) {
            owner[p] = m;
         }
      }
   }
   return total == PARTS;
}

/* Each member's events: those of the entities whose partitions it holds. */
static void
member_events(const int *owner, const bench_layout_t *l, int k, size_t *out)
{
   int *part = calloc(l->entities, sizeof *part);
   for (size_t e = 0; e < l->entities; e++) {
      part[e] = part_of_entity(e);
   }
   memset(out, 0, sizeof(size_t) * (size_t)k);
   for (size_t n = 0; n < l->events; n++) {
      int m = owner[part[l->entity_of[n]]];
      if (m >= 0) {
         out[m]++;
      }
   }
   free(part);
}

/* The ceilings this drain is compared with, measured right before it: one publisher process
 * alone (k of them would be the sum of the members' separate ceilings) and k side by side. */
static void
group_ceilings(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub, int k,
               bench_group_drain_t *d)
{
   bench_baseline_t one, together;
   if (bench_baseline_run(o, s, sub, o->events, o->payload, o->window, false, &one)) {
      d->ceiling_one = one.msgs_per_s;
   }
   if (k == 1) {
      d->ceiling_together = d->ceiling_one;
   } else if (bench_baseline_together(o, s, sub, k, o->events, o->payload, o->window, false,
                                      &together)) {
      d->ceiling_together = together.msgs_per_s;
   }
}

/* One drain of o->events events written live to a settled group of `k` members. */
static void
drain_with(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c, bench_sub_t *sub,
           int k, bench_group_drain_t *d)
{
   char coll[64], name[96], prefix[96];
   pid_t pids[4] = {0};
   double cpu0[4] = {0};
   bench_layout_t l;
   size_t entities = o->entities_few < o->events ? o->entities_few : o->events;

   snprintf(coll, sizeof coll, "gdrain%d_%ld", k, (long)getpid());
   snprintf(name, sizeof name, "bench-%s", coll);
   snprintf(prefix, sizeof prefix, "outbox/%s/", coll);
   memset(d, 0, sizeof *d);
   d->members = k;
   d->events = o->events;
   bench_layout_init(&l, o->events, entities);
   bool ok = bench_coll_prepare(c, o->database, coll) &&
             bench_entities_insert(c, o->database, coll, entities);
   for (int i = 0; i < k && ok; i++) {
      pids[i] = start_member(o, s, coll, i);
      ok = pids[i] > 0;
   }
   ok = ok && wait_settled(c, o->database, name, pids, k, 60);
   if (ok) {
      group_ceilings(o, s, sub, k, d);
   }
   int owner0[PARTS], owner1[PARTS];
   bool known = ok && owners(c, o->database, name, pids, k, owner0);
   bench_sub_reset(sub, prefix, 0, o->events);
   for (int i = 0; i < k; i++) {
      cpu0[i] = bench_proc_cpu_s(pids[i]);
   }
   int64_t t0 = bench_now_ns(), deadline = t0 + (int64_t)(o->timeout_s * 1e9);
   ok = ok && bench_stream_write(c, o->database, coll, &l, 1, o->payload, 0) &&
        bench_sub_wait_all(sub, deadline) && wait_cleared(c, o->database, coll, deadline);
   d->seconds = bench_secs(t0, bench_now_ns());
   /* Ownership read again before the members stop: a rebalance during the drain blurs the
    * per-member split, and the report says so. */
   known = known && ok && owners(c, o->database, name, pids, k, owner1);
   d->leases_moved = known && memcmp(owner0, owner1, sizeof owner0) != 0;
   if (known) {
      member_events(owner0, &l, k, d->member_events);
   }
   double cpu = 0;
   for (int i = 0; i < k; i++) {
      d->cpu_s[i] = bench_proc_cpu_s(pids[i]) - cpu0[i];
      cpu += d->cpu_s[i];
      bench_stop_child(pids[i], 15);
   }
   d->ok = ok;
   if (ok) {
      drop_logs(s, coll, k);
   }
   d->msgs_per_s = ok ? (double)o->events / d->seconds : 0;
   d->cpu_us_per_event = ok ? cpu * 1e6 / (double)o->events : 0;
   for (int i = 0; ok && i < k; i++) {
      d->member_us_per_event[i] =
         d->member_events[i] ? d->cpu_s[i] * 1e6 / (double)d->member_events[i] : 0;
   }
   bench_coll_drop(c, o->database, coll);
   bench_layout_free(&l);
}

void
bench_group_drain(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                  bench_sub_t *sub, bench_results_t *r)
{
   static const int members[] = {1, 2, 4};
   for (int i = 0; i < 3; i++) {
      if (o->verbose) {
         fprintf(stderr, "outbox-bench: group drain with %d members\n", members[i]);
      }
      drain_with(o, s, c, sub, members[i], &r->group[i]);
      r->n_group = i + 1;
      if (!r->group[i].ok) {
         bench_fail(r, "group drain with %d members incomplete", members[i]);
      }
   }
}
