/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The replica-set commands: replSetGetStatus, replSetGetConfig, replSetStepDown, replSetStepUp,
 * replSetFreeze, and the check before every command that a secondary refuses what only a primary
 * runs. Arguments, codes and messages as MongoDB r6.0: src/mongo/db/repl/repl_set_commands.cpp
 * (argument checks), replication_coordinator_impl.cpp (stepDown's wait for an electable
 * secondary, 262; stepUpIfEligible's "Election failed."), topology_coordinator.cpp
 * (prepareFreezeResponse), service_entry_point_common.cpp and command_can_run_here.cpp (which
 * commands a secondary runs: 10107 "not primary", 13435 "not primary and secondaryOk=false",
 * "not master ..." for clients that never said hello). Runs with the server lock held; the
 * roles themselves are topology/topology.c's.
 */
#include <string.h>
#include <time.h>

#include "commands/commands.h"
#include "net/election.h"
#include "topology/replication.h"

/* Commands a secondary never runs (AllowedOnSecondary::kNever in 6.0). */
static const char *const primary_only[] = {"insert",
                                           "update",
                                           "delete",
                                           "findAndModify",
                                           "findandmodify",
                                           "create",
                                           "drop",
                                           "dropDatabase",
                                           "createIndexes",
                                           "dropIndexes",
                                           "deleteIndexes",
                                           "renameCollection",
                                           "collMod",
                                           "commitTransaction",
                                           "abortTransaction",
                                           "createUser",
                                           "updateUser",
                                           "dropUser",
                                           NULL};
/* Reads a secondary runs when the client opts in with a read preference (kOptIn). */
static const char *const opt_in[] = {"find",          "aggregate",       "count",
                                     "distinct",      "listCollections", "listIndexes",
                                     "listDatabases", "usersInfo",       NULL};

static bool
listed(const char *const *names, const char *name)
{
   for (int i = 0; names[i]; i++) {
      if (strcmp(names[i], name) == 0) {
         return true;
      }
   }
   return false;
}

/* ReadPreferenceSetting::canRunOnSecondary: any mode but primary. */
static bool
secondary_ok(const bson_t *cmd)
{
   bson_iter_t it, rp;
   return bson_iter_init_find(&it, cmd, "$readPreference") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
          bson_iter_recurse(&it, &rp) && bson_iter_find(&rp, "mode") && BSON_ITER_HOLDS_UTF8(&rp) &&
          strcmp(bson_iter_utf8(&rp, NULL), "primary") != 0;
}

bool
md_cmd_check_member(md_cmd_t *c, bson_error_t *error)
{
   const md_member_t *me = &c->srv->topo.members[c->conn->member];
   bool never = listed(primary_only, c->name);
   bool in_txn = bson_has_field(c->cmd, "txnNumber") && bson_has_field(c->cmd, "autocommit");
   bool could_opt_in = listed(opt_in, c->name) && !in_txn;
   if (!md_isolation_check(c, in_txn, never, error)) {
      return false;
   }
   /* commandCanRunHere: the primary runs everything; so does any member for `local`. */
   if (me->state == MD_MEMBER_PRIMARY || strcmp(c->db, "local") == 0) {
      return true;
   }
   if (!never && !in_txn && !listed(opt_in, c->name)) {
      return true; /* kAlways: hello, getMore, killCursors, the replSet commands ... */
   }
   if (could_opt_in && secondary_ok(c->cmd)) {
      return true;
   }
   if (could_opt_in) {
      return tm_error_set(error, 13435,
                          c->conn->hello_ok ? "not primary and secondaryOk=false"
                                            : "not master and slaveOk=false");
   }
   return tm_error_set(error, 10107, c->conn->hello_ok ? "not primary" : "not master");
}

/* Whether the command asks for readConcern level `level`. */
static bool
read_concern_is(const bson_t *cmd, const char *level)
{
   bson_iter_t it, rc;
   return bson_iter_init_find(&it, cmd, "readConcern") && BSON_ITER_HOLDS_DOCUMENT(&it) &&
          bson_iter_recurse(&it, &rc) && bson_iter_find(&rc, "level") &&
          BSON_ITER_HOLDS_UTF8(&rc) && strcmp(bson_iter_utf8(&rc, NULL), level) == 0;
}

uint64_t
md_cmd_read_position(md_cmd_t *c)
{
   md_server_t *srv = c->srv;
   if (srv->topo.n == 1) {
      return srv->data.oplog.next_seq; /* every write is applied and committed at once */
   }
   /* A secondary reads its own copy, at its last applied batch (6.0 reads secondaries at
    * lastApplied: src/mongo/db/storage/snapshot_helper.cpp); "majority" reads the
    * committed snapshot (replication_coordinator_impl.cpp, _currentCommittedSnapshot):
    * the member's own, which stops at the cut on an isolated one. */
   md_repl_advance(&srv->topo, &srv->data.oplog, md_wall_ms(), NULL);
   return md_cmd_reads_majority(c) ? md_repl_member_commit(&srv->topo, c->conn->member)
                                   : srv->topo.members[c->conn->member].applied_seq;
}

bool
md_cmd_reads_majority(const md_cmd_t *c)
{
   return read_concern_is(c->cmd, "majority");
}

static const char *
state_str(md_member_state_t state)
{
   return state == MD_MEMBER_PRIMARY ? "PRIMARY" : "SECONDARY";
}

/* The fields below are 6.0's (r6.0 src/mongo/db/repl/topology_coordinator.cpp,
 * prepareStatusResponse; the optimes from replication_coordinator_impl.cpp). */
static void
append_optime(bson_t *doc, const char *name, md_ts_t ts, int64_t term)
{
   bson_t op;
   BSON_APPEND_DOCUMENT_BEGIN(doc, name, &op);
   BSON_APPEND_TIMESTAMP(&op, "ts", ts.t, ts.i);
   BSON_APPEND_INT64(&op, "t", term);
   bson_append_document_end(doc, &op);
}

/* Member i's sync source: the primary for a secondary, none ("" and -1) for the primary
 * or while the set has none. */
static void
append_sync_source(const md_topology_t *topo, int i, bson_t *doc)
{
   bool has = i != topo->primary && topo->primary >= 0;
   BSON_APPEND_UTF8(doc, "syncSourceHost", has ? topo->members[topo->primary].host_port : "");
   BSON_APPEND_INT32(doc, "syncSourceId", has ? topo->primary : -1);
}

static void
append_member_status(md_cmd_t *c, int i, bson_t *members)
{
   const md_topology_t *topo = &c->srv->topo;
   const md_member_t *m = &topo->members[i];
   char key[16];
   const char *k;
   bson_t d;
   bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(members, k, &d);
   /* A member the asking one cannot hear from (it is cut off, or the asker is): 6.0's
    * health 0, state 8 DOWN, "(not reachable/healthy)" (member_state.h). */
   const md_member_t *viewer = &topo->members[c->conn->member];
   bool down =
      i != c->conn->member && (m->reach != MD_REACH_UP || viewer->reach == MD_REACH_ISOLATE);
   BSON_APPEND_INT32(&d, "_id", i);
   BSON_APPEND_UTF8(&d, "name", m->host_port);
   BSON_APPEND_DOUBLE(&d, "health", down ? 0.0 : 1.0);
   BSON_APPEND_INT32(&d, "state", down ? 8 : (int32_t)m->state);
   BSON_APPEND_UTF8(&d, "stateStr", down ? "(not reachable/healthy)" : state_str(m->state));
   BSON_APPEND_INT64(&d, "uptime", (md_now_ms() - c->srv->started_ms) / 1000);
   md_ts_t applied = md_repl_seq_ts(&c->srv->data.oplog, m->applied_seq);
   append_optime(&d, "optime", applied, topo->term);
   bool self = i == c->conn->member;
   if (!self) { /* durable is applied: the data set is in memory, nothing waits for a journal */
      append_optime(&d, "optimeDurable", applied, topo->term);
   }
   BSON_APPEND_DATE_TIME(&d, "optimeDate", (int64_t)applied.t * 1000);
   if (!self) {
      BSON_APPEND_DATE_TIME(&d, "optimeDurableDate", (int64_t)applied.t * 1000);
   }
   BSON_APPEND_DATE_TIME(&d, "lastAppliedWallTime", (int64_t)applied.t * 1000);
   BSON_APPEND_DATE_TIME(&d, "lastDurableWallTime", (int64_t)applied.t * 1000);
   if (!self) { /* heartbeats: in-process members hear each other at once */
      BSON_APPEND_DATE_TIME(&d, "lastHeartbeat", md_wall_ms());
      BSON_APPEND_DATE_TIME(&d, "lastHeartbeatRecv", md_wall_ms());
      BSON_APPEND_INT64(&d, "pingMs", 0);
   }
   append_sync_source(topo, i, &d);
   if (i == topo->primary) {
      bson_oid_t election;
      md_topology_election_id(topo->term, &election);
      BSON_APPEND_TIMESTAMP(&d, "electionTime", (uint32_t)(topo->election_ms / 1000), 1);
      BSON_APPEND_DATE_TIME(&d, "electionDate", topo->election_ms);
      BSON_APPEND_OID(&d, "electionId", &election);
   }
   BSON_APPEND_INT32(&d, "configVersion", 1); /* hello's setVersion */
   BSON_APPEND_INT64(&d, "configTerm", 1);
   if (self) {
      BSON_APPEND_BOOL(&d, "self", true);
   }
   bson_append_document_end(members, &d);
}

bool
md_cmd_repl_set_get_status(md_cmd_t *c, bson_error_t *error)
{
   const md_topology_t *topo = &c->srv->topo;
   bson_t members;
   int majority = topo->n / 2 + 1;
   BSON_APPEND_UTF8(c->reply, "set", "rs0");
   BSON_APPEND_DATE_TIME(c->reply, "date", md_wall_ms());
   BSON_APPEND_INT32(c->reply, "myState", (int32_t)topo->members[c->conn->member].state);
   BSON_APPEND_INT64(c->reply, "term", topo->term);
   append_sync_source(topo, c->conn->member, c->reply);
   BSON_APPEND_INT64(c->reply, "heartbeatIntervalMillis", 2000);
   BSON_APPEND_INT32(c->reply, "majorityVoteCount", majority);
   BSON_APPEND_INT32(c->reply, "writeMajorityCount", majority);
   BSON_APPEND_INT32(c->reply, "votingMembersCount", topo->n);
   BSON_APPEND_INT32(c->reply, "writableVotingMembersCount", topo->n);
   md_repl_advance(&c->srv->topo, &c->srv->data.oplog, md_wall_ms(), NULL);
   uint64_t commit = topo->members[c->conn->member].commit_seq; /* as the asker knows it */
   md_ts_t commit_ts = md_repl_seq_ts(&c->srv->data.oplog, commit);
   md_ts_t applied =
      md_repl_seq_ts(&c->srv->data.oplog, topo->members[c->conn->member].applied_seq);
   bson_t optimes;
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "optimes", &optimes);
   append_optime(&optimes, "lastCommittedOpTime", commit_ts, topo->term);
   BSON_APPEND_DATE_TIME(&optimes, "lastCommittedWallTime", (int64_t)commit_ts.t * 1000);
   append_optime(&optimes, "readConcernMajorityOpTime", commit_ts, topo->term);
   BSON_APPEND_DATE_TIME(&optimes, "readConcernMajorityWallTime", (int64_t)commit_ts.t * 1000);
   append_optime(&optimes, "appliedOpTime", applied, topo->term);
   append_optime(&optimes, "durableOpTime", applied, topo->term);
   BSON_APPEND_DATE_TIME(&optimes, "lastAppliedWallTime", (int64_t)applied.t * 1000);
   BSON_APPEND_DATE_TIME(&optimes, "lastDurableWallTime", (int64_t)applied.t * 1000);
   bson_append_document_end(c->reply, &optimes);
   BSON_APPEND_ARRAY_BEGIN(c->reply, "members", &members);
   for (int i = 0; i < topo->n; i++) {
      append_member_status(c, i, &members);
   }
   bson_append_array_end(c->reply, &members);
   (void)error;
   return true;
}

