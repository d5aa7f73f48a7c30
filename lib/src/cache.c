/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "cache-private.h"

#include <pthread.h>
#include <string.h>

typedef struct {
   uint8_t *key; /* type byte + the id's value bytes; NULL = empty slot */
   size_t key_len;
   _outbox_doc_state_t state;
} entry_t;

struct _outbox_cache_t {
   pthread_mutex_t lock;
   size_t mask;
   entry_t *entries;
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

_outbox_cache_t *
_outbox_cache_new(size_t capacity)
{
   _outbox_cache_t *cache;
   size_t size = 1;

   if (capacity == 0) {
      return NULL;
   }
   while (size < capacity) {
      size <<= 1;
   }
   cache = bson_malloc0(sizeof *cache);
   pthread_mutex_init(&cache->lock, NULL);
   cache->mask = size - 1;
   cache->entries = bson_malloc0(size * sizeof *cache->entries);
   return cache;
}

void
_outbox_cache_destroy(_outbox_cache_t *cache)
{
   if (!cache) {
      return;
   }
   for (size_t i = 0; i <= cache->mask; i++) {
      bson_free(cache->entries[i].key);
   }
   bson_free(cache->entries);
   pthread_mutex_destroy(&cache->lock);
   bson_free(cache);
}

/* Finds id's slot. *match tells whether the slot holds id itself; with `claim`, a slot that
 * holds another id is taken over (its state cleared). Caller holds the lock. */
static entry_t *
slot_for(_outbox_cache_t *cache, const bson_value_t *id, bool claim, bool *match)
{
   uint8_t scratch[9];
   const uint8_t *bytes;
   size_t len;
   entry_t *e;

   *match = false;
   if (!make_key(id, &bytes, &len, scratch)) {
      return NULL;
   }
   e = &cache->entries[hash_key(scratch[0], bytes, len) & cache->mask];
   *match = e->key && e->key_len == len + 1 && e->key[0] == scratch[0] &&
            memcmp(e->key + 1, bytes, len) == 0;
   if (!*match && claim) {
      bson_free(e->key);
      e->key = bson_malloc(len + 1);
      e->key[0] = scratch[0];
      memcpy(e->key + 1, bytes, len);
      e->key_len = len + 1;
      e->state.version = 0; /* 0 marks "no state yet" */
   }
   return e;
}

bool
_outbox_cache_get(_outbox_cache_t *cache, const bson_value_t *id, _outbox_doc_state_t *state)
{
   bool match = false;
   entry_t *e;

   if (!cache) {
      return false;
   }
   pthread_mutex_lock(&cache->lock);
   e = slot_for(cache, id, false, &match);
   match = match && e->state.version > 0;
   if (match) {
      *state = e->state;
   }
   pthread_mutex_unlock(&cache->lock);
   return match;
}

void
_outbox_cache_put(_outbox_cache_t *cache, const bson_value_t *id, const _outbox_doc_state_t *state)
{
   bool match;
   entry_t *e;

   if (!cache) {
      return;
   }
   pthread_mutex_lock(&cache->lock);
   e = slot_for(cache, id, true, &match);
   if (e) {
      e->state = *state;
   }
   pthread_mutex_unlock(&cache->lock);
}

void
_outbox_cache_remove(_outbox_cache_t *cache, const bson_value_t *id)
{
   bool match;
   entry_t *e;

   if (!cache) {
      return;
   }
   pthread_mutex_lock(&cache->lock);
   e = slot_for(cache, id, false, &match);
   if (e && match) {
      e->state.version = 0;
   }
   pthread_mutex_unlock(&cache->lock);
}
