/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest: the main thread's side of the change stream and the sweeps (changes.c, sweep.c).
 * It turns queued change events and swept documents of owned partitions into buffered events
 * in the table, and owns what that needs: the held change (a read that failed, retried
 * first), verifying (the stream replays history after a resume: unknown entities are read
 * from their documents), and the sweep (its cursor, its marker, the partitions it covers).
 *
 * It does its I/O through the ops it is handed (relay.c: the reader thread and the store), so
 * a unit test runs it with fakes; it asks the partition owner (group/, pure state) which
 * partitions it takes and which are fresh, and tells it where the stream and the sweeps are,
 * through the owner ops it is handed (group/group.h: relay_group_ingest_ops), so stream/
 * does not include group/.
 *
 * Main thread only.
 */
#ifndef RELAY_STREAM_INGEST_H
#define RELAY_STREAM_INGEST_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"
#include "base/partition.h"
#include "base/ts.h"
#include "http/metrics.h"
#include "stream/namespaces.h"
#include "stream/reader.h"
#include "stream/table.h"

/* What ingest needs of the world (relay.c: stream/reader.h and store/store.h). */
typedef struct {
   /* The reader thread: the oldest queued change (the caller frees it) or NULL; start a
    * stream after @token or at @at (returns its generation: older changes are stale); stop. */
   relay_change_t *(*pop)(void *ctx);
   uint64_t (*start)(void *ctx, const bson_t *token, const relay_ts_t *at);
   void (*stop)(void *ctx);
   /* Reads the document @id of collection @coll (the pending events, eventSeq) as a
    * majority holds it, once that holds every write up to @after (NULL: as it is), and the
    * time of that snapshot into @seen ({0, 0}: unknown). False with @error; error->code 0:
    * the document is gone (nothing pending). */
   bool (*read_entity)(void *ctx, int coll, const bson_value_t *id, const relay_ts_t *after,
                       bson_t *doc, relay_ts_t *seen, bson_error_t *error);
   /* Creates the partial index the sweeps use on collection @coll. */
   bool (*ensure_index)(void *ctx, int coll, bson_error_t *error);
   /* The server's current time (a sweep's start and end). */
   bool (*operation_time)(void *ctx, relay_ts_t *ts, bson_error_t *error);
   /* Waits until collection @coll's majority snapshot holds every write up to @after (a
    * sweep's start), for a bounded time: false with @error when it does not. */
   bool (*wait_majority)(void *ctx, int coll, const relay_ts_t *after, bson_error_t *error);
   /* A cursor over the pending documents of collection @coll in its majority snapshot at
    * @after or later (with the index @hint; of partitions @parts of @n when the server
    * filters, every one when NULL), its next document (borrowed until the next call), its
    * error, and its end. */
   void *(*sweep_open)(void *ctx, int coll, bool hint, const relay_ts_t *after,
                       const relay_partset_t *parts, int n);
   bool (*sweep_next)(void *ctx, void *cursor, const bson_t **doc);
   bool (*sweep_error)(void *ctx, void *cursor, bson_error_t *error);
   void (*sweep_close)(void *ctx, void *cursor);
   /* Lists the server's namespaces matching the patterns into the watched set, before a
    * full sweep (stream/namespaces.h); may be NULL (nothing to list). */
   bool (*list_namespaces)(void *ctx, bson_error_t *error);
} relay_ingest_ops_t;

/* What ingest asks of the partition owner and tells it (group/owner.h and group/group.h
 * say what each means: relay_group_takes(), _fresh(), _part_of(), _partitions(), _active(),
 * _server_filters(), _stream_at(), _valid_after(), _sweep_began(), _sweep_ended()). */
typedef struct {
   bool (*takes)(void *ctx, int part);
   bool (*fresh)(void *ctx, int part);
   int (*part_of)(void *ctx, const bson_value_t *id);
   int (*partitions)(void *ctx);
   const relay_partset_t *(*active)(void *ctx);
   bool (*server_filters)(void *ctx);
   void (*stream_at)(void *ctx, const relay_ts_t *ts);
   void (*valid_after)(void *ctx, const relay_partset_t *parts, const relay_pos_t *marker);
   void (*sweep_began)(void *ctx, const relay_partset_t *parts, const relay_pos_t *marker);
   void (*sweep_ended)(void *ctx, const relay_partset_t *parts, relay_ts_t ts);
} relay_ingest_owner_ops_t;

typedef struct relay_ingest_t relay_ingest_t;

/* Everything is borrowed and must outlive it; @metrics may be NULL. @owner(@owner_ctx) is
 * the partition owner, @ops(@ctx) the world. An entity's collection index is its
 * namespace's index in @ns. */
relay_ingest_t *relay_ingest_new(const relay_config_t *cfg, relay_namespaces_t *ns,
                                 relay_metrics_t *metrics, relay_table_t *table,
                                 const relay_ingest_owner_ops_t *owner, void *owner_ctx,
                                 const relay_ingest_ops_t *ops, void *ctx);

/* NULL-safe. Frees the held change and ends a running sweep. */
void relay_ingest_destroy(relay_ingest_t *in);

/* One turn: the sweep's next batch, then queued changes, while the table has room. */
void relay_ingest_step(relay_ingest_t *in, int64_t now);

/* Starts the stream for the owned partitions: after @token (the oldest of their
 * checkpoints), sweeping the partitions in @unswept (they came without one); without a
 * token, a full sweep first. */
void relay_ingest_open(relay_ingest_t *in, const bson_t *token, const relay_partset_t *unswept);

/* Stops the stream (standby): queued changes and a running sweep are dropped. */
void relay_ingest_close(relay_ingest_t *in);

/* Partition @part is to be swept (acquired while the stream runs). */
void relay_ingest_sweep(relay_ingest_t *in, int part);

/* Whether the stream runs (this member owns partitions). */
bool relay_ingest_started(const relay_ingest_t *in);

/* Whether the stream replays history (verifying). */
bool relay_ingest_verifying(const relay_ingest_t *in);

/* The stream's lag behind the newest change's wall time, ms (0 when caught up). */
int64_t relay_ingest_lag_ms(const relay_ingest_t *in);

#endif /* RELAY_STREAM_INGEST_H */
