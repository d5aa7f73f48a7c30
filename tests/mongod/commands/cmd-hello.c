/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * hello / isMaster: what makes drivers see a MongoDB 6.0 replica-set primary (see
 * ../shared/docs/mongodb-test-server.md, section 2: field types matter), including the
 * topologyVersion of the awaitable hello protocol. The topology of a one-member set whose
 * primary never steps down never changes, so the version is {processId: new at every start,
 * counter: 0}. An awaitable hello (topologyVersion + maxAwaitTimeMS) naming that version
 * waits maxAwaitTimeMS before answering; the wait itself happens in the connection thread
 * without the server lock (server.c, md_hello_await_ms), as does the streaming (exhaust)
 * form. Runs with the server lock held, like every command.
 */
#include <string.h>
#include <sys/time.h>

#include "auth/auth-cmd.h"
#include "commands/commands.h"
#include "topology/replication.h"

static void
remember_app_name(md_cmd_t *c)
{
   bson_iter_t it, client, name;
   if (!c->conn->app_name && bson_iter_init_find(&it, c->cmd, "client") &&
       BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &client) &&
       bson_iter_find_descendant(&client, "application.name", &name) &&
       BSON_ITER_HOLDS_UTF8(&name)) {
      c->conn->app_name = strdup(bson_iter_utf8(&name, NULL));
   }
}

static void
append_op_time(bson_t *parent, const char *name, md_ts_t ts, int64_t term)
{
   bson_t d;
   bson_append_document_begin(parent, name, -1, &d);
   bson_append_timestamp(&d, "ts", 2, ts.t, ts.i);
   bson_append_int64(&d, "t", 1, term);
   bson_append_document_end(parent, &d);
}

/* The wall time of the write at position `seq` (now, on the member's clock, when it holds
 * every write: an idle set's lastWriteDate keeps up, as the primary's periodic no-op
 * writes make it in MongoDB). */
static int64_t
position_date(const md_server_t *srv, uint64_t seq, const md_member_t *me)
{
   const md_oplog_entry_t *e = seq > 0 ? md_oplog_at(&srv->data.oplog, seq - 1) : NULL;
   return seq >= srv->data.oplog.next_seq || !e ? md_wall_ms() + me->clock_offset_ms : e->wall_ms;
}

/* As TopologyCoordinator::fillHelloForReplSet (src/mongo/db/repl/topology_coordinator.cpp,
 * r6.0): `primary` only while the set has one, `electionId` only from the primary itself. */
void
md_append_repl_info(md_server_t *srv, int member, bson_t *r, const char *primary_field)
{
   const md_topology_t *topo = &srv->topo;
   const md_member_t *me = &topo->members[member];
   bson_t tv, hosts, lw;
   BSON_APPEND_DOCUMENT_BEGIN(r, "topologyVersion", &tv);
   BSON_APPEND_OID(&tv, "processId", &me->process_id);
   BSON_APPEND_INT64(&tv, "counter", me->counter);
   bson_append_document_end(r, &tv);
   BSON_APPEND_ARRAY_BEGIN(r, "hosts", &hosts);
   for (int i = 0; i < topo->n; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_UTF8(&hosts, k, topo->members[i].host_port);
   }
   bson_append_array_end(r, &hosts);
   BSON_APPEND_UTF8(r, "setName", "rs0");
   BSON_APPEND_INT32(r, "setVersion", 1);
   BSON_APPEND_BOOL(r, primary_field, me->state == MD_MEMBER_PRIMARY);
   BSON_APPEND_BOOL(r, "secondary", me->state == MD_MEMBER_SECONDARY);
   /* An isolated member knows only itself: it names itself while it is a primary. */
   int primary = me->reach == MD_REACH_ISOLATE ? (me->state == MD_MEMBER_PRIMARY ? member : -1)
                                               : topo->primary;
   if (primary >= 0) {
      BSON_APPEND_UTF8(r, "primary", topo->members[primary].host_port);
   }
   BSON_APPEND_UTF8(r, "me", me->host_port);
   if (me->state == MD_MEMBER_PRIMARY) {
      bson_oid_t election; /* an isolated primary's is of its older term */
      md_topology_election_id(me->term, &election);
      BSON_APPEND_OID(r, "electionId", &election);
   }
   /* This member's applied position and the commit point (a lagging secondary's lastWrite
    * is behind: drivers' maxStalenessSeconds reads it). */
   md_repl_advance(&srv->topo, &srv->data.oplog, md_wall_ms(), NULL);
   uint64_t commit = me->commit_seq; /* the commit point as this member knows it */
   BSON_APPEND_DOCUMENT_BEGIN(r, "lastWrite", &lw);
   append_op_time(&lw, "opTime", md_repl_seq_ts(&srv->data.oplog, me->applied_seq), me->term);
   BSON_APPEND_DATE_TIME(&lw, "lastWriteDate", position_date(srv, me->applied_seq, me));
   append_op_time(&lw, "majorityOpTime", md_repl_seq_ts(&srv->data.oplog, commit), topo->term);
   BSON_APPEND_DATE_TIME(&lw, "majorityWriteDate", position_date(srv, commit, me));
   bson_append_document_end(r, &lw);
}

typedef struct {
   bool has_tv, has_await;
   bson_oid_t process_id;
   int64_t counter;
   int64_t await_ms;
} awaitable_t;

/* Reads topologyVersion / maxAwaitTimeMS with mongod's checks (HelloCommand IDL and
 * replication_info.cpp): they come together (31368), the counter is not negative (31372) nor
 * ahead of ours for our processId (31382), maxAwaitTimeMS is not negative. */
