/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Writes through mongos: inserts split by the shard owning each document's key, updates and
 * deletes targeted (or refused) statement by statement as 6.0's ChunkManagerTargeter does
 * (src/mongo/s/chunk_manager_targeter.cpp), findAndModify by its shard key
 * (src/mongo/s/commands/cluster_find_and_modify_cmd.cpp). Unsharded collections: the whole
 * command goes to the database's primary shard. Runs on the client's thread; the catalog is
 * read under the router's lock, shards are called without it.
 */
#include <stdlib.h>
#include <string.h>

#include "auth/auth-private.h"
#include "shard/router-private.h"

/* The collection's routing: *copy gets the sharded collection's key and chunks (caller frees
 * with rcoll_free), or false for an unsharded one (*primary its database's primary shard). */
static bool
routing(md_router_t *r, const char *ns, const char *db, md_rcoll_t *copy, int *primary)
{
   *primary = md_route_primary(r, db);
   pthread_mutex_lock(&r->lock);
   md_rcoll_t *c = md_catalog_coll(r, ns);
   if (c) {
      *copy = *c;
      copy->key = bson_copy(c->key);
      copy->chunks = malloc(c->n_chunks * sizeof *c->chunks);
      for (size_t i = 0; i < c->n_chunks; i++) {
         copy->chunks[i] = c->chunks[i];
         copy->chunks[i].min = bson_copy(c->chunks[i].min);
         copy->chunks[i].max = bson_copy(c->chunks[i].max);
      }
   }
   pthread_mutex_unlock(&r->lock);
   return c != NULL;
}

static void
rcoll_free(md_rcoll_t *c)
{
   for (size_t i = 0; i < c->n_chunks; i++) {
      bson_destroy(c->chunks[i].min);
      bson_destroy(c->chunks[i].max);
   }
   free(c->chunks);
   bson_destroy(c->key);
}

/* The routing of the collection `cmd` writes to into *c (rcoll_free it) when it is sharded.
 * Otherwise false, with `reply` already answered: error 2 for a collection name that is not a
 * string, or the reply of the database's primary shard, which got the whole command. */
static bool
sharded_routing(md_router_t *r, const bson_t *cmd, md_rcoll_t *c, bson_t *reply)
{
   const char *db, *coll;
   int primary;
   char *ns = md_route_ns(cmd, &db, &coll);
   if (!ns) {
      md_router_error(r, reply, 2, "collection name has invalid type");
      return false;
   }
   bool sharded = routing(r, ns, db, c, &primary);
   bson_free(ns);
   if (!sharded) {
      md_route_forward(r, primary, cmd, reply);
   }
   return sharded;
}

static bool
ordered_of(const bson_t *cmd)
{
   bson_iter_t it;
   return !bson_iter_init_find(&it, cmd, "ordered") || bson_iter_as_bool(&it);
}

/* Runs the statements of `field` whose shards are in shard[] (-1: refused with the error in
 * refusals[i]), consecutive runs for the same shard together when ordered (stopping at the
 * first error), or one batch per shard when not. */
static void
run_batches(md_router_t *r, const bson_t *cmd, const char *field, const bson_t **stmts,
            const int *shard, size_t n, md_merged_t *m)
{
   bool ordered = ordered_of(cmd);
   bool *done = calloc(n ? n : 1, sizeof *done);
   int64_t *indexes = malloc((n ? n : 1) * sizeof *indexes);
   for (size_t start = 0; start < n; start++) {
      if (done[start] || shard[start] < 0) {
         continue;
      }
      bson_t batch = BSON_INITIALIZER;
      uint32_t count = 0;
      for (size_t i = start; i < n; i++) {
         if (shard[i] != shard[start] || done[i]) {
            if (ordered) {
               break;
            }
            continue;
         }
         char key[16];
         const char *k;
         bson_uint32_to_string(count, &k, key, sizeof key);
         BSON_APPEND_DOCUMENT(&batch, k, stmts[i]);
         indexes[count++] = (int64_t)i;
         done[i] = true;
      }
      bool ok = md_merged_send(r, shard[start], cmd, field, &batch, indexes, m);
      bson_destroy(&batch);
      if (!ok && ordered) {
         break;
      }
   }
   free(done);
   free(indexes);
}

/* The statements of `field` as an array of views into `cmd` (free the array and *storage).
 * The storage is sized once: a static bson_t must not move after bson_init_static. */
