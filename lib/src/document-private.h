/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The bookkeeping part of a stored document (see the stored contract in outbox/collection.h):
 * the configurable field names and the state parsed from a document (document.c). Plain values,
 * owned by whoever declares them; no shared state.
 */
#ifndef OUTBOX_DOCUMENT_PRIVATE_H
#define OUTBOX_DOCUMENT_PRIVATE_H

#include "outbox/error.h"

/* The configurable field names. Strings are owned by whoever fills the struct. */
typedef struct {
   const char *version;      /* "version" */
   const char *event_seq;    /* "eventSeq" */
   const char *events;       /* "events" */
   const char *deleted;      /* "deleted" */
   const char *dead_letters; /* "deadLetters": where the relay moves unpublishable events */
   const char *discarded;    /* "discardedLetters": discarded dead letters (audit trail) */
   const char *requeues;     /* "requeues": incremented by a requeue, so the relay hears of it */
   /* "recentCommits": the last commits' first seq and first event id, by which a retry
    * after an unknown outcome recognizes its attempt (outcome.c). NULL: not kept. */
   const char *recent_commits;
} _outbox_field_names_t;

/* How many commits recentCommits remembers. */
#define _OUTBOX_RECENT_COMMITS 8

/* What the library needs to know of a stored document to change it. */
typedef struct {
   int64_t version;   /* >= 1 */
   int64_t event_seq; /* >= 0 */
   int64_t pending;   /* number of elements in the events array */
   int64_t size;      /* encoded size of the whole document in bytes */
} _outbox_doc_state_t;

/* Reads the bookkeeping fields of `doc`. version must be an integer >= 1 and eventSeq an
 * integer >= 0 (Int64 per the contract; int32 is tolerated), events absent, null or an array.
 * Otherwise returns false with OUTBOX_ERROR_MALFORMED_DOCUMENT naming the field. */
bool _outbox_doc_state_parse(const bson_t *doc, const _outbox_field_names_t *names,
                             _outbox_doc_state_t *state, bson_error_t *error);

#endif /* OUTBOX_DOCUMENT_PRIVATE_H */
