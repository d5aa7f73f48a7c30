/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Writing contract documents straight through mongoc, without liboutbox: the drain needs a
 * large backlog quickly, and the library benchmark needs a plain update of the same shape.
 */
#ifndef OUTBOX_BENCH_BACKLOG_H
#define OUTBOX_BENCH_BACKLOG_H

#include <mongoc/mongoc.h>

#include "bench.h"

/* Which entity event n belongs to; filled by the writers below, used for the order check. */
typedef struct {
   uint32_t *entity_of;
   size_t events, entities;
} bench_layout_t;

void bench_layout_init(bench_layout_t *l, size_t events, size_t entities);
void bench_layout_free(bench_layout_t *l);

/* The entity id of entity number e ("ent-000042"): a string id renders as itself in topics. */
void bench_entity_id(char *buf, size_t size, size_t e);

/* Appends one stored event {id, seq, type, time, data: {bench_n, pad}} under `key`. */
void bench_append_event(bson_t *parent, const char *key, int64_t n, int64_t seq, size_t payload);

/* Data of a benchmark event: {bench_n: n, pad: "xx..."}. */
void bench_event_data(bson_t *data, int64_t n, size_t payload);

/* Drops the collection and creates the relay's partial index (as liboutbox's
 * outbox_collection_ensure_indexes() would), so neither measurement pays for it. */
bool bench_coll_prepare(mongoc_client_t *c, const char *db, const char *coll);

/* Inserts `entities` documents holding `events` pending events in total (event n belongs to
 * entity n % entities, with seq n / entities + 1). */
bool bench_backlog_insert(mongoc_client_t *c, const char *db, const char *coll, bench_layout_t *l,
                          size_t payload);

/* Inserts `l->events` archive entries (outbox/archive.h) of collection `coll` into the
 * collection `archive`, laid out as bench_backlog_insert() lays out events: event n of entity
 * n % entities, seq n / entities + 1. The archive's indexes must exist already. */
bool bench_archive_insert(mongoc_client_t *c, const char *db, const char *archive, const char *coll,
                          bench_layout_t *l, size_t payload);

/* Inserts `entities` documents without events (version 1, eventSeq 0). */
bool bench_entities_insert(mongoc_client_t *c, const char *db, const char *coll, size_t entities);

/* Appends the events to existing entities (made by bench_entities_insert) with one update of
 * `per_commit` events per entity per round, the way liboutbox would. Event numbers start at
 * `base`; `l->entity_of` is filled. */
bool bench_stream_write(mongoc_client_t *c, const char *db, const char *coll, bench_layout_t *l,
                        int per_commit, size_t payload, int64_t base);

/* Appends event number `n` to entity `e` (made by bench_entities_insert) as its
 * (round + 1)-th event, in one update guarded by the version, as liboutbox would. */
bool bench_append_one(mongoc_collection_t *col, size_t e, int64_t round, int64_t n, size_t payload);

/* 1 when some document in the collection still has pending events, 0 when none, -1 on error. */
int bench_pending_any(mongoc_client_t *c, const char *db, const char *coll);

/* Drops a collection, ignoring "not found". */
void bench_coll_drop(mongoc_client_t *c, const char *db, const char *coll);

#endif /* OUTBOX_BENCH_BACKLOG_H */
