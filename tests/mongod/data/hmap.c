/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The chained hash table of data/hmap.h (byte-string keys, borrowed values, power-of-two
 * buckets that double when full). Owns only its buckets; callers hold the server lock.
 */
#include "data/hmap.h"

#include <stdlib.h>
#include <string.h>

typedef struct _entry_t {
   struct _entry_t *next;
   uint64_t hash;
   void *value;
   size_t len;
   unsigned char key[];
} entry_t;

struct _md_hmap_t {
   entry_t **buckets;
   size_t n_buckets; /* always a power of two */
   size_t count;
};

/* FNV-1a: keys are short (an encoded _id), so a simple hash is fast enough. */
static uint64_t
hash_bytes(const void *key, size_t len)
{
   const unsigned char *p = key;
   uint64_t h = 1469598103934665603ULL;
   for (size_t i = 0; i < len; i++) {
      h ^= p[i];
      h *= 1099511628211ULL;
   }
   return h ^ (h >> 29);
}

md_hmap_t *
md_hmap_new(void)
{
   md_hmap_t *map = calloc(1, sizeof *map);
   map->n_buckets = 64;
   map->buckets = calloc(map->n_buckets, sizeof *map->buckets);
   return map;
}

void
md_hmap_destroy(md_hmap_t *map)
{
   if (!map) {
      return;
   }
   for (size_t b = 0; b < map->n_buckets; b++) {
      entry_t *e = map->buckets[b];
      while (e) {
         entry_t *next = e->next;
         free(e);
         e = next;
      }
   }
   free(map->buckets);
   free(map);
}

static entry_t **
find_slot(const md_hmap_t *map, const void *key, size_t len, uint64_t h)
{
   entry_t **slot = &map->buckets[h & (map->n_buckets - 1)];
   while (*slot) {
      if ((*slot)->hash == h && (*slot)->len == len && memcmp((*slot)->key, key, len) == 0) {
         return slot;
      }
      slot = &(*slot)->next;
   }
   return slot;
}

void *
md_hmap_get(const md_hmap_t *map, const void *key, size_t len)
{
   entry_t **slot = find_slot(map, key, len, hash_bytes(key, len));
   return *slot ? (*slot)->value : NULL;
}

static void
grow(md_hmap_t *map)
{
   size_t n = map->n_buckets * 2;
   entry_t **buckets = calloc(n, sizeof *buckets);
   for (size_t b = 0; b < map->n_buckets; b++) {
      entry_t *e = map->buckets[b];
      while (e) {
         entry_t *next = e->next;
         e->next = buckets[e->hash & (n - 1)];
         buckets[e->hash & (n - 1)] = e;
         e = next;
      }
   }
   free(map->buckets);
   map->buckets = buckets;
   map->n_buckets = n;
}

void *
md_hmap_put(md_hmap_t *map, const void *key, size_t len, void *value)
{
   uint64_t h = hash_bytes(key, len);
   entry_t **slot = find_slot(map, key, len, h);
   if (*slot) {
      void *old = (*slot)->value;
      (*slot)->value = value;
      return old;
   }
   entry_t *e = malloc(sizeof *e + len);
   e->next = NULL;
   e->hash = h;
   e->value = value;
   e->len = len;
   memcpy(e->key, key, len);
   *slot = e;
   if (++map->count > map->n_buckets) {
      grow(map);
   }
   return NULL;
}

void *
md_hmap_remove(md_hmap_t *map, const void *key, size_t len)
{
   entry_t **slot = find_slot(map, key, len, hash_bytes(key, len));
   entry_t *e = *slot;
   if (!e) {
      return NULL;
   }
   void *value = e->value;
   *slot = e->next;
   free(e);
   map->count--;
   return value;
}

size_t
md_hmap_count(const md_hmap_t *map)
{
   return map->count;
}

void
md_hmap_foreach(const md_hmap_t *map, void (*fn)(void *value, void *ctx), void *ctx)
{
   for (size_t b = 0; b < map->n_buckets; b++) {
      for (entry_t *e = map->buckets[b]; e; e = e->next) {
         fn(e->value, ctx);
      }
   }
}
