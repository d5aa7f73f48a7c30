/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Isolated members (testMemberFault "isolate") and what their heal rolls back. An isolated
 * member answers its own clients but neither replicates nor is seen by the others. An
 * isolated primary keeps taking writes until it notices it lost the majority
 * (topology/topology.c): they go to a branch (txn.h, md_txn_begin_branch) that sees the
 * data as of the isolation plus its own writes, which the rest of the set never sees. At
 * the heal, if the set elected a primary of a newer term meanwhile, the member rejoins it
 * and, as MongoDB's rollback does (src/mongo/db/repl/rollback_impl.cpp), undoes every
 * write the set never had: the branch is discarded, logged and listed. Without a newer
 * term its writes join the history instead. The member's branch is owned by the server
 * (srv->branches); callers hold the server lock.
 */
#include <stdio.h>
#include <string.h>

#include "commands/commands.h"
#include "topology/replication.h"

md_txn_t *
md_cmd_branch(const md_cmd_t *c)
{
   return c->srv->branches[c->conn->member];
}

void
md_isolation_start(md_server_t *srv, int m)
{
   if (srv->topo.members[m].state == MD_MEMBER_PRIMARY && !srv->branches[m]) {
      srv->branches[m] = md_txn_begin_branch(&srv->data.txns);
      srv->branches[m]->cut_time = srv->data.oplog.last;
      srv->branches[m]->branch_time = srv->data.oplog.last;
   }
}

/* As MongoDB r6.0's primary gives each write an optime of its own term, replicated or not
 * (the oplog timestamp comes from the VectorClock's clusterTime tick, src/mongo/db/
 * vector_clock_mongod.cpp), an isolated primary's writes move its own clock: a causal
 * session then waits on it for them (cmd-causal.c). The set's clock does not move: the
 * branch's times reach the others only as a client gossips them (commands.c). */
void
md_isolation_tick(md_cmd_t *c, size_t ops_before)
{
   md_txn_t *branch = md_cmd_branch(c);
   if (!branch || branch->n_ops <= ops_before) {
      return;
   }
   md_ts_t *t = &branch->branch_time;
   uint32_t secs = (uint32_t)((md_wall_ms() + c->srv->data.oplog.wall_offset_ms) / 1000);
   if (secs > t->t) {
      *t = (md_ts_t){.t = secs, .i = 1};
   } else {
      t->i++;
   }
   c->has_op_time = true;
   c->op_time = *t;
}

md_ts_t
md_isolation_cluster_time(const md_server_t *srv, int m)
{
   const md_txn_t *branch = srv->branches[m];
   md_ts_t set = srv->data.oplog.last;
   return branch && md_ts_cmp(branch->branch_time, set) > 0 ? branch->branch_time : set;
}

md_ts_t
md_isolation_commit_time(const md_server_t *srv, int m)
{
   /* Its commit point stays where it was at the cut (topology/replication.c); the set's
    * clock, which gossip may move on past the newest entry, is no measure of it. */
   const md_txn_t *branch = srv->branches[m];
   md_ts_t t = md_repl_seq_ts(&srv->data.oplog, md_repl_member_commit(&srv->topo, m));
   return branch && md_ts_cmp(t, branch->cut_time) > 0 ? branch->cut_time : t;
}

static const char *
op_name(md_op_t op)
{
   static const char *const names[] = {"insert", "update", "replace",     "delete",
                                       "drop",   "rename", "dropDatabase"};
   return op <= MD_OP_DROP_DATABASE ? names[op] : "unknown";
}

/* Records one undone write: what MongoDB's rollback writes to its rollback data files
 * (the documents it changed) and counts in its summary. */
