/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The (id -> version, eventSeq) cache of a collection handle (cache-private.h): a chained hash
 * table whose entries also form an LRU list. A direct-mapped table used to stand here: with 1000
 * ids in 4096 slots, ~14% of ids shared a slot with another and so missed on every use, costing
 * a read per commit although the cache was far from full. Now an id is only evicted when
 * `capacity` other ids were used more recently. The cache owns its table; every call takes its
 * mutex, so the threads sharing a collection handle may call it at once.
 */
#include "cache-private.h"

#include <pthread.h>
#include <string.h>

/* Links are entry index + 1 so that 0 (calloc's zero) means "none". */
typedef struct {
   uint8_t *key; /* type byte + the id's value bytes */
   size_t key_len;
   uint64_t hash;
   uint32_t chain;      /* next entry in the same bucket; on the free list, the next free entry */
   uint32_t prev, next; /* LRU list, most recently used first */
   _outbox_doc_state_t state;
} entry_t;

struct _outbox_cache_t {
   pthread_mutex_t lock;
   size_t mask; /* buckets - 1 */
   uint32_t *buckets;
   entry_t *entries;
   uint32_t capacity, used; /* entries[0, used) have been handed out at least once */
   uint32_t count, free_list, head, tail;
};

/* The key is the BSON type followed by the value's bytes. Only the id types accepted by
 * _outbox_id_check() reach here. Returns false for anything else (not cached). */
static bool
make_key(const bson_value_t *id, const uint8_t **bytes, size_t *len, uint8_t scratch[9])
{
   scratch[0] = (uint8_t)id->value_type;
   switch (id->value_type) {
   case BSON_TYPE_OID:
      *bytes = id->value.v_oid.bytes;
      *len = 12;
      return true;
   case BSON_TYPE_INT32:
      memcpy(scratch + 1, &id->value.v_int32, 4);
      *bytes = scratch + 1;
      *len = 4;
      return true;
   case BSON_TYPE_INT64:
      memcpy(scratch + 1, &id->value.v_int64, 8);
      *bytes = scratch + 1;
      *len = 8;
      return true;
   case BSON_TYPE_UTF8:
      *bytes = (const uint8_t *)id->value.v_utf8.str;
      *len = id->value.v_utf8.len;
      return true;
   case BSON_TYPE_BINARY:
      *bytes = id->value.v_binary.data;
      *len = id->value.v_binary.data_len;
      return true;
   default:
      return false;
   }
}

/* FNV-1a over the type byte and the value bytes. */
static uint64_t
hash_key(uint8_t type, const uint8_t *bytes, size_t len)
{
   uint64_t h = 14695981039346656037ull;

   h = (h ^ type) * 1099511628211ull;
   for (size_t i = 0; i < len; i++) {
      h = (h ^ bytes[i]) * 1099511628211ull;
   }
   return h;
}

/* A looked-up id: its key, hash and bucket. */
typedef struct {
   uint8_t scratch[9];
   const uint8_t *bytes;
   size_t len;
   uint64_t hash;
   uint32_t *bucket;
} key_t_;

static bool
key_init(const _outbox_cache_t *cache, const bson_value_t *id, key_t_ *k)
{
   if (!make_key(id, &k->bytes, &k->len, k->scratch)) {
      return false;
   }
   k->hash = hash_key(k->scratch[0], k->bytes, k->len);
   k->bucket = &cache->buckets[k->hash & cache->mask];
   return true;
}

_outbox_cache_t *
_outbox_cache_new(size_t capacity)
{
   _outbox_cache_t *cache;
   size_t size = 1;

   /* collection.c caps cacheSize at 1 << 24, well inside uint32_t links. */
   if (capacity == 0 || capacity >= UINT32_MAX) {
      return NULL;
   }
   while (size < capacity) {
      size <<= 1;
   }
   cache = bson_malloc0(sizeof *cache);
   pthread_mutex_init(&cache->lock, NULL);
   cache->mask = size - 1;
   cache->capacity = (uint32_t)capacity;
   /* calloc: pages of a large, mostly unused cache are never touched. */
   cache->buckets = bson_malloc0(size * sizeof *cache->buckets);
   cache->entries = bson_malloc0(capacity * sizeof *cache->entries);
   return cache;
}

