/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The router: what mongos does with each command of a client (hello as mongos, the sharding
 * admin commands, routing reads and writes to the shards) and the in-process shards
 * themselves (their periodic no-op writer is noop.c). A client connection's thread runs its
 * commands here; the catalog is guarded by the router's lock (router-private.h), each shard by its
 * own.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands/commands.h"
#include "engine/engine.h"
#include "shard/router-private.h"
#include "shard/router.h"

/* Cluster time gossip, as mongos passes $clusterTime to shards: a write reaches a shard
 * whose clock is at least the newest time any shard answered, so a change made after another
 * (that its client saw) gets a later cluster time even on another shard. Reads and getMores
 * do not move a shard's clock (only writes and its periodic no-op do, as an oplog entry). */
static bool
is_write(const bson_t *cmd)
{
   static const char *const writes[] = {"insert",        "update",        "delete",
                                        "findAndModify", "findandmodify", NULL};
   bson_iter_t it;
   const char *name = bson_iter_init(&it, cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "";
   for (size_t i = 0; writes[i]; i++) {
      if (strcmp(name, writes[i]) == 0) {
         return true;
      }
   }
   return false;
}

static void
gossip_in(md_router_t *r, md_server_t *shard)
{
   pthread_mutex_lock(&r->lock);
   md_ts_t ct = r->cluster_time;
   pthread_mutex_unlock(&r->lock);
   pthread_mutex_lock(&shard->data.lock);
   if (md_ts_cmp(shard->data.oplog.last, ct) < 0) {
      shard->data.oplog.last = ct;
   }
   pthread_mutex_unlock(&shard->data.lock);
}

static void
gossip_out(md_router_t *r, const bson_t *reply)
{
   bson_iter_t it;
   md_ts_t ts;
   if (bson_iter_init_find(&it, reply, "operationTime") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
      bson_iter_timestamp(&it, &ts.t, &ts.i);
      pthread_mutex_lock(&r->lock);
      if (md_ts_cmp(r->cluster_time, ts) < 0) {
         r->cluster_time = ts;
      }
      pthread_mutex_unlock(&r->lock);
   }
}

static bool
call_on(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply)
{
   md_conn_t conn = {0};
   conn.srv = shard < 0 ? r->front : r->shards[shard];
   conn.fd = -1;
   conn.wake_fd = -1;
   conn.hello_ok = true;
   strcpy(conn.peer, "mongos");
   bool write = shard >= 0 && is_write(cmd);
   if (write) {
      gossip_in(r, conn.srv);
   }
   md_command_run_local(&conn, cmd, reply);
   if (write) {
      gossip_out(r, reply);
   }
   bson_iter_t it;
   return bson_iter_init_find(&it, reply, "ok") && bson_iter_as_bool(&it);
}

bool
md_router_call(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply)
{
   bson_t with_txn;
   if (md_txn_fields_for(r, shard, cmd, &with_txn)) { /* a statement of a transaction */
      bool ok = call_on(r, shard, &with_txn, reply);
      bson_destroy(&with_txn);
      return ok;
   }
   return call_on(r, shard, cmd, reply);
}

bool
md_router_error(md_router_t *r, bson_t *reply, int32_t code, const char *fmt, ...)
{
   bson_error_t error = {0};
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(error.message, sizeof error.message, fmt, ap);
   va_end(ap);
   error.code = (uint32_t)code;
   md_error_reply(r->front, &error, NULL, reply);
   return true;
}

void
md_router_rewrite(const bson_t *cmd, const char *coll, const char *db, const char *const *drop,
                  bson_t *out)
{
   bson_iter_t it;
   bool first = true;
   bson_init(out);
   bson_iter_init(&it, cmd);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      bool skip = false;
      for (size_t i = 0; drop && drop[i]; i++) {
         skip = skip || strcmp(key, drop[i]) == 0;
      }
      if (first && coll) {
         BSON_APPEND_UTF8(out, key, coll);
      } else if (db && strcmp(key, "$db") == 0) {
         BSON_APPEND_UTF8(out, "$db", db);
      } else if (!skip) {
         bson_append_iter(out, key, -1, &it);
      }
      first = false;
   }
}

char *
md_route_ns(const bson_t *cmd, const char **db, const char **coll)
{
   bson_iter_t it;
   *db = bson_iter_init_find(&it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&it)
            ? bson_iter_utf8(&it, NULL)
            : "";
   if (!bson_iter_init(&it, cmd) || !bson_iter_next(&it) || !BSON_ITER_HOLDS_UTF8(&it)) {
      return NULL;
   }
   *coll = bson_iter_utf8(&it, NULL);
   return bson_strdup_printf("%s.%s", *db, *coll);
}