/* The set's configuration as 6.0 shows it (src/mongo/db/repl/repl_set_config.cpp, toBSON;
 * the settings' defaults from repl_set_config.idl), with the election timeout this server
 * runs with: what a test reads to time a failover. */
bool
md_cmd_repl_set_get_config(md_cmd_t *c, bson_error_t *error)
{
   const md_topology_t *topo = &c->srv->topo;
   bson_t config, members, settings, sub;
   bson_oid_t set_id;
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "config", &config);
   BSON_APPEND_UTF8(&config, "_id", "rs0");
   BSON_APPEND_INT32(&config, "version", 1);
   BSON_APPEND_INT64(&config, "term", topo->term);
   BSON_APPEND_ARRAY_BEGIN(&config, "members", &members);
   for (int i = 0; i < topo->n; i++) {
      char key[16];
      const char *k;
      bson_t m;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&members, k, &m);
      BSON_APPEND_INT32(&m, "_id", i);
      BSON_APPEND_UTF8(&m, "host", topo->members[i].host_port);
      BSON_APPEND_BOOL(&m, "arbiterOnly", false);
      BSON_APPEND_BOOL(&m, "buildIndexes", true);
      BSON_APPEND_BOOL(&m, "hidden", false);
      BSON_APPEND_DOUBLE(&m, "priority", 1.0);
      BSON_APPEND_DOCUMENT_BEGIN(&m, "tags", &sub);
      bson_append_document_end(&m, &sub);
      BSON_APPEND_INT64(&m, "secondaryDelaySecs", 0);
      BSON_APPEND_INT32(&m, "votes", 1);
      bson_append_document_end(&members, &m);
   }
   bson_append_array_end(&config, &members);
   BSON_APPEND_INT32(&config, "protocolVersion", 1);
   BSON_APPEND_BOOL(&config, "writeConcernMajorityJournalDefault", true);
   BSON_APPEND_DOCUMENT_BEGIN(&config, "settings", &settings);
   BSON_APPEND_BOOL(&settings, "chainingAllowed", true);
   BSON_APPEND_INT32(&settings, "heartbeatIntervalMillis", 2000);
   BSON_APPEND_INT32(&settings, "heartbeatTimeoutSecs", 10);
   BSON_APPEND_INT32(&settings, "electionTimeoutMillis", (int32_t)topo->election_timeout_ms);
   BSON_APPEND_INT32(&settings, "catchUpTimeoutMillis", -1);
   BSON_APPEND_INT32(&settings, "catchUpTakeoverDelayMillis", 30000);
   BSON_APPEND_DOCUMENT_BEGIN(&settings, "getLastErrorModes", &sub);
   bson_append_document_end(&settings, &sub);
   BSON_APPEND_DOCUMENT_BEGIN(&settings, "getLastErrorDefaults", &sub);
   BSON_APPEND_INT32(&sub, "w", 1);
   BSON_APPEND_INT32(&sub, "wtimeout", 0);
   bson_append_document_end(&settings, &sub);
   md_topology_election_id(1, &set_id); /* any stable id: the set never changes */
   BSON_APPEND_OID(&settings, "replicaSetId", &set_id);
   bson_append_document_end(&config, &settings);
   bson_append_document_end(c->reply, &config);
   (void)error;
   return true;
}

