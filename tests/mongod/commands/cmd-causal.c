/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Causal consistency on a member: readConcern {afterClusterTime} makes a read wait until
 * the member has applied every write up to that cluster time (and, with level "majority",
 * until the majority commit point has passed it), as MongoDB r6.0 does in
 * src/mongo/db/read_concern_mongod.cpp (waitForReadConcernImpl: 72 InvalidOptions for a
 * time past the node's cluster time, then waitUntilOpTimeForRead, interrupted by maxTimeMS
 * with 50 MaxTimeMSExpired). A read on a secondary answers with the time it read at as its
 * operationTime (its last applied write, or the commit point for "majority"), as 6.0's
 * computeOperationTime does, so a causal session never takes a newer time than it saw.
 * Runs in the dispatcher with the server lock held; the wait releases it.
 */
#include <string.h>

#include "commands/commands.h"
#include "topology/replication.h"

/* How far ahead of the wall clock a gossiped time may be: 6.0's
 * maxAcceptableLogicalClockDriftSecs default (one year). */
#define MAX_DRIFT_SECS (365u * 24 * 3600)

/* The reads whose operationTime on a secondary is the time they read at. */
static const char *const reads[] = {"find", "aggregate", "count", "distinct", NULL};

/* The command's readConcern.afterClusterTime, if it has one. */
static bool
after_cluster_time(const bson_t *cmd, md_ts_t *ts)
{
   bson_iter_t it, rc;
   if (!bson_iter_init_find(&it, cmd, "readConcern") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
       !bson_iter_recurse(&it, &rc) || !bson_iter_find(&rc, "afterClusterTime") ||
       !BSON_ITER_HOLDS_TIMESTAMP(&rc)) {
      return false;
   }
   bson_iter_timestamp(&rc, &ts->t, &ts->i);
   return true;
}

static bool
majority_level(const bson_t *cmd)
{
   bson_iter_t it, rc;
   return bson_iter_init_find(&it, cmd, "readConcern") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
          bson_iter_recurse(&it, &rc) && bson_iter_find(&rc, "level") &&
          BSON_ITER_HOLDS_UTF8(&rc) && strcmp(bson_iter_utf8(&rc, NULL), "majority") == 0;
}

/* The position the member reads at now (applied, or the commit point for "majority"). */
static uint64_t
position_now(md_cmd_t *c, bool majority, int64_t *next_ms)
{
   md_server_t *srv = c->srv;
   md_repl_advance(&srv->topo, &srv->data.oplog, md_wall_ms(), next_ms);
   return majority ? md_repl_member_commit(&srv->topo, c->conn->member)
                   : srv->topo.members[c->conn->member].applied_seq;
}

/* Waits until the member's read position covers every entry up to `target` (exclusive
 * sequence number), the command's maxTimeMS passes (50) or the server stops (11600). */
static bool
wait_for_position(md_cmd_t *c, bool majority, uint64_t target, bson_error_t *error)
{
   md_server_t *srv = c->srv;
   for (;;) {
      int64_t next;
      if (position_now(c, majority, &next) >= target) {
         return true;
      }
      if (atomic_load(&srv->stopping)) {
         return tm_error_set(error, 11600, "interrupted at shutdown");
      }
      int64_t now = md_now_ms();
      if (now >= c->deadline_ms) {
         return tm_error_set(error, 50, "operation exceeded time limit");
      }
      /* A lagging member applies the next entry at `next` (wall clock, as the history's
       * entries are stamped); writes, pause/resume and lag changes wake the history. */
      int64_t until = next == INT64_MAX ? c->deadline_ms : now + (next - md_wall_ms());
      md_oplog_wait(&srv->data.oplog, &srv->data.lock,
                    until < c->deadline_ms ? until : c->deadline_ms);
   }
}

/* An isolated primary reads its branch, which holds all it wrote; its "majority" reads
 * read its committed snapshot, frozen at the cut (md_isolation_commit_time), which never
 * reaches a time of its own writes: as 6.0's waitUntilOpTimeForRead, which for "majority"
 * waits on the committed snapshot (replication_coordinator_impl.cpp,
 * _waitUntilOpTime with getCurrentCommittedSnapshotOpTime), the read waits until maxTimeMS
 * (50), or until the heal ends the branch (then it waits as any member's does). */