/* hello as mongos 6.0 answers it (src/mongo/s/commands/cluster_hello_cmd.cpp): the front's
 * own hello without the replica-set fields, with msg "isdbgrid". */
static bool
hello(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   static const char *const repl_fields[] = {
      "hosts",     "setName",      "setVersion", "secondary", "primary",  "me", "electionId",
      "lastWrite", "isreplicaset", "arbiters",   "passives",  "readOnly", NULL};
   bson_t local;
   bson_iter_t it;
   (void)r;
   md_command_run_local(conn, cmd, &local);
   bson_init(reply);
   bson_iter_init(&it, &local);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      bool skip = false;
      for (size_t i = 0; repl_fields[i]; i++) {
         skip = skip || strcmp(key, repl_fields[i]) == 0;
      }
      if (strcmp(key, "minWireVersion") == 0) {
         BSON_APPEND_UTF8(reply, "msg", "isdbgrid");
      }
      if (!skip) {
         bson_append_iter(reply, key, -1, &it);
      }
   }
   bson_destroy(&local);
   return true;
}

typedef bool (*route_fn)(md_router_t *r, const bson_t *cmd, bson_t *reply);

/* Commands the front runs as any server would (it holds no user data: only the config
 * database, the temporary collections reads are merged in, and cursors over them). */
static const char *const front_commands[] = {
   "ping",         "buildInfo",       "buildinfo",
   "getParameter", "whatsmyuri",      "connectionStatus",
   "endSessions",  "hostInfo",        "getCmdLineOpts",
   "serverStatus", "killAllSessions", "configureFailPoint",
   "getLog",       "listCommands",    NULL};

/* What mongos 6.0 has no such command for, or test-mongod's mongos does not do: named. */
static bool
unsupported(md_router_t *r, const char *name, bson_t *reply)
{
   static const char *const txn[] = {"commitTransaction", "abortTransaction", NULL}; /* alone */
   static const char *const repl[] = {
      "replSetGetStatus", "replSetGetConfig", "replSetStepDown", "replSetStepUp",
      "replSetFreeze",    "testMemberFault",  "testRollbackLog", NULL};
   for (size_t i = 0; txn[i]; i++) {
      if (strcmp(name, txn[i]) == 0) {
         return md_router_error(r, reply, 50768, "%s needs a transaction (autocommit: false)",
                                name);
      }
   }
   for (size_t i = 0; repl[i]; i++) {
      if (strcmp(name, repl[i]) == 0) {
         /* mongos has no replica-set commands (59, as for any unknown command). */
         return md_router_error(r, reply, 59, "no such command: '%s'", name);
      }
   }
   return false;
}

static bool
is_change_stream(const bson_t *cmd)
{
   bson_iter_t it, stage;
   return bson_iter_init_find(&it, cmd, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it) &&
          bson_iter_recurse(&it, &stage) && bson_iter_next(&stage) &&
          BSON_ITER_HOLDS_DOCUMENT(&stage) && bson_iter_recurse(&stage, &stage) &&
          bson_iter_next(&stage) && strcmp(bson_iter_key(&stage), "$changeStream") == 0;
}

static const struct {
   const char *name;
   route_fn fn;
   bool write; /* retryable (route_write) */
} routed[] = {
   {.name = "insert", .fn = md_route_insert, .write = true},
   {.name = "update", .fn = md_route_update, .write = true},
   {.name = "delete", .fn = md_route_delete, .write = true},
   {.name = "findAndModify", .fn = md_route_find_and_modify, .write = true},
   {.name = "findandmodify", .fn = md_route_find_and_modify, .write = true},
   {.name = "find", .fn = md_route_read},
   {.name = "count", .fn = md_route_read},
   {.name = "distinct", .fn = md_route_read},
   {.name = "enableSharding", .fn = md_cmd_enable_sharding},
   {.name = "enablesharding", .fn = md_cmd_enable_sharding},
   {.name = "shardCollection", .fn = md_cmd_shard_collection},
   {.name = "shardcollection", .fn = md_cmd_shard_collection},
   {.name = "listShards", .fn = md_cmd_list_shards},
   {.name = "listshards", .fn = md_cmd_list_shards},
   {.name = "split", .fn = md_cmd_split},
   {.name = "moveChunk", .fn = md_cmd_move_chunk},
   {.name = "movechunk", .fn = md_cmd_move_chunk},
   {.name = "listDatabases", .fn = md_route_list_databases},
};

