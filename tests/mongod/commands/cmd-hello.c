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

static int64_t
wall_ms(void)
{
   struct timeval tv;
   gettimeofday(&tv, NULL);
   return (int64_t) tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void
append_op_time(bson_t *parent, const char *name, md_ts_t ts)
{
   bson_t d;
   bson_append_document_begin(parent, name, -1, &d);
   bson_append_timestamp(&d, "ts", 2, ts.t, ts.i);
   bson_append_int64(&d, "t", 1, 1);
   bson_append_document_end(parent, &d);
}

void
md_append_repl_info(md_server_t *srv, bson_t *r, const char *primary_field)
{
   bson_t tv, hosts, lw;
   bson_oid_t election;
   BSON_APPEND_DOCUMENT_BEGIN(r, "topologyVersion", &tv);
   BSON_APPEND_OID(&tv, "processId", &srv->process_id);
   BSON_APPEND_INT64(&tv, "counter", 0);
   bson_append_document_end(r, &tv);
   BSON_APPEND_ARRAY_BEGIN(r, "hosts", &hosts);
   BSON_APPEND_UTF8(&hosts, "0", srv->host_port);
   bson_append_array_end(r, &hosts);
   BSON_APPEND_UTF8(r, "setName", "rs0");
   BSON_APPEND_INT32(r, "setVersion", 1);
   BSON_APPEND_BOOL(r, primary_field, true);
   BSON_APPEND_BOOL(r, "secondary", false);
   BSON_APPEND_UTF8(r, "primary", srv->host_port);
   BSON_APPEND_UTF8(r, "me", srv->host_port);
   bson_oid_init_from_string(&election, "7fffffff0000000000000001");
   BSON_APPEND_OID(r, "electionId", &election);
   BSON_APPEND_DOCUMENT_BEGIN(r, "lastWrite", &lw);
   append_op_time(&lw, "opTime", srv->oplog.last);
   BSON_APPEND_DATE_TIME(&lw, "lastWriteDate", wall_ms());
   append_op_time(&lw, "majorityOpTime", srv->oplog.last);
   BSON_APPEND_DATE_TIME(&lw, "majorityWriteDate", wall_ms());
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
parse_awaitable(const md_server_t *srv, const bson_t *cmd, awaitable_t *a, bson_error_t *error)
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
         return tm_error_set(error, 40414, "BSON field 'TopologyVersion.processId' or "
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
      return tm_error_set(error, 31368, a->has_tv
                                           ? "A request with a 'topologyVersion' must include "
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
      return tm_error_set(error, 2, "BSON field 'maxAwaitTimeMS' value must be >= 0, actual "
                                    "value '%lld'", (long long) a->await_ms);
   }
   if (bson_oid_equal(&a->process_id, &srv->process_id) && a->counter > 0) {
      return tm_error_set(error, 31382, "Received a topology version with counter: %lld which "
                                        "is greater than the server topology version counter: "
                                        "0", (long long) a->counter);
   }
   return true;
}

int64_t
md_hello_await_ms(md_server_t *srv, const bson_t *cmd, int64_t *max_await_ms)
{
   bson_iter_t it;
   awaitable_t a;
   if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it) ||
       (strcmp(bson_iter_key(&it), "hello") != 0 && strcmp(bson_iter_key(&it), "isMaster") != 0 &&
        strcmp(bson_iter_key(&it), "ismaster") != 0) ||
       !parse_awaitable(srv, cmd, &a, NULL) || !a.has_tv) {
      return -1; /* not awaitable, or malformed: the command itself answers at once */
   }
   *max_await_ms = a.await_ms;
   /* A version from another process (an earlier start) is stale: answer at once. */
   return bson_oid_equal(&a.process_id, &srv->process_id) ? a.await_ms : 0;
}

bool
md_cmd_hello(md_cmd_t *c, bson_error_t *error)
{
   bson_t *r = c->reply;
   bson_iter_t it;
   awaitable_t a;
   if (!parse_awaitable(c->srv, c->cmd, &a, error)) {
      return false;
   }
   remember_app_name(c);
   if (bson_iter_init_find(&it, c->cmd, "helloOk") && bson_iter_as_bool(&it)) {
      BSON_APPEND_BOOL(r, "helloOk", true);
   }
   md_append_repl_info(c->srv, r,
                       strcmp(c->name, "hello") == 0 ? "isWritablePrimary" : "ismaster");
   BSON_APPEND_INT32(r, "maxBsonObjectSize", 16777216);
   BSON_APPEND_INT32(r, "maxMessageSizeBytes", 48000000);
   BSON_APPEND_INT32(r, "maxWriteBatchSize", 100000);
   BSON_APPEND_DATE_TIME(r, "localTime", wall_ms());
   BSON_APPEND_INT32(r, "logicalSessionTimeoutMinutes", 30);
   BSON_APPEND_INT32(r, "connectionId", c->conn->id);
   BSON_APPEND_INT32(r, "minWireVersion", 0);
   BSON_APPEND_INT32(r, "maxWireVersion", 17);
   BSON_APPEND_BOOL(r, "readOnly", false);
   md_auth_hello(c);
   return true;
}
