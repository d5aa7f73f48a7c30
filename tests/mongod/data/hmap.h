/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A small hash table from byte-string keys to borrowed pointers (chaining, power-of-two
 * buckets). Used for the _id index, unique indexes and the cursor table, so lookups by _id
 * stay O(1) however large a collection grows. Not thread-safe: the store lock covers it.
 */
#ifndef MD_HMAP_H
#define MD_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _md_hmap_t md_hmap_t;

md_hmap_t *md_hmap_new(void);
/* Frees the table and its copies of the keys; the values are the caller's. NULL-safe. */
void md_hmap_destroy(md_hmap_t *map);
/* Returns the value for `key`, or NULL. */
void *md_hmap_get(const md_hmap_t *map, const void *key, size_t len);
/* Inserts or replaces; the key is copied. Returns the previous value or NULL. */
void *md_hmap_put(md_hmap_t *map, const void *key, size_t len, void *value);
/* Removes `key`; returns its value or NULL. */
void *md_hmap_remove(md_hmap_t *map, const void *key, size_t len);
size_t md_hmap_count(const md_hmap_t *map);

/* Calls fn for every entry; fn must not modify the table. */
void md_hmap_foreach(const md_hmap_t *map, void (*fn)(void *value, void *ctx), void *ctx);

#endif
