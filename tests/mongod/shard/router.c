/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The router: what mongos does with each command of a client (hello as mongos, the sharding
 * admin commands, routing reads and writes to the shards), the in-process shards themselves
 * and their periodic no-op writer. A client connection's thread runs its commands here; the
 * catalog is guarded by the router's lock (router-private.h), each shard by its own.
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
   static const char *const writes[] = {"insert", "update", "delete", "findAndModify",
                                        "findandmodify", NULL};
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
   pthread_mutex_lock(&shard->lock);
   if (md_ts_cmp(shard->oplog.last, ct) < 0) {
      shard->oplog.last = ct;
   }
   pthread_mutex_unlock(&shard->lock);
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

bool
md_router_call(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply)
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
md_router_error(md_router_t *r, bson_t *reply, int32_t code, const char *fmt, ...)
{
   bson_error_t error = {0};
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(error.message, sizeof error.message, fmt, ap);
   va_end(ap);
   error.code = (uint32_t) code;
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
            ? bson_iter_utf8(&it, NULL) : "";
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
   static const char *const repl_fields[] = {"hosts", "setName", "setVersion", "secondary",
                                             "primary", "me", "electionId", "lastWrite",
                                             "isreplicaset", "arbiters", "passives", NULL};
   bson_t local;
   bson_iter_t it;
   (void) r;
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
   "ping", "buildInfo", "buildinfo", "getParameter", "whatsmyuri", "connectionStatus",
   "endSessions", "hostInfo", "getCmdLineOpts", "serverStatus", "killAllSessions",
   "configureFailPoint", "getLog", "listCommands", NULL};