static const bson_t **
statements(const bson_t *cmd, const char *field, bson_t **storage, size_t *n)
{
   bson_iter_t it, arr;
   *n = 0;
   *storage = NULL;
   if (!bson_iter_init_find(&it, cmd, field) || !bson_iter_recurse(&it, &arr)) {
      return NULL;
   }
   bson_iter_t count = arr;
   size_t cap = 0;
   while (bson_iter_next(&count)) {
      cap++;
   }
   *storage = malloc((cap ? cap : 1) * sizeof **storage);
   const bson_t **views = malloc((cap ? cap : 1) * sizeof *views);
   while (bson_iter_next(&arr)) {
      if (BSON_ITER_HOLDS_DOCUMENT(&arr)) {
         uint32_t len;
         const uint8_t *data;
         bson_iter_document(&arr, &len, &data);
         bson_init_static(&(*storage)[*n], data, len);
         views[*n] = &(*storage)[*n];
         (*n)++;
      }
   }
   return views;
}

/* Inserts: each document to the shard owning its key; a missing shard key field is null
 * (6.0, shard_key_pattern.cpp extractShardKeyFromDoc). */
bool
md_route_insert(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   md_rcoll_t c;
   if (!sharded_routing(r, cmd, &c, reply)) {
      return true;
   }
   bson_t *storage;
   size_t n;
   const bson_t **docs = statements(cmd, "documents", &storage, &n);
   int *shard = malloc((n ? n : 1) * sizeof *shard);
   for (size_t i = 0; i < n; i++) {
      bson_t key;
      md_sk_from_doc(&c, docs[i], &key);
      shard[i] = md_sk_shard(&c, &key);
      bson_destroy(&key);
   }
   md_merged_t m;
   md_merged_init(&m);
   run_batches(r, cmd, "documents", docs, shard, n, &m);
   md_merged_reply(&m, reply);
   free(shard);
   free(docs);
   free(storage);
   rcoll_free(&c);
   return true;
}

/* A refused statement: a write error at its index, as mongos reports a targeting error. */
static void
refuse(md_merged_t *m, size_t index, int32_t code, char *msg)
{
   bson_t err = BSON_INITIALIZER;
   BSON_APPEND_INT32(&err, "index", (int32_t)index);
   BSON_APPEND_INT32(&err, "code", code);
   BSON_APPEND_UTF8(&err, "errmsg", msg);
   md_merged_append(&m->errors, &m->n_errors, &err, (int64_t)index);
   bson_destroy(&err);
   bson_free(msg);
}

/* *out: a view of doc's sub-document `field`, or empty; returns whether there was one. */
static bool
sub_doc(const bson_t *doc, const char *field, bson_t *out)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, doc, field) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      return bson_init_static(out, data, len);
   }
   bson_init(out);
   return false;
}

static bool
flag(const bson_t *doc, const char *field)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, field) && bson_iter_as_bool(&it);
}

/* "{ q: ..., u: ..., multi: false, upsert: false }" as 6.0 prints an update statement. */
static char *
print_stmt(const bson_t *stmt, bool update)
{
   bson_t p = BSON_INITIALIZER;
   bson_iter_t it;
   bson_t q;
   sub_doc(stmt, "q", &q);
   BSON_APPEND_DOCUMENT(&p, "q", &q);
   if (update) {
      if (bson_iter_init_find(&it, stmt, "u")) {
         bson_append_iter(&p, "u", 1, &it);
      }
      BSON_APPEND_BOOL(&p, "multi", flag(stmt, "multi"));
      BSON_APPEND_BOOL(&p, "upsert", flag(stmt, "upsert"));
   } else {
      BSON_APPEND_INT32(&p, "limit",
                        bson_iter_init_find(&it, stmt, "limit") ? (int32_t)bson_iter_as_int64(&it)
                                                                : 0);
   }
   char *text = md_auth_format_command(&p, 100000);
   bson_destroy(&p);
   return text;
}

static int
count_bits(uint32_t bits)
{
   int n = 0;
   for (; bits; bits &= bits - 1) {
      n++;
   }
   return n;
}

/* Where one update statement goes (a bit per shard), or 0 with *code and *msg (bson_free) set:
 * ChunkManagerTargeter::targetUpdate in 6.0. */
