/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reads through mongos. A read of an unsharded collection runs on its database's primary
 * shard; its results are kept in a cursor on the front (the client's getMores go there). A
 * read of a sharded collection gathers the documents its filter selects from every shard it
 * targets into a temporary collection on the front, which then runs the command itself, so
 * sort, skip, limit, projection, count, distinct and pipelines merge as 6.0's mongos merges
 * them (src/mongo/s/query/cluster_find.cpp, cluster_aggregation_planner.cpp), with every
 * stage at the merger. Runs on the client's thread, calling shards and the front unlocked.
 */
#include <stdlib.h>
#include <string.h>

#include "data/cursor.h"
#include "shard/router-private.h"

#define TMP_DB "mongos_tmp"

/* Appends the documents of a reply's cursor batch to docs[*n] (growing it). */
static int64_t
take_batch(const bson_t *reply, bson_t ***docs, size_t *n, size_t *cap, const char **ns_out)
{
   bson_iter_t it, cursor, batch;
   int64_t id = 0;
   if (!bson_iter_init_find(&it, reply, "cursor") || !bson_iter_recurse(&it, &cursor)) {
      return 0;
   }
   while (bson_iter_next(&cursor)) {
      const char *key = bson_iter_key(&cursor);
      if (strcmp(key, "id") == 0) {
         id = bson_iter_as_int64(&cursor);
      } else if (strcmp(key, "ns") == 0 && ns_out) {
         *ns_out = bson_iter_utf8(&cursor, NULL);
      } else if ((strcmp(key, "firstBatch") == 0 || strcmp(key, "nextBatch") == 0) &&
                 bson_iter_recurse(&cursor, &batch)) {
         while (bson_iter_next(&batch) && BSON_ITER_HOLDS_DOCUMENT(&batch)) {
            uint32_t len;
            const uint8_t *data;
            bson_iter_document(&batch, &len, &data);
            if (*n == *cap) {
               *cap = *cap ? *cap * 2 : 64;
               *docs = realloc(*docs, *cap * sizeof **docs);
            }
            (*docs)[(*n)++] = bson_new_from_data(data, len);
         }
      }
   }
   return id;
}

/* Follows a shard's cursor to its end. */
static void
drain(md_router_t *r, int s, const char *db, const char *coll, int64_t id, bson_t ***docs,
      size_t *n, size_t *cap)
{
   while (id != 0) {
      bson_t cmd, reply;
      bson_init(&cmd);
      BSON_APPEND_INT64(&cmd, "getMore", id);
      BSON_APPEND_UTF8(&cmd, "collection", coll);
      BSON_APPEND_UTF8(&cmd, "$db", db);
      md_router_call(r, s, &cmd, &reply);
      id = take_batch(&reply, docs, n, cap, NULL);
      bson_destroy(&cmd);
      bson_destroy(&reply);
   }
}

bson_t **
md_router_fetch(md_router_t *r, int s, const char *db, const char *coll, const bson_t *filter,
                size_t *n)
{
   bson_t cmd, reply;
   bson_t **docs = NULL;
   size_t cap = 0;
   *n = 0;
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, "find", coll);
   if (filter) {
      BSON_APPEND_DOCUMENT(&cmd, "filter", filter);
   }
   BSON_APPEND_UTF8(&cmd, "$db", db);
   md_router_call(r, s, &cmd, &reply);
   int64_t id = take_batch(&reply, &docs, n, &cap, NULL);
   bson_destroy(&cmd);
   bson_destroy(&reply);
   drain(r, s, db, coll, id, &docs, n, &cap);
   return docs;
}

/* The command's filter: find's filter, count's and distinct's query, an aggregate's leading
 * $match (a view into cmd, or false). */