void
_outbox_cache_destroy(_outbox_cache_t *cache)
{
   if (!cache) {
      return;
   }
   for (uint32_t i = 0; i < cache->used; i++) {
      bson_free(cache->entries[i].key);
   }
   bson_free(cache->entries);
   bson_free(cache->buckets);
   pthread_mutex_destroy(&cache->lock);
   bson_free(cache);
}

#define E(link) (&cache->entries[(link)-1])

/* Returns the link of k's entry, 0 if absent. Caller holds the lock. */
static uint32_t
find(_outbox_cache_t *cache, const key_t_ *k)
{
   for (uint32_t l = *k->bucket; l; l = E(l)->chain) {
      entry_t *e = E(l);

      if (e->hash == k->hash && e->key_len == k->len + 1 && e->key[0] == k->scratch[0] &&
          memcmp(e->key + 1, k->bytes, k->len) == 0) {
         return l;
      }
   }
   return 0;
}

static void
lru_unlink(_outbox_cache_t *cache, uint32_t l)
{
   entry_t *e = E(l);

   if (e->prev) {
      E(e->prev)->next = e->next;
   } else {
      cache->head = e->next;
   }
   if (e->next) {
      E(e->next)->prev = e->prev;
   } else {
      cache->tail = e->prev;
   }
   e->prev = e->next = 0;
}

static void
lru_push_front(_outbox_cache_t *cache, uint32_t l)
{
   entry_t *e = E(l);

   e->prev = 0;
   e->next = cache->head;
   if (cache->head) {
      E(cache->head)->prev = l;
   } else {
      cache->tail = l;
   }
   cache->head = l;
}

/* Takes entry `l` out of its bucket and the LRU list and puts it on the free list. */
static void
drop(_outbox_cache_t *cache, uint32_t l)
{
   uint32_t *p = &cache->buckets[E(l)->hash & cache->mask];

   while (*p != l) {
      p = &E(*p)->chain;
   }
   *p = E(l)->chain;
   lru_unlink(cache, l);
   E(l)->chain = cache->free_list;
   cache->free_list = l;
   cache->count--;
}

/* A new entry for k, evicting the least recently used one when full. */
static uint32_t
add(_outbox_cache_t *cache, const key_t_ *k)
{
   uint32_t l;
   entry_t *e;

   if (cache->count == cache->capacity) {
      drop(cache, cache->tail);
   }
   if (cache->free_list) {
      l = cache->free_list;
      cache->free_list = E(l)->chain;
   } else {
      l = ++cache->used;
   }
   e = E(l);
   if (e->key_len != k->len + 1) {
      e->key = bson_realloc(e->key, k->len + 1);
      e->key_len = k->len + 1;
   }
   e->key[0] = k->scratch[0];
   memcpy(e->key + 1, k->bytes, k->len);
   e->hash = k->hash;
   e->chain = *k->bucket;
   *k->bucket = l;
   lru_push_front(cache, l);
   cache->count++;
   return l;
}

bool
_outbox_cache_get(_outbox_cache_t *cache, const bson_value_t *id, _outbox_doc_state_t *state)
{
   key_t_ k;
   uint32_t l = 0;

   if (!cache || !key_init(cache, id, &k)) {
      return false;
   }
   pthread_mutex_lock(&cache->lock);
   l = find(cache, &k);
   if (l) {
      *state = E(l)->state;
      lru_unlink(cache, l);
      lru_push_front(cache, l);
   }
   pthread_mutex_unlock(&cache->lock);
   return l != 0;
}

void
_outbox_cache_put(_outbox_cache_t *cache, const bson_value_t *id, const _outbox_doc_state_t *state)
{
   key_t_ k;
   uint32_t l;

   if (!cache || !key_init(cache, id, &k)) {
      return;
   }
   pthread_mutex_lock(&cache->lock);
   l = find(cache, &k);
   if (l) {
      lru_unlink(cache, l);
      lru_push_front(cache, l);
   } else {
      l = add(cache, &k);
   }
   E(l)->state = *state;
   pthread_mutex_unlock(&cache->lock);
}

void
_outbox_cache_remove(_outbox_cache_t *cache, const bson_value_t *id)
{
   key_t_ k;
   uint32_t l;

   if (!cache || !key_init(cache, id, &k)) {
      return;
   }
   pthread_mutex_lock(&cache->lock);
   l = find(cache, &k);
   if (l) {
      drop(cache, l);
   }
   pthread_mutex_unlock(&cache->lock);
}
