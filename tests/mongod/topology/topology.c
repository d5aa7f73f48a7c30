/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Who is primary, and elections (see topology.h): the roles of the members of one data set.
 * Every change bumps every member's topologyVersion counter (each member's hello changes:
 * its own state or the `primary` it names) and calls `changed`. Callers hold the server lock.
 */
#include "topology/topology.h"

#include <stdlib.h>
#include <sys/time.h>

int64_t
md_wall_ms(void)
{
   struct timeval tv;
   gettimeofday(&tv, NULL);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

void
md_topology_init(md_topology_t *topo, int n, int64_t election_timeout_ms)
{
   topo->n = n > 0 ? n : 1;
   topo->members = calloc((size_t)topo->n, sizeof *topo->members);
   for (int i = 0; i < topo->n; i++) {
      md_member_t *m = &topo->members[i];
      m->listen_fd = -1;
      m->lag_ms = -1;
      m->state = i == 0 ? MD_MEMBER_PRIMARY : MD_MEMBER_SECONDARY;
      m->term = 1;
      bson_oid_init(&m->process_id, NULL);
   }
   topo->primary = 0;
   topo->term = 1;
   topo->election_timeout_ms = election_timeout_ms;
   topo->election_ms = md_wall_ms();
}

void
md_topology_destroy(md_topology_t *topo)
{
   free(topo->members);
   topo->members = NULL;
}

void
md_topology_election_id(int64_t term, bson_oid_t *oid)
{
   uint8_t b[12] = {0x7f, 0xff, 0xff, 0xff};
   for (int i = 0; i < 8; i++) {
      b[4 + i] = (uint8_t)((uint64_t)term >> (56 - 8 * i));
   }
   bson_oid_init_from_data(oid, b);
}

static void
announce(md_topology_t *topo)
{
   for (int i = 0; i < topo->n; i++) {
      topo->members[i].counter++;
   }
   if (topo->changed) {
      topo->changed(topo->changed_ctx);
   }
}

/* Whether the reachable members are a majority of the set (who can win or keep an
 * election). */
static bool
majority_up(const md_topology_t *topo)
{
   int up = 0;
   for (int i = 0; i < topo->n; i++) {
      up += topo->members[i].reach == MD_REACH_UP;
   }
   return up > topo->n / 2;
}

bool
md_topology_electable(const md_topology_t *topo, int m, int64_t now_ms)
{
   const md_member_t *member = &topo->members[m];
   return member->state == MD_MEMBER_SECONDARY && member->electable_after_ms <= now_ms &&
          member->reach == MD_REACH_UP && majority_up(topo);
}

void
md_topology_set_reach(md_topology_t *topo, int m, md_reach_t reach, int64_t now_ms)
{
   md_member_t *member = &topo->members[m];
   member->reach = reach;
   member->isolated_ms = reach == MD_REACH_ISOLATE ? now_ms : 0;
   if (reach == MD_REACH_UP) {
      if (member->state == MD_MEMBER_PRIMARY && topo->primary < 0 && member->term == topo->term) {
         topo->primary = m; /* back before anyone else was elected: still the primary */
      } else if (member->state == MD_MEMBER_PRIMARY && m != topo->primary) {
         member->state = MD_MEMBER_SECONDARY; /* a stale primary steps down at once */
      }
      member->term = topo->term; /* a heartbeat tells it the current term */
   }
   if (reach != MD_REACH_UP && m == topo->primary) {
      /* Unreachable: a secondary from now on (nobody can ask it). Isolated: it stays
       * primary for its clients, but the others elect another. */
      member->state = reach == MD_REACH_ISOLATE ? MD_MEMBER_PRIMARY : MD_MEMBER_SECONDARY;
      topo->primary = -1;
      topo->no_primary_since_ms = now_ms;
   }
   bool sees_majority = majority_up(topo);
   if (topo->primary >= 0 && !sees_majority && !topo->majority_lost_ms) {
      topo->majority_lost_ms = now_ms;
   } else if (sees_majority) {
      topo->majority_lost_ms = 0;
   }
   announce(topo);
}

void
md_topology_elect(md_topology_t *topo, int m, int64_t now_ms)
{
   if (topo->primary >= 0) {
      topo->members[topo->primary].state = MD_MEMBER_SECONDARY;
   }
   topo->members[m].state = MD_MEMBER_PRIMARY;
   topo->primary = m;
   topo->term++;
   for (int i = 0; i < topo->n; i++) {
      if (topo->members[i].reach == MD_REACH_UP) {
         topo->members[i].term = topo->term; /* the voters learn the new term */
      }
   }
   topo->election_ms = now_ms;
   topo->majority_lost_ms = 0;
   announce(topo);
}

int
md_topology_candidate(const md_topology_t *topo, int64_t now_ms)
{
   /* The newest applied position wins (a voter refuses a candidate behind it); among
    * equals, the first after the last primary, so that a stepdown moves the role on. */
   int last = topo->primary, best = -1;
   for (int k = 1; k <= topo->n; k++) {
      int m = (last + k + topo->n) % topo->n;
      if (md_topology_electable(topo, m, now_ms) &&
          (best < 0 || topo->members[m].applied_seq > topo->members[best].applied_seq)) {
         best = m;
      }
   }
   return best;
}

void
md_topology_step_down(md_topology_t *topo, int64_t secs, int64_t now_ms, bool handoff)
{
   int old = topo->primary;
   if (old < 0) {
      return;
   }
   topo->members[old].state = MD_MEMBER_SECONDARY;
   topo->members[old].electable_after_ms = now_ms + secs * 1000;
   int next = handoff ? md_topology_candidate(topo, now_ms) : -1;
   if (next >= 0) {
      topo->primary = old; /* md_topology_elect demotes it again: one announcement */
      topo->members[old].state = MD_MEMBER_PRIMARY;
      md_topology_elect(topo, next, now_ms);
      return;
   }
   topo->primary = -1;
   topo->no_primary_since_ms = now_ms;
   announce(topo);
}

/* An isolated primary hears from nobody: it steps down once it sees that a majority is
 * down (r6.0 topology_coordinator.cpp: a member is down after heartbeatTimeoutSecs
 * without a heartbeat reply, and the primary's "can't see a majority" check runs as
 * heartbeat replies, every heartbeatIntervalMillis = 2 s, are processed). The others
 * elect a primary once electionTimeoutMillis passes without hearing from it. Here the
 * heartbeat timeout is the election timeout (both 10 s in MongoDB), so the isolated
 * primary notices one heartbeat interval after the others may elect: for about 2 s the
 * set has two primaries. Returns the next moment worth checking (INT64_MAX: none). */
#define MD_HEARTBEAT_INTERVAL_MS 2000
static int64_t
isolated_primaries_step_down(md_topology_t *topo, int64_t now_ms)
{
   int64_t next = INT64_MAX;
   for (int i = 0; i < topo->n; i++) {
      md_member_t *m = &topo->members[i];
      if (m->state != MD_MEMBER_PRIMARY || m->reach != MD_REACH_ISOLATE) {
         continue;
      }
      int64_t due = m->isolated_ms + topo->election_timeout_ms + MD_HEARTBEAT_INTERVAL_MS;
      if (now_ms < due) {
         next = due < next ? due : next;
         continue;
      }
      m->state = MD_MEMBER_SECONDARY;
      announce(topo);
   }
   return next;
}

/* The majority side: a primary without a majority steps down, a set without a primary
 * elects one. */
static int64_t
tick_set(md_topology_t *topo, int64_t now_ms)
{
   if (topo->primary >= 0 && topo->majority_lost_ms) {
      int64_t due = topo->majority_lost_ms + topo->election_timeout_ms;
      if (now_ms < due) {
         return due;
      }
      topo->members[topo->primary].state = MD_MEMBER_SECONDARY;
      topo->primary = -1;
      topo->no_primary_since_ms = now_ms;
      topo->majority_lost_ms = 0;
      announce(topo);
   }
   if (topo->primary >= 0) {
      return INT64_MAX;
   }
   int64_t due = topo->no_primary_since_ms + topo->election_timeout_ms;
   int m = md_topology_candidate(topo, now_ms);
   if (m >= 0 && now_ms >= due) {
      md_topology_elect(topo, m, now_ms);
      return INT64_MAX;
   }
   if (m >= 0) {
      return due;
   }
   if (!majority_up(topo)) {
      return INT64_MAX; /* a heal (md_topology_set_reach) wakes the election thread */
   }
   /* Nobody electable yet: check again when the first stepdown or freeze period ends. */
   int64_t next = INT64_MAX;
   for (int i = 0; i < topo->n; i++) {
      int64_t t = topo->members[i].electable_after_ms;
      if (t > now_ms && t < next) {
         next = t;
      }
   }
   return next != INT64_MAX && next < due ? due : next;
}

int64_t
md_topology_tick(md_topology_t *topo, int64_t now_ms)
{
   int64_t isolated_next = isolated_primaries_step_down(topo, now_ms);
   int64_t next = tick_set(topo, now_ms);
   return isolated_next < next ? isolated_next : next;
}
