/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A bounded cache id -> (version, eventSeq, pending, size) so that an update usually needs no
 * read to learn the eventSeq it must number its events from. Correctness never depends on it:
 * the update's filter holds the version and eventSeq the cache claims, so a stale entry only
 * costs a read and a retry. Each collection handle owns one; cache.c alone touches its table,
 * under its lock, so any thread may call these functions.
 */
#ifndef OUTBOX_CACHE_PRIVATE_H
#define OUTBOX_CACHE_PRIVATE_H

#include "document-private.h"

typedef struct _outbox_cache_t _outbox_cache_t;

/* At most `capacity` entries; a new id evicts the least recently used one (get and put count
 * as use), so up to `capacity` ids in use all stay cached. capacity 0 returns NULL, a
 * disabled cache: all functions accept NULL. All functions are thread-safe. */
_outbox_cache_t *_outbox_cache_new(size_t capacity);

void _outbox_cache_destroy(_outbox_cache_t *cache);

/* Copies the cached state of `id` into *state and returns true, or returns false. */
bool _outbox_cache_get(_outbox_cache_t *cache, const bson_value_t *id, _outbox_doc_state_t *state);

void _outbox_cache_put(_outbox_cache_t *cache, const bson_value_t *id,
                       const _outbox_doc_state_t *state);

void _outbox_cache_remove(_outbox_cache_t *cache, const bson_value_t *id);

#endif /* OUTBOX_CACHE_PRIVATE_H */