/* What mongos 6.0 has no such command for, or test-mongod's mongos does not do: named. */
static bool
unsupported(md_router_t *r, const char *name, bson_t *reply)
{
   static const char *const txn[] = {"commitTransaction", "abortTransaction", NULL};
   static const char *const repl[] = {"replSetGetStatus", "replSetStepDown", "replSetStepUp",
                                      "replSetFreeze", "testMemberFault", "testRollbackLog",
                                      NULL};
   for (size_t i = 0; txn[i]; i++) {
      if (strcmp(name, txn[i]) == 0) {
         return md_router_error(r, reply, 20, "%s: transactions through mongos are not "
                                              "supported by test-mongod", name);
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

/* What a command sent on to a shard leaves out: the shards are single members that need no
 * gossiped time, read preference or read concern (their majority is their own), and session
 * fields (test-mongod's mongos splits a batch into one command per statement, which a shard
 * would take for retries of statement 0; retryable writes are therefore not deduplicated). */
const char *const md_shard_drop[] = {"$clusterTime", "readConcern", "$readPreference",
                                         "lsid", "txnNumber", NULL};

/* Runs `cmd` unchanged (but for shard_drop) on one shard. */
static bool
forward(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply)
{
   bson_t sent;
   md_router_rewrite(cmd, NULL, NULL, md_shard_drop, &sent);
   md_router_call(r, shard, &sent, reply);
   bson_destroy(&sent);
   return true;
}

/* The primary shard of the command's database (created on first use, as mongos creates a
 * database implicitly). */
static int
primary_of(md_router_t *r, const bson_t *cmd)
{
   bson_iter_t it;
   const char *db = bson_iter_init_find(&it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&it)
                       ? bson_iter_utf8(&it, NULL) : "test";
   return md_route_primary(r, db);
}

int
md_route_primary(md_router_t *r, const char *db)
{
   pthread_mutex_lock(&r->lock);
   size_t before = r->n_dbs;
   int shard = md_catalog_db(r, db, true)->primary;
   bool created = r->n_dbs != before;
   pthread_mutex_unlock(&r->lock);
   if (created) {
      md_catalog_publish(r);
   }
   return shard;
}

static bool
is_sharded_ns(md_router_t *r, const bson_t *cmd)
{
   const char *db, *coll;
   char *ns = md_route_ns(cmd, &db, &coll);
   pthread_mutex_lock(&r->lock);
   bool sharded = ns && md_catalog_coll(r, ns) != NULL;
   pthread_mutex_unlock(&r->lock);
   bson_free(ns);
   return sharded;
}

/* DDL on a sharded collection goes to every shard (each holds its part); the first shard's
 * reply stands for all, or the first error. */
static bool
broadcast(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bool have = false;
   for (int s = 0; s < r->n_shards; s++) {
      bson_t one;
      forward(r, s, cmd, &one);
      bson_iter_t it;
      bool ok = bson_iter_init_find(&it, &one, "ok") && bson_iter_as_bool(&it);
      if (!have || !ok) {
         if (have) {
            bson_destroy(reply);
         }
         bson_copy_to(&one, reply);
         have = true;
      }
      bson_destroy(&one);
      if (!ok) {
         break;
      }
   }
   return true;
}

/* drop and dropDatabase also forget the sharding metadata. */
static bool
drop(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply)
{
   const char *db, *coll;
   char *ns = md_route_ns(cmd, &db, &coll);
   broadcast(r, cmd, reply);
   pthread_mutex_lock(&r->lock);
   for (size_t i = 0; i < r->n_colls; i++) {
      const char *dot = strchr(r->colls[i].ns, '.');
      bool hit = strcmp(name, "drop") == 0
                    ? ns && strcmp(r->colls[i].ns, ns) == 0
                    : strncmp(r->colls[i].ns, db, (size_t) (dot - r->colls[i].ns)) == 0 &&
                         strlen(db) == (size_t) (dot - r->colls[i].ns);
      if (hit) {
         md_rcoll_t gone = r->colls[i];
         r->colls[i--] = r->colls[--r->n_colls];
         for (size_t k = 0; k < gone.n_chunks; k++) {
            bson_destroy(gone.chunks[k].min);
            bson_destroy(gone.chunks[k].max);
         }
         free(gone.chunks);
         bson_destroy(gone.key);
         bson_free(gone.ns);
      }
   }
   pthread_mutex_unlock(&r->lock);
   bson_free(ns);
   md_catalog_publish(r);
   return true;
}

/* listDatabases: every shard's, merged by name. */
static bool
list_databases(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_t names = BSON_INITIALIZER; /* name -> size */
   for (int s = 0; s < r->n_shards; s++) {
      bson_t one;
      bson_iter_t it, dbs, db;
      forward(r, s, cmd, &one);
      if (bson_iter_init_find(&it, &one, "databases") && bson_iter_recurse(&it, &dbs)) {
         while (bson_iter_next(&dbs) && bson_iter_recurse(&dbs, &db)) {
            const char *name = bson_iter_find(&db, "name") ? bson_iter_utf8(&db, NULL) : "";
            bson_iter_t size;
            int64_t bytes = bson_iter_recurse(&dbs, &size) && bson_iter_find(&size, "sizeOnDisk")
                               ? bson_iter_as_int64(&size) : 0;
            bson_iter_t old;
            if (bson_iter_init_find(&old, &names, name)) {
               bson_iter_overwrite_int64(&old, bson_iter_int64(&old) + bytes);
            } else {
               BSON_APPEND_INT64(&names, name, bytes);
            }
         }
      }
      bson_destroy(&one);
   }
   bson_iter_t it;
   bson_t arr, doc;
   int64_t total = 0;
   uint32_t i = 0;
   bson_init(reply);
   BSON_APPEND_ARRAY_BEGIN(reply, "databases", &arr);
   bson_iter_init(&it, &names);
   while (bson_iter_next(&it)) {
      char key[16];
      const char *k;
      bson_uint32_to_string(i++, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, k, &doc);
      BSON_APPEND_UTF8(&doc, "name", bson_iter_key(&it));
      BSON_APPEND_INT64(&doc, "sizeOnDisk", bson_iter_int64(&it));
      BSON_APPEND_BOOL(&doc, "empty", bson_iter_int64(&it) == 0);
      bson_append_document_end(&arr, &doc);
      total += bson_iter_int64(&it);
   }
   bson_append_array_end(reply, &arr);
   BSON_APPEND_INT64(reply, "totalSize", total);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   bson_destroy(&names);
   return true;
}

static bool
get_more(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   if (bson_iter_init(&it, cmd) && bson_iter_next(&it) && BSON_ITER_HOLDS_INT64(&it) &&
       md_mstream_get_more(r, cmd, bson_iter_int64(&it), reply)) {
      return true;
   }
   return md_command_run_local(conn, cmd, reply);
}

static bool
kill_cursors(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it, ids;
   if (bson_iter_init_find(&it, cmd, "cursors") && bson_iter_recurse(&it, &ids) &&
       bson_iter_next(&ids) && BSON_ITER_HOLDS_INT64(&ids) &&
       md_mstream_kill(r, bson_iter_int64(&ids))) {
      bson_t arr;
      bson_init(reply);
      BSON_APPEND_ARRAY_BEGIN(reply, "cursorsKilled", &arr);
      BSON_APPEND_INT64(&arr, "0", bson_iter_int64(&ids));
      bson_append_array_end(reply, &arr);
      static const char *const empty[] = {"cursorsNotFound", "cursorsAlive", "cursorsUnknown"};
      for (size_t i = 0; i < 3; i++) {
         BSON_APPEND_ARRAY_BEGIN(reply, empty[i], &arr);
         bson_append_array_end(reply, &arr);
      }
      BSON_APPEND_DOUBLE(reply, "ok", 1.0);
      return true;
   }
   return md_command_run_local(conn, cmd, reply);
}

static const struct {
   const char *name;
   route_fn fn;
} routed[] = {
   {"insert", md_route_insert},
   {"update", md_route_update},
   {"delete", md_route_delete},
   {"findAndModify", md_route_find_and_modify},
   {"findandmodify", md_route_find_and_modify},
   {"find", md_route_read},
   {"count", md_route_read},
   {"distinct", md_route_read},
   {"enableSharding", md_cmd_enable_sharding},
   {"enablesharding", md_cmd_enable_sharding},
   {"shardCollection", md_cmd_shard_collection},
   {"shardcollection", md_cmd_shard_collection},
   {"listShards", md_cmd_list_shards},
   {"listshards", md_cmd_list_shards},
   {"split", md_cmd_split},
   {"moveChunk", md_cmd_move_chunk},
   {"movechunk", md_cmd_move_chunk},
   {"listDatabases", list_databases},
};

/* Commands on a database's collections that its primary shard runs (or every shard, for a
 * sharded collection's DDL). */
static const char *const by_database[] = {
   "create", "createIndexes", "dropIndexes", "listIndexes", "listCollections", "collMod",
   "renameCollection", "dbStats", "collStats", NULL};

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

static bool
on_database(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply)
{
   bool sharded = is_sharded_ns(r, cmd);
   if (sharded && strcmp(name, "renameCollection") == 0) {
      return md_router_error(r, reply, 20, "renameCollection of a sharded collection is "
                                           "not supported by test-mongod's mongos");
   }
   if (sharded && strcmp(name, "listIndexes") != 0 && strcmp(name, "collStats") != 0) {
      return broadcast(r, cmd, reply);
   }
   return forward(r, primary_of(r, cmd), cmd, reply);
}

static bool
route(md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   md_router_t *r = conn->srv->router;
   bson_iter_t it;
   const char *name = bson_iter_init(&it, cmd) && bson_iter_next(&it) ? bson_iter_key(&it) : "";
   if (strcmp(name, "hello") == 0 || strcasecmp(name, "isMaster") == 0) {
      return hello(r, conn, cmd, reply);
   }
   if (bson_iter_init_find(&it, cmd, "autocommit") ||
       bson_iter_init_find(&it, cmd, "startTransaction")) {
      return md_router_error(r, reply, 20, "%s: transactions through mongos are not "
                                           "supported by test-mongod", name);
   }
   if (unsupported(r, name, reply)) {
      return true;
   }
   if (in_list(front_commands, name) || strncmp(name, "sasl", 4) == 0) {
      return md_command_run_local(conn, cmd, reply);
   }
   if (strcmp(name, "getMore") == 0) {
      return get_more(r, conn, cmd, reply);
   }
   if (strcmp(name, "killCursors") == 0) {
      return kill_cursors(r, conn, cmd, reply);
   }
   bson_iter_t db_it;
   bool config = bson_iter_init_find(&db_it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&db_it) &&
                 strcmp(bson_iter_utf8(&db_it, NULL), "config") == 0;
   if (config) {
      /* The config database lives on the front (mongos reads it from the config servers). */
      return md_command_run_local(conn, cmd, reply);
   }
   if (strcmp(name, "aggregate") == 0) {
      return is_change_stream(cmd) ? md_mstream_open(r, cmd, reply)
                                   : md_route_read(r, cmd, reply);
   }
   for (size_t i = 0; i < sizeof routed / sizeof routed[0]; i++) {
      if (strcmp(routed[i].name, name) == 0) {
         return routed[i].fn(r, cmd, reply);
      }
   }
   if (strcmp(name, "drop") == 0 || strcmp(name, "dropDatabase") == 0) {
      return drop(r, name, cmd, reply);
   }
   if (in_list(by_database, name)) {
      return on_database(r, name, cmd, reply);
   }
   return md_router_error(r, reply, 59, "no such command: '%s'", name);
}

/* ---- the shards' periodic no-op writer ---------------------------------------------------- */

/* As 6.0's periodic no-op writer (src/mongo/db/repl/noop_writer.cpp) writes to an idle
 * primary's oplog every periodicNoopIntervalSecs, an idle shard's cluster time moves on:
 * here its clock ticks without an entry (change streams skip no-ops anyway), which is what
 * lets a merged change stream through mongos pass that shard's time. */
static void
noop_tick(md_server_t *shard, md_ts_t *seen)
{
   pthread_mutex_lock(&shard->lock);
   md_oplog_t *log = &shard->oplog;
   if (md_ts_cmp(log->last, *seen) == 0) {
      uint32_t secs = (uint32_t) time(NULL);
      if (secs > log->last.t) {
         log->last.t = secs;
         log->last.i = 1;
      } else {
         log->last.i++;
      }
      pthread_cond_broadcast(&log->cond);
   }
   *seen = log->last;
   pthread_mutex_unlock(&shard->lock);
}

static void *
noop_main(void *arg)
{
   md_router_t *r = arg;
   md_ts_t seen[MD_MAX_SHARDS] = {{0, 0}};
   pthread_mutex_lock(&r->lock);
   while (r->noop_running) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      int64_t ns = until.tv_nsec + (int64_t) r->front->opts.periodic_noop_ms * 1000000;
      until.tv_sec += (time_t) (ns / 1000000000);
      until.tv_nsec = (long) (ns % 1000000000);
      pthread_cond_timedwait(&r->noop_cond, &r->lock, &until);
      if (!r->noop_running) {
         break;
      }
      pthread_mutex_unlock(&r->lock);
      for (int s = 0; s < r->n_shards; s++) {
         noop_tick(r->shards[s], &seen[s]);
      }
      pthread_mutex_lock(&r->lock);
   }
   pthread_mutex_unlock(&r->lock);
   return NULL;
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
   r->next_stream_id = ((int64_t) 0x4d53 << 44) + 1; /* apart from the front's cursor ids */
   for (int s = 0; s < r->n_shards; s++) {
      md_server_opts_t opts = front->opts;
      opts.mongos = false;
      opts.members = 1;
      opts.port_file = NULL;
      r->shards[s] = md_server_new(&opts);
      r->shards[s]->doc_key = md_sk_doc_key;
      r->shards[s]->doc_key_ctx = r;
   }
   front->router = r;
   front->route = route;
   md_catalog_publish(r);
   r->noop_running = true;
   pthread_create(&r->noop_thread, NULL, noop_main, r);
}

void
md_router_detach(md_server_t *front)
{
   md_router_t *r = front ? front->router : NULL;
   if (!r) {
      return;
   }
   pthread_mutex_lock(&r->lock);
   r->noop_running = false;
   pthread_cond_signal(&r->noop_cond);
   pthread_mutex_unlock(&r->lock);
   pthread_join(r->noop_thread, NULL);
   md_mstream_destroy_all(r);
   for (int s = 0; s < r->n_shards; s++) {
      md_server_destroy(r->shards[s]);
   }
   md_catalog_destroy(r);
   pthread_cond_destroy(&r->noop_cond);
   pthread_mutex_destroy(&r->lock);
   pthread_mutex_destroy(&r->publish_lock);
   front->route = NULL;
   front->router = NULL;
   free(r);
}
