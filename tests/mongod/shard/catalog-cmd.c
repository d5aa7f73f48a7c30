/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * shardCollection, split and moveChunk: the commands that make and change a collection's
 * chunks. Catalog changes happen under the router's lock; what they ask of the shards
 * (creating the collection, counting a chunk's documents) runs without it.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shard/router-private.h"

static md_chunk_t
chunk_new(const bson_t *key, const bson_value_t *lo, const bson_value_t *hi, int shard)
{
   md_chunk_t ch = {.min = bson_new(), .max = bson_new(), .shard = shard, .major = 1};
   bson_iter_t it;
   bson_iter_init(&it, key);
   while (bson_iter_next(&it)) {
      bson_value_t min = {.value_type = BSON_TYPE_MINKEY}, max = {.value_type = BSON_TYPE_MAXKEY};
      bool first = lo && ch.min->len == 5; /* only the first field of a hashed split */
      bson_append_value(ch.min, bson_iter_key(&it), -1, first ? lo : &min);
      bson_append_value(ch.max, bson_iter_key(&it), -1, hi && ch.max->len == 5 ? hi : &max);
   }
   return ch;
}

/* The initial chunks. A leading hashed key on an empty collection gets numInitialChunks
 * (default 2 per shard, as 6.0's calculateHashedSplitPointsForEmptyCollection in
 * src/mongo/db/s/config/initial_split_policy.cpp) evenly over the hash space, each shard a
 * run of adjacent chunks; anything else one chunk [MinKey, MaxKey)
 * on the primary shard, as 6.0 does: `split` and `moveChunk` (of empty chunks) spread it. */
static void
initial_chunks(md_router_t *r, md_rcoll_t *c, bool hashed, bool empty, int primary, int64_t wanted)
{
   if (!hashed || !empty) {
      c->chunks = malloc(sizeof *c->chunks);
      c->chunks[0] = chunk_new(c->key, NULL, NULL, primary);
      c->n_chunks = 1;
      return;
   }
   size_t n = wanted > 0 && wanted <= 8192 ? (size_t)wanted : (size_t)r->n_shards * 2;
   size_t per_shard = (n + (size_t)r->n_shards - 1) / (size_t)r->n_shards;
   c->chunks = calloc(n, sizeof *c->chunks);
   uint64_t step = UINT64_MAX / n + 1;
   for (size_t i = 0; i < n; i++) {
      bson_value_t lo = {.value_type = BSON_TYPE_INT64}, hi = {.value_type = BSON_TYPE_INT64};
      lo.value.v_int64 = (int64_t)((uint64_t)INT64_MIN + step * i);
      hi.value.v_int64 = (int64_t)((uint64_t)INT64_MIN + step * (i + 1));
      c->chunks[i] =
         chunk_new(c->key, i ? &lo : NULL, i + 1 < n ? &hi : NULL, (int)(i / per_shard));
      c->chunks[i].minor = (uint32_t)i;
   }
   c->n_chunks = n;
}

static bool
valid_key(const bson_t *key, bool *hashed)
{
   bson_iter_t it;
   int n = 0, n_hashed = 0;
   bson_iter_init(&it, key);
   *hashed = false;
   while (bson_iter_next(&it)) {
      n++;
      if (BSON_ITER_HOLDS_UTF8(&it)) {
         if (strcmp(bson_iter_utf8(&it, NULL), "hashed") != 0) {
            return false;
         }
         *hashed = *hashed || n == 1; /* pre-split only on a leading hashed field */
         n_hashed++;
      } else if (!BSON_ITER_HOLDS_NUMBER(&it) || bson_iter_as_int64(&it) != 1) {
         return false;
      }
   }
   return n > 0 && n_hashed <= 1;
}

/* How many documents shard `s` holds in db.coll. */
static int64_t
count_on(md_router_t *r, int s, const char *db, const char *coll)
{
   bson_t cmd, reply;
   bson_iter_t it;
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, "count", coll);
   BSON_APPEND_UTF8(&cmd, "$db", db);
   md_router_call(r, s, &cmd, &reply);
   int64_t n = bson_iter_init_find(&it, &reply, "n") ? bson_iter_as_int64(&it) : 0;
   bson_destroy(&cmd);
   bson_destroy(&reply);
   return n;
}

static void
create_on_shards(md_router_t *r, const char *db, const char *coll)
{
   for (int s = 0; s < r->n_shards; s++) {
      bson_t cmd, reply;
      bson_init(&cmd);
      BSON_APPEND_UTF8(&cmd, "create", coll);
      BSON_APPEND_UTF8(&cmd, "$db", db);
      md_router_call(r, s, &cmd, &reply); /* 48 NamespaceExists is fine */
      bson_destroy(&cmd);
      bson_destroy(&reply);
   }
}