static bool
in_list(const char *const *list, const char *name)
{
   for (size_t i = 0; list[i]; i++) {
      if (strcmp(list[i], name) == 0) {
         return true;
      }
   }
   return false;
}

/* failCommand (configured on the router, as on a real mongos) before the command is routed;
 * true when it answered (or the connection must close: *keep false). */
static bool
failpoint(md_conn_t *conn, const bson_t *cmd, bson_t *reply, bool *keep, bson_t *epilogue)
{
   bool close = false;
   if (!md_command_failpoint(conn, cmd, reply, &close, epilogue)) {
      return false;
   }
   if (close) {
      bson_init(reply);
   }
   *keep = !close;
   return true;
}

static bool route_on(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply);

/* The cluster time mongos answers with: the newest of its shards' clocks and of what it has
 * gossiped, which from then on every write is gossiped (so a change stream started at a
 * reply's operationTime misses no later write on a shard whose clock was behind). */
md_ts_t
md_router_cluster_time(md_router_t *r)
{
   md_ts_t newest = {0, 0};
   for (int s = 0; s < r->n_shards; s++) {
      pthread_mutex_lock(&r->shards[s]->data.lock);
      if (md_ts_cmp(newest, r->shards[s]->data.oplog.last) < 0) {
         newest = r->shards[s]->data.oplog.last;
      }
      pthread_mutex_unlock(&r->shards[s]->data.lock);
   }
   pthread_mutex_lock(&r->lock);
   if (md_ts_cmp(r->cluster_time, newest) < 0) {
      r->cluster_time = newest;
   }
   newest = r->cluster_time;
   pthread_mutex_unlock(&r->lock);
   return newest;
}

/* Replaces the answering server's $clusterTime and operationTime by the cluster's, as
 * mongos answers with its own clock (6.0's VectorClock, src/mongo/db/vector_clock.cpp),
 * which is at least any time a shard answered it. */
static void
stamp_times(md_router_t *r, bson_t *reply)
{
   md_ts_t now = md_router_cluster_time(r);
   bson_t out = BSON_INITIALIZER, ct, sig;
   bson_iter_t it;
   static const uint8_t zero_hash[20];
   bson_iter_init(&it, reply);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (strcmp(key, "operationTime") != 0 && strcmp(key, "$clusterTime") != 0) {
         bson_append_iter(&out, key, -1, &it);
      }
   }
   bson_append_document_begin(&out, "$clusterTime", -1, &ct);
   bson_append_timestamp(&ct, "clusterTime", -1, now.t, now.i);
   bson_append_document_begin(&ct, "signature", -1, &sig);
   bson_append_binary(&sig, "hash", -1, BSON_SUBTYPE_BINARY, zero_hash, sizeof zero_hash);
   bson_append_int64(&sig, "keyId", -1, 0);
   bson_append_document_end(&ct, &sig);
   bson_append_document_end(&out, &ct);
   bson_append_timestamp(&out, "operationTime", -1, now.t, now.i);
   bson_destroy(reply);
   bson_steal(reply, &out);
}

static bool route_cmd(md_conn_t *conn, const bson_t *cmd, bson_t *reply);

/* With --mongos-count N the front has N listeners (its members), each a mongos of its own
 * over the same shards and catalog: every one answers as member 0 (hello as a router, the
 * front's own commands, its cursors), so none is a replica-set secondary. */
static bool
route(md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   int member = conn->member;
   conn->member = 0;
   bool keep = route_cmd(conn, cmd, reply);
   conn->member = member;
   if (keep) {
      stamp_times(conn->srv->router, reply);
   }
   return keep;
}

