/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The clearer: a thread with its own mongoc client that runs the relay's clear batches, so
 * the main thread keeps publishing while MongoDB works. While one batch runs, the next one
 * accumulates (more acknowledged ids per entity, so fewer statements): the slower the
 * database, the larger the batches. At most one batch is outstanding.
 *
 * Thread safety: all functions are for the main thread; the clearer calls @wake from its
 * own thread when a batch is done.
 */
#ifndef RELAY_CLEARER_H
#define RELAY_CLEARER_H

#include <stdbool.h>
#include <stddef.h>

#include <bson/bson.h>

#include "config/config.h"
#include "http/metrics.h"
#include "store/clear-job.h"
#include "stream/namespaces.h"

typedef struct relay_clearer_t relay_clearer_t;

/* Starts the thread. Statements name namespaces by their index in @ns (borrowed). It counts
 * archive writes in @metrics (may be NULL) and records @member (this process's instance id,
 * copied; may be NULL) in archive entries. Returns NULL and fills @error on a bad URI. */
relay_clearer_t *relay_clearer_new(const relay_config_t *cfg, relay_namespaces_t *ns,
                                   relay_metrics_t *metrics, const char *member,
                                   void (*wake)(void *), void *wake_ctx, bson_error_t *error);

/* True while a submitted batch is not yet taken back with relay_clearer_take(). */
bool relay_clearer_busy(relay_clearer_t *c);

/* Hands @job to the clearer (which owns it until relay_clearer_take() returns it). Only when
 * not busy. */
void relay_clearer_submit(relay_clearer_t *c, relay_clear_job_t *job);

/* Returns the finished job (statements' @failed filled in), or NULL if none is finished. */
relay_clear_job_t *relay_clearer_take(relay_clearer_t *c);

/* Stops and joins the thread (after the running batch); NULL-safe. */
void relay_clearer_destroy(relay_clearer_t *c);

#endif /* RELAY_CLEARER_H */