/* Whether index key `index` starts with the shard key `key` (same fields, same values). */
static bool
key_prefix(const bson_t *key, const bson_t *index)
{
   bson_iter_t k, i;
   bson_iter_init(&k, key);
   bson_iter_init(&i, index);
   while (bson_iter_next(&k)) {
      if (!bson_iter_next(&i) || strcmp(bson_iter_key(&k), bson_iter_key(&i)) != 0) {
         return false;
      }
      bool same = BSON_ITER_HOLDS_UTF8(&k)
                     ? BSON_ITER_HOLDS_UTF8(&i) &&
                          strcmp(bson_iter_utf8(&k, NULL), bson_iter_utf8(&i, NULL)) == 0
                     : BSON_ITER_HOLDS_NUMBER(&i) && bson_iter_as_double(&i) > 0;
      if (!same) {
         return false;
      }
   }
   return true;
}

/* Whether shard `s` has an index of db.coll that can serve the shard key. */
static bool
has_key_index(md_router_t *r, int s, const char *db, const char *coll, const bson_t *key)
{
   bson_t cmd, reply;
   bson_iter_t it, idx, field;
   bool found = false;
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, "listIndexes", coll);
   BSON_APPEND_UTF8(&cmd, "$db", db);
   if (md_router_call(r, s, &cmd, &reply) && bson_iter_init(&it, &reply) &&
       bson_iter_find_descendant(&it, "cursor.firstBatch", &it) && bson_iter_recurse(&it, &idx)) {
      while (!found && bson_iter_next(&idx)) {
         if (bson_iter_recurse(&idx, &field) && bson_iter_find(&field, "key") &&
             BSON_ITER_HOLDS_DOCUMENT(&field)) {
            uint32_t len;
            const uint8_t *data;
            bson_t index;
            bson_iter_document(&field, &len, &data);
            bson_init_static(&index, data, len);
            found = key_prefix(key, &index);
         }
      }
   }
   bson_destroy(&cmd);
   bson_destroy(&reply);
   return found;
}

/* Creates the shard key's index on every shard, named as createIndexes names it. */
static void
create_key_index(md_router_t *r, const char *db, const char *coll, const bson_t *key)
{
   bson_string_t *name = bson_string_new(NULL);
   bson_iter_t it;
   bson_iter_init(&it, key);
   while (bson_iter_next(&it)) {
      if (name->len) {
         bson_string_append_c(name, '_');
      }
      if (BSON_ITER_HOLDS_UTF8(&it)) {
         bson_string_append_printf(name, "%s_%s", bson_iter_key(&it), bson_iter_utf8(&it, NULL));
      } else {
         bson_string_append_printf(name, "%s_%lld", bson_iter_key(&it),
                                   (long long)bson_iter_as_int64(&it));
      }
   }
   for (int s = 0; s < r->n_shards; s++) {
      bson_t cmd, reply, arr, spec;
      bson_init(&cmd);
      BSON_APPEND_UTF8(&cmd, "createIndexes", coll);
      BSON_APPEND_ARRAY_BEGIN(&cmd, "indexes", &arr);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, "0", &spec);
      BSON_APPEND_DOCUMENT(&spec, "key", key);
      BSON_APPEND_UTF8(&spec, "name", name->str);
      bson_append_document_end(&arr, &spec);
      bson_append_array_end(&cmd, &arr);
      BSON_APPEND_UTF8(&cmd, "$db", db);
      md_router_call(r, s, &cmd, &reply);
      bson_destroy(&cmd);
      bson_destroy(&reply);
   }
   bson_string_free(name, true);
}

/* Enters a newly sharded collection and its initial chunks into the catalog. */
static void
add_collection(md_router_t *r, const char *ns, const bson_t *key, bool unique, bool presplit,
               int primary, int64_t wanted, uint8_t uuid[16])
{
   md_rcoll_t c = {.ns = bson_strdup(ns),
                   .key = bson_copy(key),
                   .unique = unique,
                   .created_t = (uint32_t)time(NULL)};
   bson_oid_init(&c.epoch, NULL);
   for (size_t i = 0; i < sizeof c.uuid; i++) {
      c.uuid[i] = (uint8_t)rand();
   }
   c.uuid[6] = (uint8_t)((c.uuid[6] & 0x0f) | 0x40); /* a version 4 UUID */
   c.uuid[8] = (uint8_t)((c.uuid[8] & 0x3f) | 0x80);
   memcpy(uuid, c.uuid, 16);
   initial_chunks(r, &c, presplit, true, primary, wanted);
   pthread_mutex_lock(&r->lock);
   r->colls = realloc(r->colls, (r->n_colls + 1) * sizeof *r->colls);
   r->colls[r->n_colls++] = c;
   pthread_mutex_unlock(&r->lock);
}