static bool
route_cmd(md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   md_router_t *r = conn->srv->router;
   bson_iter_t it;
   bool keep = true;
   const char *name = bson_iter_init(&it, cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "";
   if (strcmp(name, "hello") == 0 || strcasecmp(name, "isMaster") == 0) {
      return hello(r, conn, cmd, reply);
   }
   bson_iter_t db_it;
   bool config = bson_iter_init_find(&db_it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&db_it) &&
                 strcmp(bson_iter_utf8(&db_it, NULL), "config") == 0;
   if (strcmp(name, "configureFailPoint") == 0 && BSON_ITER_HOLDS_UTF8(&it) &&
       strcmp(bson_iter_utf8(&it, NULL), "onPrimaryTransactionalWrite") == 0) {
      /* a mongod fail point (r6.0 src/mongo/db/transaction_participant.cpp) that a mongos
       * lacks: refused, never accepted without acting */
      return md_router_error(r, reply, 2, "Cannot find failpoint: onPrimaryTransactionalWrite");
   }
   if (strcmp(name, "killAllSessions") == 0) {
      /* on every shard too, as 6.0's mongos (cluster_kill_all_sessions_cmd.cpp) */
      for (int s = 0; s < r->n_shards; s++) {
         bson_t one;
         md_route_forward(r, s, cmd, &one);
         bson_destroy(&one);
      }
      md_rsessions_kill_all(r);
      return md_command_run_local(conn, cmd, reply);
   }
   if (in_list(front_commands, name) || strncmp(name, "sasl", 4) == 0 || config) {
      /* the front's own (the config database lives there, as on the config servers) */
      return md_command_run_local(conn, cmd, reply);
   }
   if (strcmp(name, "getMore") == 0) {
      return md_route_get_more(r, conn, cmd, reply);
   }
   if (strcmp(name, "killCursors") == 0) {
      return md_route_kill_cursors(r, conn, cmd, reply);
   }
   bson_t epilogue;
   if (failpoint(conn, cmd, reply, &keep, &epilogue)) {
      bson_destroy(&epilogue);
      return keep;
   }
   route_on(r, name, cmd, reply);
   bson_concat(reply, &epilogue); /* failCommand's writeConcernError and errorLabels */
   bson_destroy(&epilogue);
   return true;
}

/* A write, de-duplicated when it is a retryable one (route-session.c). */
static bool
route_write(md_router_t *r, route_fn fn, const bson_t *cmd, bson_t *reply)
{
   md_rsession_t *s;
   if (md_route_in_txn()) {
      return fn(r, cmd, reply);
   }
   if (md_rsession_begin(r, cmd, false, &s, reply)) {
      return true;
   }
   fn(r, cmd, reply);
   if (s) {
      md_rsession_end(r, s, reply);
   }
   return true;
}

/* Where each command goes once failCommand let it through. */
static bool
route_on(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   if (!md_route_in_txn() && (bson_iter_init_find(&it, cmd, "autocommit") ||
                              bson_iter_init_find(&it, cmd, "startTransaction"))) {
      return md_route_txn(r, name, cmd, route_on, reply);
   }
   if (unsupported(r, name, reply)) {
      return true;
   }
   if (strcmp(name, "aggregate") == 0) {
      return is_change_stream(cmd) ? md_mstream_open(r, cmd, reply) : md_route_read(r, cmd, reply);
   }
   for (size_t i = 0; i < sizeof routed / sizeof routed[0]; i++) {
      if (strcmp(routed[i].name, name) == 0) {
         return routed[i].write ? route_write(r, routed[i].fn, cmd, reply)
                                : routed[i].fn(r, cmd, reply);
      }
   }
   if (strcmp(name, "drop") == 0 || strcmp(name, "dropDatabase") == 0) {
      return md_route_drop(r, name, cmd, reply);
   }
   if (in_list(md_by_database, name)) {
      return md_route_on_database(r, name, cmd, reply);
   }
   return md_router_error(r, reply, 59, "no such command: '%s'", name);
}

void
md_router_attach(md_server_t *front)
{
   md_router_t *r = calloc(1, sizeof *r);
   r->front = front;
   r->n_shards = front->opts.shards;
   pthread_mutex_init(&r->lock, NULL);
   pthread_mutex_init(&r->publish_lock, NULL);
   pthread_cond_init(&r->noop_cond, NULL);
   pthread_cond_init(&r->session_cond, NULL);
   r->next_stream_id = ((int64_t)0x4d53 << 44) + 1; /* apart from the front's cursor ids */
   for (int s = 0; s < r->n_shards; s++) {
      md_server_opts_t opts = front->opts;
      opts.mongos = false;
      opts.members = 1;
      opts.port_file = NULL;
      r->shards[s] = md_server_new(&opts);
      r->shards[s]->data.doc_key = md_sk_doc_key;
      r->shards[s]->data.doc_key_ctx = r;
   }
   front->router = r;
   front->route = route;
   md_catalog_publish(r);
   md_noop_start(r);
}

void
md_router_detach(md_server_t *front)
{
   md_router_t *r = front ? front->router : NULL;
   if (!r) {
      return;
   }
   md_noop_stop(r);
   md_mstream_destroy_all(r);
   for (int s = 0; s < r->n_shards; s++) {
      md_server_destroy(r->shards[s]);
   }
   md_catalog_destroy(r);
   md_rsessions_destroy(r);
   pthread_cond_destroy(&r->session_cond);
   pthread_cond_destroy(&r->noop_cond);
   pthread_mutex_destroy(&r->lock);
   pthread_mutex_destroy(&r->publish_lock);
   front->route = NULL;
   front->router = NULL;
   free(r);
}
