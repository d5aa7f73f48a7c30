/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Shard keys: extracting one from a document or an equality query, finding the chunk (and so
 * the shard) that holds it, and a sharded collection's documentKey. Pure functions over the
 * catalog, called with the router's lock held (md_sk_doc_key takes it itself: a shard calls
 * it under its own lock while it logs a change).
 */
#include <string.h>

#include "auth/auth-private.h"
#include "engine/engine.h"
#include "shard/router-private.h"

static bool
is_hashed(const bson_iter_t *pattern)
{
   return BSON_ITER_HOLDS_UTF8(pattern) && strcmp(bson_iter_utf8(pattern, NULL), "hashed") == 0;
}

/* Appends the key value of one field: the value itself, or its hash (6.0 hashes a missing
 * field as null: shard_key_pattern.cpp treats missing shard key fields as null since 4.4). */
static void
append_key_value(bson_t *out, const bson_iter_t *pattern, const bson_value_t *v)
{
   bson_value_t null_value = {.value_type = BSON_TYPE_NULL};
   const bson_value_t *value = v ? v : &null_value;
   if (is_hashed(pattern)) {
      BSON_APPEND_INT64(out, bson_iter_key(pattern), tm_value_hash64(value, 0));
   } else {
      bson_append_value(out, bson_iter_key(pattern), -1, value);
   }
}

void
md_sk_from_doc(const md_rcoll_t *c, const bson_t *doc, bson_t *out)
{
   bson_iter_t pattern, it, child;
   bson_init(out);
   bson_iter_init(&pattern, c->key);
   while (bson_iter_next(&pattern)) {
      bool found = bson_iter_init(&it, doc) &&
                   bson_iter_find_descendant(&it, bson_iter_key(&pattern), &child);
      append_key_value(out, &pattern, found ? bson_iter_value(&child) : NULL);
   }
}

/* The value a query pins `field` to with equality, or NULL. */
static const bson_value_t *
equality(const bson_t *query, const char *field, bson_iter_t *it)
{
   if (!bson_iter_init_find(it, query, field)) {
      return NULL;
   }
   if (BSON_ITER_HOLDS_REGEX(it) || BSON_ITER_HOLDS_ARRAY(it)) {
      return NULL;
   }
   if (BSON_ITER_HOLDS_DOCUMENT(it)) {
      bson_iter_t op;
      if (!bson_iter_recurse(it, &op) || !bson_iter_next(&op)) {
         return bson_iter_value(it); /* {} as a value */
      }
      if (bson_iter_key(&op)[0] != '$') {
         return bson_iter_value(it); /* an embedded document as a value */
      }
      if (strcmp(bson_iter_key(&op), "$eq") != 0 || BSON_ITER_HOLDS_REGEX(&op) ||
          BSON_ITER_HOLDS_ARRAY(&op) || BSON_ITER_HOLDS_DOCUMENT(&op)) {
         return NULL;
      }
      *it = op;
      return bson_iter_next(&op) ? NULL : bson_iter_value(it);
   }
   return bson_iter_value(it);
}

bool
md_sk_from_query(const md_rcoll_t *c, const bson_t *query, bson_t *out)
{
   bson_iter_t pattern, it;
   bson_init(out);
   bson_iter_init(&pattern, c->key);
   while (bson_iter_next(&pattern)) {
      const bson_value_t *v = equality(query, bson_iter_key(&pattern), &it);
      if (!v) {
         bson_reinit(out);
         return false;
      }
      append_key_value(out, &pattern, v);
   }
   return true;
}

bool
md_sk_exact_id(const bson_t *query)
{
   bson_iter_t it;
   return equality(query, "_id", &it) != NULL;
}

/* Compares two shard keys field by field (MinKey and MaxKey order first and last). */
int
md_sk_compare(const bson_t *a, const bson_t *b)
{
   bson_iter_t ia, ib;
   bson_iter_init(&ia, a);
   bson_iter_init(&ib, b);
   while (bson_iter_next(&ia) && bson_iter_next(&ib)) {
      int c = tm_value_compare(bson_iter_value(&ia), bson_iter_value(&ib));
      if (c != 0) {
         return c;
      }
   }
   return 0;
}

size_t
md_sk_chunk(const md_rcoll_t *c, const bson_t *key)
{
   for (size_t i = 0; i < c->n_chunks; i++) {
      if (md_sk_compare(key, c->chunks[i].min) >= 0 && md_sk_compare(key, c->chunks[i].max) < 0) {
         return i;
      }
   }
   return c->n_chunks - 1; /* MaxKey itself */
}

int
md_sk_shard(const md_rcoll_t *c, const bson_t *key)
{
   return c->chunks[md_sk_chunk(c, key)].shard;
}

uint32_t
md_sk_targets(const md_rcoll_t *c, const bson_t *query)
{
   bson_t key;
   uint32_t bits = 0;
   bson_init(&key);
   if (query && md_sk_from_query(c, query, &key)) {
      bits = 1u << md_sk_shard(c, &key);
   } else {
      for (size_t i = 0; i < c->n_chunks; i++) {
         bits |= 1u << c->chunks[i].shard;
      }
   }
   bson_destroy(&key);
   return bits;
}

bool
md_sk_doc_key(void *ctx, const md_coll_t *coll, const bson_t *doc, bson_t *key)
{
   md_router_t *r = ctx;
   char *ns = bson_strdup_printf("%s.%s", coll->db->name, coll->name);
   bson_iter_t pattern, it, child;
   pthread_mutex_lock(&r->lock);
   const md_rcoll_t *c = md_catalog_coll(r, ns);
   if (c) {
      /* 6.0's documentKey: the shard key's fields in key order, then _id unless in the key
       * (src/mongo/db/s/collection_sharding_state / getDocumentKey: a missing field is left
       * out). */
      bool has_id = false;
      bson_iter_init(&pattern, c->key);
      while (bson_iter_next(&pattern)) {
         const char *field = bson_iter_key(&pattern);
         has_id = has_id || strcmp(field, "_id") == 0;
         if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, field, &child)) {
            bson_append_value(key, field, -1, bson_iter_value(&child));
         }
      }
      if (!has_id && bson_iter_init_find(&it, doc, "_id")) {
         bson_append_value(key, "_id", 3, bson_iter_value(&it));
      }
   }
   pthread_mutex_unlock(&r->lock);
   bson_free(ns);
   return c != NULL;
}

char *
md_sk_pattern_string(const bson_t *key)
{
   return md_auth_format_command(key, 100000);
}
