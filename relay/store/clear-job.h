/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A clear job: the statements (one per entity: the event ids to $pull, and with an archive
 * the events themselves) that the writer fills on the main thread and hands to the clearer
 * thread, which runs them (clearer.h) and archives first (archive.h). Whoever holds the job
 * owns it: the writer while it fills it, the clearer from relay_clearer_submit() until
 * relay_clearer_take() returns it. Apart from clearer.h so that archive.h and clearer.h
 * need only this, not each other.
 */
#ifndef RELAY_CLEAR_JOB_H
#define RELAY_CLEAR_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include <bson/bson.h>

#include "stream/event.h"

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
   /* Set by the clearer when the archive can never take some of the events (another event
    * with the same id is archived; the entry is too large): per event, in the order they
    * were added, NULL or the reason (a static sentence) to dead-letter it with. The
    * statement is failed then. Freed with the job. */
   const char **refused;
} relay_clear_stmt_t;

/* The reason in refused[] of an event the archive's validator refused (121): unlike the
 * others it may be the archive's fault (a validator someone else installed), so the writer
 * dead-letters the event only when the refusal persists while the archive takes other events
 * (store/writer.c). */
extern const char relay_clear_refused_by_validator[];

typedef struct {
   relay_clear_stmt_t *stmts;
   bool archive; /* the statements carry their events, to be archived before the clear */
   size_t n, cap;
   size_t n_events;
   bson_error_t error; /* the first failure, set by the clearer (code 0: none) */
   size_t n_failed;    /* statements in failed bulk writes */
} relay_clear_job_t;

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

#endif /* RELAY_CLEAR_JOB_H */