static bool
filter_of(const bson_t *cmd, const char *name, bson_t *filter)
{
   bson_iter_t it, stage;
   const char *field = strcmp(name, "find") == 0 ? "filter" : "query";
   if (strcmp(name, "aggregate") == 0) {
      if (!bson_iter_init_find(&it, cmd, "pipeline") || !bson_iter_recurse(&it, &it) ||
          !bson_iter_next(&it) || !bson_iter_recurse(&it, &stage) || !bson_iter_next(&stage) ||
          strcmp(bson_iter_key(&stage), "$match") != 0 || !BSON_ITER_HOLDS_DOCUMENT(&stage)) {
         return false;
      }
      it = stage;
   } else if (!bson_iter_init_find(&it, cmd, field) || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return false;
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   return bson_init_static(filter, data, len);
}

/* Stages that read other collections or write: not merged by this mongos. */
static const char *
unmergeable_stage(const bson_t *cmd)
{
   static const char *const stages[] = {"$lookup", "$graphLookup", "$unionWith", "$out",
                                        "$merge",  "$facet",       NULL};
   bson_iter_t it, pipeline, stage;
   if (!bson_iter_init_find(&it, cmd, "pipeline") || !bson_iter_recurse(&it, &pipeline)) {
      return NULL;
   }
   while (bson_iter_next(&pipeline)) {
      if (bson_iter_recurse(&pipeline, &stage) && bson_iter_next(&stage)) {
         for (size_t i = 0; stages[i]; i++) {
            if (strcmp(bson_iter_key(&stage), stages[i]) == 0) {
               return stages[i];
            }
         }
      }
   }
   return NULL;
}

/* `reply` with its cursor's id and (when given) ns replaced. */
static void
replace_cursor(const bson_t *reply, int64_t id, const char *ns, bson_t *out)
{
   bson_iter_t it, cursor;
   bson_init(out);
   bson_iter_init(&it, reply);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "cursor") != 0 || !bson_iter_recurse(&it, &cursor)) {
         bson_append_iter(out, NULL, 0, &it);
         continue;
      }
      bson_t c;
      BSON_APPEND_DOCUMENT_BEGIN(out, "cursor", &c);
      while (bson_iter_next(&cursor)) {
         if (strcmp(bson_iter_key(&cursor), "id") == 0) {
            BSON_APPEND_INT64(&c, "id", id);
         } else if (ns && strcmp(bson_iter_key(&cursor), "ns") == 0) {
            BSON_APPEND_UTF8(&c, "ns", ns);
         } else {
            bson_append_iter(&c, NULL, 0, &cursor);
         }
      }
      bson_append_document_end(out, &c);
   }
}

/* Runs a read on one shard; a cursor it leaves open is drained into one on the front. */
static bool
read_on_shard(md_router_t *r, int s, const bson_t *cmd, bson_t *reply)
{
   bson_t sent, shard_reply;
   bson_t **docs = NULL;
   size_t n = 0, cap = 0;
   const char *ns = NULL, *db, *coll;
   char *own_ns = md_route_ns(cmd, &db, &coll);
   md_router_rewrite(cmd, NULL, NULL, md_shard_drop, &sent);
   md_router_call(r, s, &sent, &shard_reply);
   bson_destroy(&sent);
   int64_t id = take_batch(&shard_reply, &docs, &n, &cap, &ns);
   if (id == 0) {
      md_docs_free(docs, n);
      bson_copy_to(&shard_reply, reply);
   } else {
      size_t first = n;
      drain(r, s, db, coll ? coll : "", id, &docs, &n, &cap);
      md_server_t *front = r->front;
      pthread_mutex_lock(&front->data.lock);
      md_cursor_t *cur =
         md_cursor_new(&front->data.cursors, ns ? ns : own_ns, docs, n, first, NULL);
      int64_t front_id = cur->id;
      pthread_mutex_unlock(&front->data.lock);
      replace_cursor(&shard_reply, front_id, NULL, reply);
   }
   bson_destroy(&shard_reply);
   bson_free(own_ns);
   return true;
}

static void
run_simple(md_router_t *r, const char *verb, const char *coll)
{
   bson_t cmd, reply;
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, verb, coll);
   BSON_APPEND_UTF8(&cmd, "$db", TMP_DB);
   md_router_call(r, -1, &cmd, &reply);
   bson_destroy(&cmd);
   bson_destroy(&reply);
}