static uint32_t
target_update(const md_rcoll_t *c, const bson_t *stmt, int32_t *code, char **msg)
{
   bson_t q, u, key;
   sub_doc(stmt, "q", &q);
   bool u_doc = sub_doc(stmt, "u", &u);
   bson_iter_t it;
   bool replacement = u_doc && (bson_empty(&u) || (bson_iter_init(&it, &u) && bson_iter_next(&it) &&
                                                   bson_iter_key(&it)[0] != '$'));
   char *pattern = md_sk_pattern_string(c->key);
   uint32_t bits = 0;
   if (flag(stmt, "upsert")) {
      if (md_sk_from_query(c, &q, &key)) {
         bits = 1u << md_sk_shard(c, &key);
      } else {
         *code = 61;
         *msg = bson_strdup("Failed to target upsert by query :: could not extract exact "
                            "shard key");
      }
      bson_destroy(&key);
   } else if (count_bits(bits = md_sk_targets(c, &q)) == 1) {
      /* any single shard will do */
   } else if (replacement) {
      /* by the replacement document, its missing fields null, _id taken from the query */
      bson_t doc = BSON_INITIALIZER;
      bson_concat(&doc, &u);
      if (!bson_has_field(&u, "_id") && bson_iter_init_find(&it, &q, "_id")) {
         bson_append_iter(&doc, "_id", 3, &it);
      }
      md_sk_from_doc(c, &doc, &key);
      bits = 1u << md_sk_shard(c, &key);
      bson_destroy(&key);
      bson_destroy(&doc);
   } else if (!flag(stmt, "multi") && !md_sk_exact_id(&q)) {
      char *text = print_stmt(stmt, true);
      *code = 72;
      *msg = bson_strdup_printf(
         "A {multi:false} update on a sharded collection must contain an exact match on _id "
         "(and have the collection default collation) or target a single shard (and have the "
         "simple collation), but this update targeted %d shards. Update request: %s, shard key "
         "pattern: %s",
         count_bits(bits), text, pattern);
      bson_free(text);
      bits = 0;
   }
   bson_free(pattern);
   return bits;
}

/* ChunkManagerTargeter::targetDelete in 6.0: a single delete needs the shard key or _id. */
static uint32_t
target_delete(const md_rcoll_t *c, const bson_t *stmt, int32_t *code, char **msg)
{
   bson_t q;
   sub_doc(stmt, "q", &q);
   bson_iter_t it;
   bool single = bson_iter_init_find(&it, stmt, "limit") && bson_iter_as_int64(&it) == 1;
   bson_t key;
   if (md_sk_from_query(c, &q, &key)) {
      uint32_t bits = 1u << md_sk_shard(c, &key);
      bson_destroy(&key);
      return bits;
   }
   bson_destroy(&key);
   if (single && !md_sk_exact_id(&q)) {
      char *text = print_stmt(stmt, false), *pattern = md_sk_pattern_string(c->key);
      *code = 61;
      *msg = bson_strdup_printf(
         "A single delete on a sharded collection must contain an exact match on _id (and "
         "have the collection default collation) or contain the shard key (and have the "
         "simple collation). Delete request: %s, shard key pattern: %s",
         text, pattern);
      bson_free(text);
      bson_free(pattern);
      return 0;
   }
   return md_sk_targets(c, &q);
}

/* update and delete: statement by statement, each to the shards it targets. */
static bool
route_statements(md_router_t *r, const bson_t *cmd, const char *field, bool update, bson_t *reply)
{
   md_rcoll_t c;
   if (!sharded_routing(r, cmd, &c, reply)) {
      return true;
   }
   bson_t *storage;
   size_t n;
   const bson_t **stmts = statements(cmd, field, &storage, &n);
   md_merged_t m;
   md_merged_init(&m);
   bool ordered = ordered_of(cmd);
   for (size_t i = 0; i < n; i++) {
      int32_t code = 0;
      char *msg = NULL;
      uint32_t bits = update ? target_update(&c, stmts[i], &code, &msg)
                             : target_delete(&c, stmts[i], &code, &msg);
      bool ok = true;
      if (!bits) {
         refuse(&m, i, code, msg);
         ok = false;
      }
      for (int s = 0; s < r->n_shards && ok; s++) {
         if (bits & (1u << s)) {
            bson_t one = BSON_INITIALIZER;
            int64_t index = (int64_t)i;
            BSON_APPEND_DOCUMENT(&one, "0", stmts[i]);
            ok = md_merged_send(r, s, cmd, field, &one, &index, &m);
            bson_destroy(&one);
         }
      }
      if (!ok && ordered) {
         break;
      }
   }
   md_merged_reply(&m, reply);
   free(stmts);
   free(storage);
   rcoll_free(&c);
   return true;
}

bool
md_route_update(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   return route_statements(r, cmd, "updates", true, reply);
}

bool
md_route_delete(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   return route_statements(r, cmd, "deletes", false, reply);
}

/* findAndModify: to the shard its query's shard key names, else 61 as 6.0's
 * cluster_find_and_modify_cmd.cpp. */
bool
md_route_find_and_modify(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   md_rcoll_t c;
   if (!sharded_routing(r, cmd, &c, reply)) {
      return true;
   }
   bson_t q, key;
   sub_doc(cmd, "query", &q);
   bool pinned = md_sk_from_query(&c, &q, &key);
   int target = pinned ? md_sk_shard(&c, &key) : -1;
   bson_destroy(&key);
   rcoll_free(&c);
   if (!pinned) {
      return md_router_error(r, reply, 61,
                             "Query for sharded findAndModify must contain "
                             "the shard key");
   }
   md_route_forward(r, target, cmd, reply);
   return true;
}