/* A number of seconds as the command's first value or a field (0 if absent). */
static int64_t
seconds_arg(const bson_t *cmd, const char *field, bool *present)
{
   bson_iter_t it;
   bool found = field ? bson_iter_init_find(&it, cmd, field)
                      : bson_iter_init(&it, cmd) && bson_iter_next(&it);
   if (present) {
      *present = found && BSON_ITER_HOLDS_NUMBER(&it);
   }
   return found && BSON_ITER_HOLDS_NUMBER(&it) ? bson_iter_as_int64(&it) : 0;
}

/* Waits (releasing the server lock) until an electable secondary has caught up with the
 * primary (replication_coordinator_impl.cpp's stepDown) or `until_ms`. */
static bool
wait_for_electable(md_cmd_t *c, int64_t until_ms)
{
   md_topology_t *topo = &c->srv->topo;
   for (;;) {
      int64_t now = md_wall_ms(), next;
      int64_t wake = until_ms;
      md_repl_advance(topo, &c->srv->data.oplog, now, &next);
      wake = next < wake ? next : wake;
      for (int i = 0; i < topo->n; i++) {
         if (i == topo->primary) {
            continue;
         }
         if (md_topology_electable(topo, i, now) &&
             topo->members[i].applied_seq >= c->srv->data.oplog.next_seq) {
            return true;
         }
         int64_t t = topo->members[i].electable_after_ms;
         wake = t > now && t < wake ? t : wake;
      }
      if (now >= until_ms || atomic_load(&c->srv->stopping)) {
         return false;
      }
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t ms = wake - now;
      ts.tv_sec += ms / 1000 + (ts.tv_nsec + (ms % 1000) * 1000000) / 1000000000;
      ts.tv_nsec = (ts.tv_nsec + (ms % 1000) * 1000000) % 1000000000;
      pthread_cond_timedwait(&c->srv->election_cond, &c->srv->data.lock, &ts);
   }
}

