/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What mongos sends on whole: commands to a database's primary shard, DDL of a sharded
 * collection to every shard, drop and dropDatabase (which also forget the sharding
 * metadata), listDatabases merged from every shard, and getMore/killCursors split between
 * merged change streams and the front's cursors. Runs on the client's thread; the catalog
 * is read under the router's lock, shards are called without it.
 */
#include <stdlib.h>
#include <string.h>

#include "changestream/changestream.h"
#include "commands/commands.h"
#include "shard/router-private.h"

/* What a command sent on to a shard leaves out: the shards are single members that need no
 * gossiped time, read preference or read concern (their majority is their own), and session
 * fields (test-mongod's mongos splits a batch into one command per statement, which a shard
 * would take for retries of statement 0; the router de-duplicates retryable writes itself,
 * route-session.c, and adds a transaction's fields for each shard, route-txn.c). */
const char *const md_shard_drop[] = {"$clusterTime", "readConcern", "$readPreference",  "lsid",
                                     "txnNumber",    "autocommit",  "startTransaction", NULL};

bool
md_route_forward(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply)
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
                       ? bson_iter_utf8(&it, NULL)
                       : "test";
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
      md_route_forward(r, s, cmd, &one);
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
bool
md_route_drop(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply)
{
   const char *db, *coll;
   char *ns = md_route_ns(cmd, &db, &coll);
   if (strcmp(name, "drop") == 0 && !is_sharded_ns(r, cmd)) {
      bson_free(ns);
      return md_route_forward(r, primary_of(r, cmd), cmd, reply); /* nothing to forget */
   }
   broadcast(r, cmd, reply);
   pthread_mutex_lock(&r->lock);
   for (size_t i = 0; i < r->n_colls; i++) {
      const char *dot = strchr(r->colls[i].ns, '.');
      bool hit = strcmp(name, "drop") == 0
                    ? ns && strcmp(r->colls[i].ns, ns) == 0
                    : strncmp(r->colls[i].ns, db, (size_t)(dot - r->colls[i].ns)) == 0 &&
                         strlen(db) == (size_t)(dot - r->colls[i].ns);
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
bool
md_route_list_databases(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_t names = BSON_INITIALIZER; /* name -> size */
   for (int s = 0; s < r->n_shards; s++) {
      bson_t one;
      bson_iter_t it, dbs, db;
      md_route_forward(r, s, cmd, &one);
      if (bson_iter_init_find(&it, &one, "databases") && bson_iter_recurse(&it, &dbs)) {
         while (bson_iter_next(&dbs) && bson_iter_recurse(&dbs, &db)) {
            const char *name = bson_iter_find(&db, "name") ? bson_iter_utf8(&db, NULL) : "";
            bson_iter_t size;
            int64_t bytes = bson_iter_recurse(&dbs, &size) && bson_iter_find(&size, "sizeOnDisk")
                               ? bson_iter_as_int64(&size)
                               : 0;
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

/* failGetMoreAfterCursorCheckout on a merged stream's getMore, as 6.0's mongos checks it
 * once the cursor is checked out (r6.0 src/mongo/s/query/cluster_find.cpp): its code (1 by
 * default), labelled ResumableChangeStreamError when resumable, or the connection closed.
 * True when it fired. */
static bool
checkout_failpoint(md_router_t *r, bson_t *reply, bool *close)
{
   md_fp_action_t fp;
   md_server_t *front = r->front;
   pthread_mutex_lock(&front->data.lock);
   md_failpoint_check_getmore(&front->failpoints, &fp);
   pthread_mutex_unlock(&front->data.lock);
   if (!fp.hit) {
      return false;
   }
   *close = fp.close_connection;
   if (fp.close_connection) {
      bson_init(reply);
      return true;
   }
   bson_error_t error = {.code = (uint32_t)(fp.code ? fp.code : 1)};
   bson_strncpy(error.message, "Failing getMore via 'failGetMoreAfterCursorCheckout' failpoint",
                sizeof error.message);
   bson_t labels = BSON_INITIALIZER;
   if (md_changestream_is_resumable_code(fp.code ? fp.code : 1)) {
      BSON_APPEND_UTF8(&labels, "0", "ResumableChangeStreamError");
   }
   md_error_reply(front, &error, &labels, reply);
   bson_destroy(&labels);
   return true;
}

bool
md_route_get_more(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   if (bson_iter_init(&it, cmd) && bson_iter_next(&it) && BSON_ITER_HOLDS_INT64(&it) &&
       md_mstream_owns(r, bson_iter_int64(&it))) {
      bool close = false;
      bson_t epilogue; /* a getMore takes no write concern */
      bool fired = md_command_failpoint(conn, cmd, reply, &close, &epilogue);
      bson_destroy(&epilogue);
      if (fired) {
         if (close) {
            bson_init(reply);
         }
         return !close;
      }
      if (checkout_failpoint(r, reply, &close)) {
         return !close;
      }
      if (md_mstream_get_more(r, cmd, bson_iter_int64(&it), reply)) {
         return true;
      }
   }
   /* The front's cursors: the router's own, outside any session (a cursor read in a
    * transaction was drained from its shard within it). */
   static const char *const session_fields[] = {"lsid", "txnNumber", "autocommit",
                                                "startTransaction", NULL};
   bson_t sent;
   md_router_rewrite(cmd, NULL, NULL, session_fields, &sent);
   bool keep = md_command_run_local(conn, &sent, reply);
   bson_destroy(&sent);
   return keep;
}

bool
md_route_kill_cursors(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply)
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

/* Commands on a database's collections that its primary shard runs (or every shard, for a
 * sharded collection's DDL). */
const char *const md_by_database[] = {
   "create",  "createIndexes",    "dropIndexes", "listIndexes", "listCollections",
   "collMod", "renameCollection", "dbStats",     "collStats",   NULL};

/* renameCollection ({renameCollection: "db.a", to: "db.b"} on admin): an unsharded
 * collection is renamed by its database's primary shard, as 6.0's mongos sends it there
 * (r6.0 src/mongo/s/commands/cluster_rename_collection_cmd.cpp); between databases both
 * must have that primary. */
static bool
route_rename(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   const char *from = bson_iter_init(&it, cmd) && bson_iter_next(&it) && BSON_ITER_HOLDS_UTF8(&it)
                         ? bson_iter_utf8(&it, NULL)
                         : "";
   const char *to = bson_iter_init_find(&it, cmd, "to") && BSON_ITER_HOLDS_UTF8(&it)
                       ? bson_iter_utf8(&it, NULL)
                       : "";
   const char *fdot = strchr(from, '.'), *tdot = strchr(to, '.');
   if (!fdot || !tdot) {
      return md_route_forward(r, primary_of(r, cmd), cmd, reply); /* the shard's errors */
   }
   pthread_mutex_lock(&r->lock);
   bool sharded = md_catalog_coll(r, from) || md_catalog_coll(r, to);
   pthread_mutex_unlock(&r->lock);
   if (sharded) {
      return md_router_error(r, reply, 20,
                             "renameCollection of a sharded collection is "
                             "not supported by test-mongod's mongos");
   }
   char *fdb = bson_strndup(from, (size_t)(fdot - from));
   char *tdb = bson_strndup(to, (size_t)(tdot - to));
   int shard = md_route_primary(r, fdb);
   int target = md_route_primary(r, tdb);
   bson_free(fdb);
   bson_free(tdb);
   if (shard != target) {
      return md_router_error(r, reply, 20,
                             "Source and destination collections must be on the same "
                             "database primary shard");
   }
   return md_route_forward(r, shard, cmd, reply);
}

bool
md_route_on_database(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply)
{
   if (strcmp(name, "renameCollection") == 0) {
      return route_rename(r, cmd, reply);
   }
   bool sharded = is_sharded_ns(r, cmd);
   if (sharded && strcmp(name, "listIndexes") != 0 && strcmp(name, "collStats") != 0) {
      return broadcast(r, cmd, reply);
   }
   return md_route_forward(r, primary_of(r, cmd), cmd, reply);
}
