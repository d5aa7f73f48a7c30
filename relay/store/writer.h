/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The writer: the main thread's side of the writes back to MongoDB. It clears acknowledged
 * events (batches run by the clearer, clearer.h), moves poison events to the dead letters,
 * says when a checkpoint is due (it does not save it: relay.c hands the token to the partition
 * owner, which knows which partitions it is valid for) and reports whether MongoDB refuses the
 * writes (then nothing new may be published). It owns its timers, its backoff and the
 * refusal state; it changes the table it is given and reaches MongoDB only through the ops
 * it is given, so a unit test runs it with fakes.
 *
 * The checkpoint rule it keeps: a checkpoint is due only for a position before which
 * everything is cleared. The table computes that position (table.h); the writer's part is to
 * take an event out of the table only once its clear succeeded, and to put a failed one back.
 *
 * Main thread only.
 */
#ifndef RELAY_STORE_WRITER_H
#define RELAY_STORE_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"
#include "http/metrics.h"
#include "store/clearer.h"
#include "stream/namespaces.h"
#include "stream/table.h"

/* What the writer needs of the world, filled by its owner (relay.c: the clearer thread and
 * the collections); every call is on the main thread. */
typedef struct {
   /* The finished clear batch (its statements' failed set), or NULL while none finished. */
   relay_clear_job_t *(*take)(void *ctx);
   /* Starts a clear batch (only when !busy); the callee owns @job until take() returns it. */
   void (*submit)(void *ctx, relay_clear_job_t *job);
   /* Whether a batch was submitted and not taken back yet. */
   bool (*busy)(void *ctx);
   /* One update of a document of collection @coll (a dead letter); @reply is always
    * initialized, the caller destroys it. */
   bool (*update_one)(void *ctx, int coll, const bson_t *query, const bson_t *update, bson_t *reply,
                      bson_error_t *error);
} relay_writer_ops_t;

typedef struct relay_writer_t relay_writer_t;

/* A writer of @table's acknowledged and poison events. @cfg, @metrics (may be NULL), @table,
 * @ops and @ctx are borrowed and must outlive the writer. */
relay_writer_t *relay_writer_new(const relay_config_t *cfg, relay_namespaces_t *ns,
                                 relay_metrics_t *metrics, relay_table_t *table,
                                 const relay_writer_ops_t *ops, void *ctx);

/* NULL-safe. The caller ends the clearer first (a running batch holds table entities). */
void relay_writer_destroy(relay_writer_t *w);

/* Collects a finished clear batch, then starts the next one when it is time (every
 * clear_interval_ms, at once under a backlog, always with @force) and dead-letters poison
 * events on the way. */
void relay_writer_flush(relay_writer_t *w, int64_t now, bool force);

/* The token to save as the checkpoint, if one is due now (every checkpoint_interval_ms,
 * not while writes fail and back off; always with @force) and the table's candidate moved
 * since the last one: the caller frees it. NULL otherwise. */
bson_t *relay_writer_checkpoint_due(relay_writer_t *w, int64_t now, bool force);

/* True when nothing waits to be cleared or dead-lettered and no clear is running. */
bool relay_writer_idle(const relay_writer_t *w);

/* Whether MongoDB refused the last write (13 Unauthorized, or authentication): nothing new
 * may be published until a write succeeds. */
bool relay_writer_refused(const relay_writer_t *w);

#endif /* RELAY_STORE_WRITER_H */