/* The replSet commands are adminOnly(): elsewhere mongod answers 13. */
static bool
admin_only(const md_cmd_t *c, bson_error_t *error)
{
   return strcmp(c->db, "admin") == 0 ||
          tm_error_set(error, 13, "%s may only be run against the admin database.", c->name);
}

static void
iso_date(int64_t ms, char *out, size_t len)
{
   time_t secs = (time_t)(ms / 1000);
   struct tm tm;
   gmtime_r(&secs, &tm);
   size_t n = strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
   snprintf(out + n, len - n, ".%03d+00:00", (int)(ms % 1000));
}

bool
md_cmd_repl_set_step_down(md_cmd_t *c, bson_error_t *error)
{
   bson_iter_t it;
   bool force = bson_iter_init_find(&it, c->cmd, "force") && bson_iter_as_bool(&it);
   bool has_catch_up;
   if (!admin_only(c, error)) {
      return false;
   }
   int64_t secs = seconds_arg(c->cmd, NULL, NULL);
   int64_t catch_up = seconds_arg(c->cmd, "secondaryCatchUpPeriodSecs", &has_catch_up);
   if (secs == 0) {
      secs = 60;
   } else if (secs < 0) {
      return tm_error_set(error, 2, "stepdown period must be a positive integer");
   }
   if (!has_catch_up) {
      catch_up = force ? 0 : 10;
   } else if (catch_up < 0) {
      return tm_error_set(error, 2,
                          "secondaryCatchUpPeriodSecs period must be a positive "
                          "or absent");
   }
   if (secs < catch_up) {
      return tm_error_set(error, 2,
                          "stepdown period must be longer than "
                          "secondaryCatchUpPeriodSecs");
   }
   if (c->conn->member != c->srv->topo.primary) {
      return tm_error_set(error, 10107, "not primary so can't step down");
   }
   int64_t start = md_wall_ms();
   bool electable = wait_for_electable(c, start + catch_up * 1000);
   if (c->conn->member != c->srv->topo.primary) {
      return tm_error_set(error, 10107, "not primary so can't step down");
   }
   if (!electable && !force) {
      char date[64];
      iso_date(md_wall_ms(), date, sizeof date);
      return tm_error_set(error, 262,
                          "No electable secondaries caught up as of %sPlease use "
                          "the replSetStepDown command with the argument {force: "
                          "true} to force node to step down.",
                          date);
   }
   md_log(c->srv, "member %d steps down for %lld s", c->conn->member, (long long)secs);
   md_txns_abort_all(&c->srv->data.txns);
   /* Election handoff (6.0's default): a caught-up electable secondary runs at once. */
   md_topology_step_down(&c->srv->topo, secs, md_wall_ms(), true);
   md_election_wake(c->srv);
   return true;
}

