/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Applied positions and the majority commit point (see replication.h). Pure computation
 * over the members and the history, run under the server lock by whoever needs a
 * position: a change-stream getMore, a write waiting for its write concern, an election.
 */
#include "topology/replication.h"

#include <stdlib.h>

/* Advances one secondary; returns when it would take its next entry (INT64_MAX: never). */
static int64_t
advance_member(md_member_t *m, int64_t lag_ms, const md_oplog_t *log, int64_t now_ms)
{
   if (m->applied_seq < log->first_seq) {
      m->applied_seq = log->first_seq; /* evicted entries are history for everyone */
   }
   if (m->paused || m->reach != MD_REACH_UP) {
      return INT64_MAX;
   }
   while (m->applied_seq < log->next_seq) {
      const md_oplog_entry_t *e = md_oplog_at(log, m->applied_seq);
      if (e && e->wall_ms + lag_ms > now_ms) {
         return e->wall_ms + lag_ms;
      }
      m->applied_seq++;
   }
   return INT64_MAX;
}

static int
desc(const void *a, const void *b)
{
   uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
   return x < y ? 1 : x > y ? -1 : 0;
}

uint64_t
md_repl_advance(md_topology_t *topo, const md_oplog_t *log, int64_t now_ms, int64_t *next_ms)
{
   int64_t next = INT64_MAX;
   uint64_t applied[64];
   /* Entries carry the primary's clock: compare them with it. */
   now_ms += topo->primary >= 0 ? topo->members[topo->primary].clock_offset_ms : 0;
   int n = topo->n < 64 ? topo->n : 64;
   for (int i = 0; i < n; i++) {
      md_member_t *m = &topo->members[i];
      if (i == topo->primary) {
         m->applied_seq = log->next_seq;
      } else {
         int64_t lag = m->lag_ms >= 0 ? m->lag_ms : topo->replication_lag_ms;
         int64_t t = advance_member(m, lag, log, now_ms);
         next = t < next ? t : next;
      }
      applied[i] = m->applied_seq;
   }
   if (next_ms) {
      *next_ms = next;
   }
   qsort(applied, (size_t)n, sizeof applied[0], desc);
   uint64_t commit = applied[n / 2]; /* the newest position held by n/2 + 1 members */
   /* Only the members in contact learn it. In r6.0 the primary computes the commit point
    * from the positions the others report (replication_coordinator_impl.cpp's
    * _updateLastCommittedOpTimeAndWallTime calls topology_coordinator.cpp's
    * updateLastCommittedOpTimeAndWallTime), secondaries learn it from their sync source
    * and heartbeats (advanceLastCommittedOpTimeAndWallTime); each then moves its own
    * committed snapshot (_updateCommittedSnapshot), which "majority" reads read
    * (ReadSource::kMajorityCommitted at getCurrentCommittedSnapshotOpTime). A member cut
    * off hears nothing, so its snapshot stays where it was: a cut-off primary's own later
    * writes are never in it, as nobody applies them. */
   for (int i = 0; i < n; i++) {
      if (topo->members[i].reach == MD_REACH_UP) {
         topo->members[i].commit_seq = commit;
      }
   }
   return commit;
}

uint64_t
md_repl_member_commit(const md_topology_t *topo, int m)
{
   const md_member_t *member = &topo->members[m];
   return member->commit_seq < member->applied_seq ? member->commit_seq : member->applied_seq;
}

int
md_repl_count_applied(const md_topology_t *topo, uint64_t seq)
{
   int count = 0;
   for (int i = 0; i < topo->n; i++) {
      count += topo->members[i].applied_seq >= seq;
   }
   return count;
}

md_ts_t
md_repl_seq_ts(const md_oplog_t *log, uint64_t seq)
{
   const md_oplog_entry_t *e = seq > 0 ? md_oplog_at(log, seq - 1) : NULL;
   if (seq >= log->next_seq) {
      return log->last;
   }
   return e ? e->ts : log->start;
}