static bool
parse_awaitable(const md_member_t *me, const bson_t *cmd, awaitable_t *a, bson_error_t *error)
{
   bson_iter_t it, tv;
   memset(a, 0, sizeof *a);
   if (bson_iter_init_find(&it, cmd, "topologyVersion")) {
      bool ok = BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &tv) &&
                bson_iter_find(&tv, "processId") && BSON_ITER_HOLDS_OID(&tv);
      if (ok) {
         bson_oid_copy(bson_iter_oid(&tv), &a->process_id);
         bson_iter_recurse(&it, &tv);
         ok = bson_iter_find(&tv, "counter") && BSON_ITER_HOLDS_NUMBER(&tv);
      }
      if (!ok) {
         return tm_error_set(error, 40414,
                             "BSON field 'TopologyVersion.processId' or "
                             "'TopologyVersion.counter' is missing or of the "
                             "wrong type");
      }
      a->counter = bson_iter_as_int64(&tv);
      a->has_tv = true;
   }
   if (bson_iter_init_find(&it, cmd, "maxAwaitTimeMS")) {
      if (!BSON_ITER_HOLDS_NUMBER(&it)) {
         return tm_error_set(error, 14, "BSON field 'hello.maxAwaitTimeMS' is the wrong type");
      }
      a->await_ms = bson_iter_as_int64(&it);
      a->has_await = true;
   }
   if (a->has_tv != a->has_await) {
      return tm_error_set(error, 31368,
                          a->has_tv ? "A request with a 'topologyVersion' must include "
                                      "'maxAwaitTimeMS'"
                                    : "A request with 'maxAwaitTimeMS' must include a "
                                      "'topologyVersion'");
   }
   if (!a->has_tv) {
      return true;
   }
   if (a->counter < 0) {
      return tm_error_set(error, 31372, "topologyVersion must have a non-negative counter");
   }
   if (a->await_ms < 0) {
      return tm_error_set(error, 2,
                          "BSON field 'maxAwaitTimeMS' value must be >= 0, actual "
                          "value '%lld'",
                          (long long)a->await_ms);
   }
   if (bson_oid_equal(&a->process_id, &me->process_id) && a->counter > me->counter) {
      return tm_error_set(error, 31382,
                          "Received a topology version with counter: %lld which "
                          "is greater than the server topology version counter: "
                          "%lld",
                          (long long)a->counter, (long long)me->counter);
   }
   return true;
}

int64_t
md_hello_await_ms(md_conn_t *conn, const bson_t *cmd, int64_t *max_await_ms)
{
   bson_iter_t it;
   awaitable_t a;
   md_server_t *srv = conn->srv;
   if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it) ||
       (strcmp(bson_iter_key(&it), "hello") != 0 && strcmp(bson_iter_key(&it), "isMaster") != 0 &&
        strcmp(bson_iter_key(&it), "ismaster") != 0)) {
      return -1;
   }
   pthread_mutex_lock(&srv->data.lock);
   const md_member_t *me = &srv->topo.members[conn->member];
   bool awaitable = parse_awaitable(me, cmd, &a, NULL) && a.has_tv;
   /* A version from another process (an earlier start) or an older counter is stale: the
    * topology changed since the client last heard, so answer at once. */
   bool current =
      awaitable && bson_oid_equal(&a.process_id, &me->process_id) && a.counter == me->counter;
   pthread_mutex_unlock(&srv->data.lock);
   if (!awaitable) {
      return -1; /* not awaitable, or malformed: the command itself answers at once */
   }
   *max_await_ms = a.await_ms;
   return current ? a.await_ms : 0;
}

bool
md_cmd_hello(md_cmd_t *c, bson_error_t *error)
{
   bson_t *r = c->reply;
   bson_iter_t it;
   awaitable_t a;
   if (!parse_awaitable(&c->srv->topo.members[c->conn->member], c->cmd, &a, error)) {
      return false;
   }
   remember_app_name(c);
   if (bson_iter_init_find(&it, c->cmd, "helloOk") && bson_iter_as_bool(&it)) {
      BSON_APPEND_BOOL(r, "helloOk", true);
      c->conn->hello_ok = true;
   }
   if (strcmp(c->name, "hello") == 0) {
      c->conn->hello_ok = true; /* mongod's Client::supportsHello */
   }
   if (c->srv->opts.standalone) { /* r6.0 hello_cmd: writable, a topologyVersion, no set */
      const md_member_t *me = &c->srv->topo.members[c->conn->member];
      bson_t tv;
      BSON_APPEND_DOCUMENT_BEGIN(r, "topologyVersion", &tv);
      BSON_APPEND_OID(&tv, "processId", &me->process_id);
      BSON_APPEND_INT64(&tv, "counter", me->counter);
      bson_append_document_end(r, &tv);
      BSON_APPEND_BOOL(r, strcmp(c->name, "hello") == 0 ? "isWritablePrimary" : "ismaster", true);
   } else {
      md_append_repl_info(c->srv, c->conn->member, r,
                          strcmp(c->name, "hello") == 0 ? "isWritablePrimary" : "ismaster");
   }
   BSON_APPEND_INT32(r, "maxBsonObjectSize", 16777216);
   BSON_APPEND_INT32(r, "maxMessageSizeBytes", 48000000);
   BSON_APPEND_INT32(r, "maxWriteBatchSize", 100000);
   BSON_APPEND_DATE_TIME(r, "localTime",
                         md_wall_ms() + c->srv->topo.members[c->conn->member].clock_offset_ms);
   BSON_APPEND_INT32(r, "logicalSessionTimeoutMinutes", 30);
   BSON_APPEND_INT32(r, "connectionId", c->conn->id);
   BSON_APPEND_INT32(r, "minWireVersion", 0);
   BSON_APPEND_INT32(r, "maxWireVersion", 17);
   BSON_APPEND_BOOL(r, "readOnly", false);
   md_auth_hello(c);
   return true;
}