bool
md_cmd_repl_set_step_up(md_cmd_t *c, bson_error_t *error)
{
   md_topology_t *topo = &c->srv->topo;
   int me = c->conn->member;
   if (!admin_only(c, error)) {
      return false;
   }
   if (topo->primary == me) {
      return true;
   }
   if (!md_topology_electable(topo, me, md_wall_ms())) {
      return tm_error_set(error, 125, "Election failed.");
   }
   md_log(c->srv, "member %d steps up", me);
   if (topo->primary >= 0) {
      md_txns_abort_all(&c->srv->data.txns); /* the former primary steps down */
   }
   md_topology_elect(topo, me, md_wall_ms());
   md_election_wake(c->srv);
   return true;
}

bool
md_cmd_repl_set_freeze(md_cmd_t *c, bson_error_t *error)
{
   md_topology_t *topo = &c->srv->topo;
   md_member_t *me = &topo->members[c->conn->member];
   int64_t secs = seconds_arg(c->cmd, NULL, NULL);
   int64_t now = md_wall_ms();
   if (!admin_only(c, error)) {
      return false;
   }
   if (me->state == MD_MEMBER_PRIMARY) {
      return tm_error_set(error, 95,
                          "Cannot freeze node when primary or running for "
                          "election, state: Primary");
   }
   if (secs == 0) {
      me->electable_after_ms = now;
      BSON_APPEND_UTF8(c->reply, "info", "unfreezing");
   } else {
      if (secs == 1) {
         BSON_APPEND_UTF8(c->reply, "warning", "you really want to freeze for only 1 second?");
      }
      int64_t until = now + secs * 1000;
      me->electable_after_ms = until > me->electable_after_ms ? until : me->electable_after_ms;
   }
   md_election_wake(c->srv);
   return true;
}

