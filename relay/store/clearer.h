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
#include "stream/event.h"
#include "stream/namespaces.h"

/* One entity's clear: $pull of @ids from the events of document @id in collection @coll. With
 * an archive (--archive-collection) the events themselves come along: the clearer archives
 * them first and clears only what it archived (store/archive.h). */
typedef struct {
   int coll;
   bson_value_t id; /* owned */
   bson_t *ids;     /* array of event id strings (owned; a pointer, as stmts moves) */
   uint32_t n_ids;
   int part;       /* the entity's group partition, -1 if unknown (archived with it) */
   bson_t *events; /* with an archive: array of the events as stored (owned), else NULL */
   void *entity;   /* the caller's; not touched by the clearer */
   bool failed;    /* set by the clearer */
} relay_clear_stmt_t;

typedef struct {
   relay_clear_stmt_t *stmts;
   bool archive; /* the statements carry their events, to be archived before the clear */
   size_t n, cap;
   size_t n_events;
   bson_error_t error; /* the first failure, set by the clearer (code 0: none) */
   size_t n_failed;    /* statements in failed bulk writes */
} relay_clear_job_t;

typedef struct relay_clearer_t relay_clearer_t;

/* A job; @archive: its events are archived before they are cleared (copies are kept). */
relay_clear_job_t *relay_clear_job_new(bool archive);

/* Adds a statement with no event id yet; add them with relay_clear_job_add_id() or
 * relay_clear_job_add_event(). @part is the entity's partition (-1: unknown). Returns the
 * statement (valid until the next statement is added). */
relay_clear_stmt_t *relay_clear_job_begin(relay_clear_job_t *job, int coll, const bson_value_t *id,
                                          int part, void *entity);

/* Appends @event_id to statement @s of @job. */
void relay_clear_job_add_id(relay_clear_job_t *job, relay_clear_stmt_t *s, const char *event_id);

/* Appends @ev's id, and when the job archives a copy of @ev as stored. */
void relay_clear_job_add_event(relay_clear_job_t *job, relay_clear_stmt_t *s,
                               const relay_event_t *ev);

void relay_clear_job_free(relay_clear_job_t *job);

/* Appends to @filter what the clear of @s matches: {_id: <its id>}, an exact _id, which is
 * what mongos 6.0 needs of an updateOne on a collection sharded by any key (relay/README.md,
 * "Sharded clusters"). */
void relay_clear_stmt_filter(const relay_clear_stmt_t *s, bson_t *filter);

/* Starts the thread. Statements name namespaces by their index in @ns (borrowed). It counts archive
 * writes in @metrics (may be NULL) and records @member (this process's instance id, copied; may be
 * NULL) in archive entries. Returns NULL and fills @error on a bad URI. */
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