static bool
wait_on_branch(md_cmd_t *c, bool majority, md_ts_t after, bson_error_t *error)
{
   md_server_t *srv = c->srv;
   int m = c->conn->member;
   while (majority && md_cmd_branch(c) && md_ts_cmp(after, md_isolation_commit_time(srv, m)) > 0) {
      if (atomic_load(&srv->stopping)) {
         return tm_error_set(error, 11600, "interrupted at shutdown");
      }
      int64_t now = md_now_ms();
      if (now >= c->deadline_ms) {
         return tm_error_set(error, 50, "operation exceeded time limit");
      }
      /* The heal comes from a command on another connection, which does not signal the
       * history's waiters when nothing is written: hence the slices. */
      md_oplog_wait(&srv->data.oplog, &srv->data.lock,
                    now + 50 < c->deadline_ms ? now + 50 : c->deadline_ms);
   }
   return true;
}

bool
md_cmd_wait_read_concern(md_cmd_t *c, bson_error_t *error)
{
   md_server_t *srv = c->srv;
   md_ts_t after;
   bool majority = majority_level(c->cmd);
   if (after_cluster_time(c->cmd, &after)) {
      md_ts_t now = md_isolation_cluster_time(srv, c->conn->member);
      if (md_ts_cmp(after, now) > 0) {
         return tm_error_set(error, 72,
                             "readConcern afterClusterTime value must not be greater "
                             "than the current clusterTime. Requested clusterTime: "
                             "{ ts: Timestamp(%u, %u) }; current clusterTime: { ts: "
                             "Timestamp(%u, %u) }",
                             after.t, after.i, now.t, now.i);
      }
      if (!wait_on_branch(c, majority, after, error)) {
         return false;
      }
      /* Everything written at or before `after`: the entries below the first one after
       * it. */
      if (srv->topo.n > 1 && !md_cmd_branch(c) &&
          !wait_for_position(c, majority, md_oplog_seek(&srv->data.oplog, after, false), error)) {
         return false;
      }
   }
   bool is_read = false;
   for (int i = 0; reads[i]; i++) {
      is_read = is_read || strcmp(reads[i], c->name) == 0;
   }
   md_txn_t *branch = md_cmd_branch(c);
   if (is_read && branch) {
      /* What it read at: its own newest write, or its committed snapshot. */
      c->has_op_time = true;
      c->op_time = majority ? md_isolation_commit_time(srv, c->conn->member) : branch->branch_time;
   } else if (is_read && srv->topo.n > 1 && c->conn->member != srv->topo.primary) {
      c->has_op_time = true;
      c->op_time = md_repl_seq_ts(&srv->data.oplog, position_now(c, majority, NULL));
   }
   return true;
}

/* A client's $clusterTime (drivers gossip the newest they saw, from any member, maybe an
 * isolated primary's branch that was rolled back since) moves the set's clock forward and
 * never back, as 6.0's VectorClock::gossipIn advances the cluster time
 * (src/mongo/db/vector_clock.cpp; its signature is not checked here, every key is zero):
 * the next write is then stamped after it, as 6.0's oplog timestamps come from that clock.
 * A time more than a year ahead of the wall clock is ignored (6.0 refuses it, 262
 * ClusterTimeFailsRateLimiter; not emulated). */
void
md_cmd_gossip_in(md_server_t *srv, const bson_t *cmd)
{
   bson_iter_t it;
   md_ts_t ts;
   if (!bson_iter_init_find(&it, cmd, "$clusterTime") || !BSON_ITER_HOLDS_DOCUMENT(&it) ||
       !bson_iter_recurse(&it, &it) || !bson_iter_find(&it, "clusterTime") ||
       !BSON_ITER_HOLDS_TIMESTAMP(&it)) {
      return;
   }
   bson_iter_timestamp(&it, &ts.t, &ts.i);
   uint64_t limit = (uint64_t)(md_wall_ms() / 1000) + MAX_DRIFT_SECS;
   if (ts.t <= limit && md_ts_cmp(ts, srv->data.oplog.last) > 0) {
      srv->data.oplog.last = ts;
   }
}