/* A fault of one member, for tests (no such command in mongod: tests of real sets stop
 * processes or cut the network instead). "hang": its connections, new and open, get no
 * answer until healed, as a stopped process (SIGSTOP); "refuse": its listener closes and
 * its connections are reset, as a process that is gone; "heal": back, as a secondary;
 * "pause"/"resume": its replication; "lag" with `ms`: its replication lag (-1: the set's);
 * "clock" with `ms`: its clock's offset ($$NOW, hello's times, what its writes stamp).
 * Runs on any reachable member. */
bool
md_cmd_test_member_fault(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"mode", "ms", NULL};
   static const char *const modes[] = {"heal", "hang", "refuse", "isolate"};
   bson_iter_t it;
   if (!admin_only(c, error) || !md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   const char *host =
      bson_iter_init(&it, c->cmd) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it)
         ? bson_iter_utf8(&it, NULL)
         : "";
   int m = -1;
   for (int i = 0; i < c->srv->topo.n; i++) {
      m = strcmp(c->srv->topo.members[i].host_port, host) == 0 ? i : m;
   }
   if (m < 0) {
      return tm_error_set(error, 2, "testMemberFault: '%s' is not a member of the set", host);
   }
   const char *mode = bson_iter_init_find(&it, c->cmd, "mode") && BSON_ITER_HOLDS_UTF8(&it)
                         ? bson_iter_utf8(&it, NULL)
                         : "";
   md_member_t *member = &c->srv->topo.members[m];
   if (strcmp(mode, "pause") == 0 || strcmp(mode, "resume") == 0) {
      member->paused = mode[0] == 'p';
      md_oplog_wake(&c->srv->data.oplog); /* waiters recompute the commit point */
      return true;
   }
   if (strcmp(mode, "clock") == 0) {
      member->clock_offset_ms = seconds_arg(c->cmd, "ms", NULL);
      return true;
   }
   if (strcmp(mode, "lag") == 0) {
      member->lag_ms = seconds_arg(c->cmd, "ms", NULL);
      md_oplog_wake(&c->srv->data.oplog);
      return true;
   }
   for (int r = 0; r < 4; r++) {
      if (strcmp(mode, modes[r]) == 0) {
         md_log(c->srv, "member %d: %s", m, mode);
         if (r == MD_REACH_ISOLATE) {
            /* The commit point it knows stops here: bring it up to the cut first. */
            md_repl_advance(&c->srv->topo, &c->srv->data.oplog, md_wall_ms(), NULL);
            md_isolation_start(c->srv, m);
         } else if (r == MD_REACH_UP) {
            /* Before it rejoins: md_server_set_reach waits for the listeners, releasing
             * the lock, and the election thread may elect it meanwhile. */
            md_isolation_heal(c->srv, m);
         }
         md_server_set_reach(c->srv, m, (md_reach_t)r);
         return true;
      }
   }
   return tm_error_set(error, 2,
                       "testMemberFault: mode must be \"hang\", \"refuse\", "
                       "\"isolate\", \"heal\", \"pause\", \"resume\", \"lag\" or "
                       "\"clock\", not '%s'",
                       mode);
}

void
md_cmd_wait_write_concern(md_cmd_t *c)
{
   md_server_t *srv = c->srv;
   int64_t wtimeout;
   int needed = md_write_concern_members(c->name, c->cmd, srv->topo.n, &wtimeout);
   if (needed <= 1 || bson_has_field(c->reply, "writeConcernError")) {
      return;
   }
   uint64_t target = srv->data.oplog.next_seq; /* every write so far, this one's included */
   int64_t deadline = wtimeout > 0 ? md_now_ms() + wtimeout : INT64_MAX;
   if (md_cmd_branch(c)) {
      md_isolation_wait_write_concern(c, deadline);
      return;
   }
   for (;;) {
      int64_t now = md_wall_ms(), next;
      md_repl_advance(&srv->topo, &srv->data.oplog, now, &next);
      if (md_repl_count_applied(&srv->topo, target) >= needed || atomic_load(&srv->stopping)) {
         return;
      }
      if (md_now_ms() >= deadline) {
         md_write_concern_timed_out(c->cmd, c->reply);
         return;
      }
      int64_t until = next == INT64_MAX ? deadline : md_now_ms() + (next - now);
      md_oplog_wait(&srv->data.oplog, &srv->data.lock, until < deadline ? until : deadline);
   }
}