bool
md_cmd_shard_collection(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_t key;
   bool hashed = false;
   bson_iter_init(&it, cmd);
   bson_iter_next(&it);
   const char *ns = BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "";
   const char *dot = strchr(ns, '.');
   if (!dot || dot == ns || !dot[1]) {
      return md_router_error(r, reply, 73, "Invalid namespace %s", ns);
   }
   if (!bson_iter_init_find(&it, cmd, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return md_router_error(r, reply, 40414,
                             "BSON field 'shardCollection.key' is missing "
                             "but a required field");
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   bson_init_static(&key, data, len);
   if (!valid_key(&key, &hashed)) {
      return md_router_error(r, reply, 2,
                             "Unsupported shard key pattern. Pattern must either "
                             "be a single hashed field, or a list of ascending "
                             "fields");
   }
   bool unique = bson_iter_init_find(&it, cmd, "unique") && bson_iter_as_bool(&it);
   char *db = bson_strndup(ns, (size_t)(dot - ns));
   pthread_mutex_lock(&r->lock);
   int primary = md_catalog_db(r, db, true)->primary;
   md_rcoll_t *old = md_catalog_coll(r, ns);
   bool same = old && bson_equal(old->key, &key);
   pthread_mutex_unlock(&r->lock);
   if (old) {
      bson_free(db);
      if (same) { /* 6.0 answers a repeated shardCollection with the same key with ok */
         bson_init(reply);
         BSON_APPEND_UTF8(reply, "collectionsharded", ns);
         BSON_APPEND_DOUBLE(reply, "ok", 1.0);
         return true;
      }
      return md_router_error(r, reply, 23, "sharding already enabled for collection %s", ns);
   }
   /* 6.0 shards a collection only with an index that starts with the shard key, which it
    * creates when the collection is empty (r6.0 src/mongo/db/s/shard_key_util.cpp,
    * validateShardKeyIndexExistsOrCreateIfPossible). */
   bool empty = count_on(r, primary, db, dot + 1) == 0;
   bool indexed = has_key_index(r, primary, db, dot + 1, &key);
   if (!indexed && !empty) {
      bson_free(db);
      return md_router_error(r, reply, 72,
                             "Please create an index that starts with the proposed shard key "
                             "before sharding the collection");
   }
   create_on_shards(r, db, dot + 1);
   if (!indexed) {
      create_key_index(r, db, dot + 1, &key);
   }
   int64_t wanted = bson_iter_init_find(&it, cmd, "numInitialChunks") ? bson_iter_as_int64(&it) : 0;
   uint8_t uuid[16];
   add_collection(r, ns, &key, unique, hashed && empty, primary, wanted, uuid);
   bson_free(db);
   md_catalog_publish(r);
   bson_init(reply);
   BSON_APPEND_UTF8(reply, "collectionsharded", ns);
   BSON_APPEND_BINARY(reply, "collectionUUID", BSON_SUBTYPE_UUID, uuid, 16);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   return true;
}

/* The namespace a chunk command names, split at the dot; false (and the reply) when bad. */
static const char *
chunk_ns(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_iter_init(&it, cmd);
   bson_iter_next(&it);
   const char *ns = BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : "";
   pthread_mutex_lock(&r->lock);
   bool sharded = md_catalog_coll(r, ns) != NULL;
   pthread_mutex_unlock(&r->lock);
   if (!sharded) {
      md_router_error(r, reply, 118, "%s is not sharded", ns); /* NamespaceNotSharded */
      return NULL;
   }
   return ns;
}

/* {split: ns, middle: {key}}: metadata only, as in 6.0 (src/mongo/s/commands/
 * cluster_split_cmd.cpp); `find` and `bounds` (split at the median) are not supported. */
bool
md_cmd_split(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_t middle;
   const char *ns = chunk_ns(r, cmd, reply);
   if (!ns) {
      return true;
   }
   if (!bson_iter_init_find(&it, cmd, "middle") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return md_router_error(r, reply, 2, "split: only 'middle' is supported by test-mongod");
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   bson_init_static(&middle, data, len);
   pthread_mutex_lock(&r->lock);
   md_rcoll_t *c = md_catalog_coll(r, ns);
   size_t i = md_sk_chunk(c, &middle);
   bool ok = bson_count_keys(&middle) == bson_count_keys(c->key) &&
             md_sk_compare(&middle, c->chunks[i].min) != 0;
   if (ok) {
      c->chunks = realloc(c->chunks, (c->n_chunks + 1) * sizeof *c->chunks);
      memmove(&c->chunks[i + 2], &c->chunks[i + 1], (c->n_chunks - i - 1) * sizeof *c->chunks);
      c->chunks[i + 1] = c->chunks[i];
      c->chunks[i + 1].min = bson_copy(&middle);
      c->chunks[i].max = bson_copy(&middle);
      c->chunks[i + 1].minor = c->chunks[i].minor + 1;
      c->n_chunks++;
   }
   pthread_mutex_unlock(&r->lock);
   if (!ok) {
      return md_router_error(r, reply, 2,
                             "cannot split on the chunk's own bounds or with a "
                             "key that is not the shard key");
   }
   md_catalog_publish(r);
   bson_init(reply);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   return true;
}

/* Whether shard `from` holds a document of chunk `bounds` ([min, max) of collection c). */
static bool
chunk_has_documents(md_router_t *r, const md_rcoll_t *copy, int from, const bson_t *min,
                    const bson_t *max)
{
   const char *dot = strchr(copy->ns, '.');
   char *db = bson_strndup(copy->ns, (size_t)(dot - copy->ns));
   size_t n;
   bson_t **docs = md_router_fetch(r, from, db, dot + 1, NULL, &n);
   bool found = false;
   for (size_t i = 0; i < n && !found; i++) {
      bson_t key;
      md_sk_from_doc(copy, docs[i], &key);
      found = md_sk_compare(&key, min) >= 0 && md_sk_compare(&key, max) < 0;
      bson_destroy(&key);
   }
   md_docs_free(docs, n);
   bson_free(db);
   return found;
}

/* {moveChunk: ns, find: {key}, to: "shardN"}: only a chunk without documents moves (no data
 * to migrate, so only its owner changes, as 6.0's migration of an empty chunk). */
bool
md_cmd_move_chunk(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_t find, key, min, max;
   int to = -1;
   const char *ns = chunk_ns(r, cmd, reply);
   if (!ns) {
      return true;
   }
   if (!bson_iter_init_find(&it, cmd, "find") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return md_router_error(r, reply, 2, "moveChunk: only 'find' is supported by test-mongod");
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   bson_init_static(&find, data, len);
   const char *name = bson_iter_init_find(&it, cmd, "to") && BSON_ITER_HOLDS_UTF8(&it)
                         ? bson_iter_utf8(&it, NULL)
                         : "";
   for (int s = 0; s < r->n_shards; s++) {
      char want[16];
      snprintf(want, sizeof want, "shard%d", s);
      to = strcmp(want, name) == 0 ? s : to;
   }
   if (to < 0) {
      return md_router_error(r, reply, 70, "Could not find shard %s", name);
   }
   pthread_mutex_lock(&r->lock);
   md_rcoll_t *c = md_catalog_coll(r, ns);
   md_sk_from_doc(c, &find, &key);
   size_t i = md_sk_chunk(c, &key);
   int from = c->chunks[i].shard;
   bson_copy_to(c->chunks[i].min, &min);
   bson_copy_to(c->chunks[i].max, &max);
   md_rcoll_t copy = {.ns = bson_strdup(c->ns), .key = bson_copy(c->key)};
   pthread_mutex_unlock(&r->lock);
   bool busy = from != to && chunk_has_documents(r, &copy, from, &min, &max);
   if (!busy && from != to) {
      pthread_mutex_lock(&r->lock);
      c = md_catalog_coll(r, ns);
      i = c ? md_sk_chunk(c, &key) : 0;
      if (c && md_sk_compare(c->chunks[i].min, &min) == 0) {
         c->chunks[i].shard = to;
         c->chunks[i].major++;
      }
      pthread_mutex_unlock(&r->lock);
      md_catalog_publish(r);
   }
   bson_destroy(&key);
   bson_destroy(&min);
   bson_destroy(&max);
   bson_destroy(copy.key);
   bson_free(copy.ns);
   if (busy) {
      return md_router_error(r, reply, 20,
                             "moveChunk of a chunk holding documents (chunk "
                             "migration) is not supported by test-mongod");
   }
   bson_init(reply);
   BSON_APPEND_INT32(reply, "millis", 0);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   return true;
}