/* Copies docs into the front's collection TMP_DB.tmp, 1000 at a time. */
static void
put_front(md_router_t *r, const char *tmp, bson_t **docs, size_t n)
{
   for (size_t start = 0; start < n; start += 1000) {
      bson_t cmd, arr, reply;
      bson_init(&cmd);
      BSON_APPEND_UTF8(&cmd, "insert", tmp);
      BSON_APPEND_ARRAY_BEGIN(&cmd, "documents", &arr);
      for (size_t i = start; i < n && i < start + 1000; i++) {
         char key[16];
         const char *k;
         bson_uint32_to_string((uint32_t)(i - start), &k, key, sizeof key);
         BSON_APPEND_DOCUMENT(&arr, k, docs[i]);
      }
      bson_append_array_end(&cmd, &arr);
      BSON_APPEND_BOOL(&cmd, "ordered", false);
      BSON_APPEND_UTF8(&cmd, "$db", TMP_DB);
      md_router_call(r, -1, &cmd, &reply);
      bson_destroy(&cmd);
      bson_destroy(&reply);
   }
}

/* A sharded collection's read: gathered into a temporary collection, run there. */
static bool
read_gathered(md_router_t *r, const bson_t *cmd, const char *name, uint32_t targets, const char *ns,
              bson_t *reply)
{
   const char *db, *coll;
   bson_t filter, sent, front_reply;
   char tmp[32];
   char *own = md_route_ns(cmd, &db, &coll);
   bool has_filter = filter_of(cmd, name, &filter);
   pthread_mutex_lock(&r->lock);
   snprintf(tmp, sizeof tmp, "t%llu", (unsigned long long)++r->next_tmp);
   pthread_mutex_unlock(&r->lock);
   run_simple(r, "create", tmp);
   for (int s = 0; s < r->n_shards; s++) {
      if (targets & (1u << s)) {
         size_t n;
         bson_t **docs = md_router_fetch(r, s, db, coll, has_filter ? &filter : NULL, &n);
         put_front(r, tmp, docs, n);
         md_docs_free(docs, n);
      }
   }
   static const char *const drop[] = {"$clusterTime",
                                      "readConcern",
                                      "$readPreference",
                                      "lsid",
                                      "txnNumber",
                                      "autocommit",
                                      "startTransaction",
                                      "hint",
                                      NULL};
   md_router_rewrite(cmd, tmp, TMP_DB, drop, &sent);
   md_router_call(r, -1, &sent, &front_reply);
   bson_destroy(&sent);
   bson_iter_t it, id_it;
   int64_t id =
      bson_iter_init(&id_it, &front_reply) && bson_iter_find_descendant(&id_it, "cursor.id", &it)
         ? bson_iter_as_int64(&it)
         : -1;
   if (id >= 0) {
      pthread_mutex_lock(&r->front->data.lock);
      md_cursor_t *cur = id ? md_cursor_get(&r->front->data.cursors, id) : NULL;
      if (cur) {
         free(cur->ns);
         cur->ns = strdup(ns);
      }
      pthread_mutex_unlock(&r->front->data.lock);
      replace_cursor(&front_reply, id, ns, reply);
   } else {
      bson_copy_to(&front_reply, reply);
   }
   bson_destroy(&front_reply);
   run_simple(r, "drop", tmp);
   bson_free(own);
   return true;
}

bool
md_route_read(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_iter_init(&it, cmd);
   bson_iter_next(&it);
   const char *name = bson_iter_key(&it), *db, *coll;
   char *ns = md_route_ns(cmd, &db, &coll);
   if (!ns) { /* aggregate: 1 and the like: the front's own */
      return md_router_call(r, -1, cmd, reply) || true;
   }
   int primary = md_route_primary(r, db);
   bson_t filter;
   bool has_filter = filter_of(cmd, name, &filter);
   pthread_mutex_lock(&r->lock);
   md_rcoll_t *c = md_catalog_coll(r, ns);
   uint32_t targets = c ? md_sk_targets(c, has_filter ? &filter : NULL) : 0;
   pthread_mutex_unlock(&r->lock);
   const char *stage = c ? unmergeable_stage(cmd) : NULL;
   if (stage) {
      md_router_error(r, reply, 20,
                      "%s on a sharded collection is not supported by "
                      "test-mongod's mongos",
                      stage);
   } else if (c) {
      read_gathered(r, cmd, name, targets, ns, reply);
   } else {
      read_on_shard(r, primary, cmd, reply);
   }
   bson_free(ns);
   return true;
}