static void
log_undone(md_server_t *srv, int m, const md_oplog_entry_t *e)
{
   char key[16];
   const char *k;
   bson_t d, doc;
   bson_uint32_to_string(srv->n_rolled_back++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(srv->rolled_back, k, &d);
   BSON_APPEND_INT32(&d, "rbid", srv->rbid);
   BSON_APPEND_UTF8(&d, "member", srv->topo.members[m].host_port);
   char *ns = bson_strdup_printf("%s.%s", e->db, e->coll ? e->coll : "$cmd");
   BSON_APPEND_UTF8(&d, "ns", ns);
   bson_free(ns);
   BSON_APPEND_UTF8(&d, "op", op_name(e->op));
   if (md_oplog_doc(e->doc_key, &doc)) {
      BSON_APPEND_DOCUMENT(&d, "documentKey", &doc);
   }
   if (md_oplog_doc(e->full_doc, &doc)) {
      BSON_APPEND_DOCUMENT(&d, "fullDocument", &doc);
   }
   if (md_oplog_doc(e->update_desc, &doc)) {
      BSON_APPEND_DOCUMENT(&d, "updateDescription", &doc);
   }
   bson_append_document_end(srv->rolled_back, &d);
}

/* The member rejoins a set that elected another primary: every write of its branch is
 * undone (the branch is discarded by the caller), logged as 6.0 logs its "Rollback
 * summary" (RollbackImpl::_summarizeRollback) and kept for testRollbackLog; the rollback
 * id rises (RollbackImpl increments it, serverStatus repl.rbid shows it). The data and
 * the history never held these writes, so change streams never showed them. */
static void
roll_back(md_server_t *srv, int m, const md_txn_t *branch)
{
   srv->rbid++;
   /* Its change streams die with the operations 6.0 kills on entering ROLLBACK; waiting
    * getMores wake to fail (commands/cmd-getmore.c). */
   md_cursors_roll_back(&srv->data.cursors, m);
   md_oplog_wake(&srv->data.oplog);
   for (size_t i = 0; i < branch->n_ops; i++) {
      log_undone(srv, m, branch->ops[i]);
   }
   const md_topology_t *topo = &srv->topo;
   /* Logged with or without --verbose, as mongod always logs its summary. */
   fprintf(stderr,
           "test-mongod: Rollback summary: member %s, syncSource %s, rbid %d, %zu write(s) "
           "rolled back\n",
           topo->members[m].host_port,
           topo->primary >= 0 ? topo->members[topo->primary].host_port : "none", srv->rbid,
           branch->n_ops);
}

void
md_isolation_heal(md_server_t *srv, int m)
{
   md_txn_t *branch = srv->branches[m];
   if (!branch) {
      return;
   }
   srv->branches[m] = NULL;
   bson_error_t error;
   if (srv->topo.members[m].term == srv->topo.term) {
      /* Nobody else was elected meanwhile: its writes are the set's history (and it is
       * still primary, or the most up-to-date candidate of the next election). */
      if (!md_txn_commit(&srv->data.txns, branch, srv->data.store, &srv->data.oplog, &error)) {
         md_log(srv, "member %d rejoins: its writes conflict (%s)", m, error.message);
      }
   } else {
      roll_back(srv, m, branch);
   }
   md_txn_free(&srv->data.txns, branch);
}

/* What an isolated primary cannot do here: DDL writes the store directly, and a
 * transaction would commit into it. */
bool
md_isolation_check(const md_cmd_t *c, bool in_txn, bool primary_only, bson_error_t *error)
{
   static const char *const branch_writes[] = {"insert",        "update",        "delete",
                                               "findAndModify", "findandmodify", NULL};
   if (!md_cmd_branch(c)) {
      return true;
   }
   bool write = false;
   for (int i = 0; branch_writes[i]; i++) {
      write = write || strcmp(branch_writes[i], c->name) == 0;
   }
   if (in_txn || (primary_only && !write)) {
      return tm_error_set(error, 2, "test-mongod does not emulate %s on an isolated primary",
                          in_txn ? "transactions" : c->name);
   }
   return true;
}

void
md_isolation_wait_write_concern(md_cmd_t *c, int64_t deadline)
{
   /* Nobody replicates from an isolated primary: its write waits until wtimeout, or fails
    * once it steps down (its stepdown comes from the election thread, which does not
    * signal the history's waiters: hence the wait in slices). */
   md_server_t *srv = c->srv;
   const md_member_t *me = &srv->topo.members[c->conn->member];
   while (!atomic_load(&srv->stopping)) {
      if (me->state != MD_MEMBER_PRIMARY) {
         md_write_concern_stepped_down(c->cmd, c->reply);
         return;
      }
      if (md_now_ms() >= deadline) {
         md_write_concern_timed_out(c->cmd, c->reply);
         return;
      }
      int64_t slice = md_now_ms() + 50;
      md_oplog_wait(&srv->data.oplog, &srv->data.lock, slice < deadline ? slice : deadline);
   }
}

bool
md_cmd_test_rollback_log(md_cmd_t *c, bson_error_t *error)
{
   if (strcmp(c->db, "admin") != 0) {
      return tm_error_set(error, 13,
                          "testRollbackLog may only be run against the admin "
                          "database.");
   }
   BSON_APPEND_INT32(c->reply, "rbid", c->srv->rbid);
   BSON_APPEND_ARRAY(c->reply, "rolledBack", c->srv->rolled_back);
   return true;
}
