/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Commit outcomes: which errors leave a sent commit's outcome unknown, how a retry with the
 * same events finds out whether the earlier attempt was stored, and the recentCommits entries
 * that let it. Used by commit.c and create.c; the only state it touches is the attempt
 * remembered in the caller's events.
 */
#ifndef OUTBOX_OUTCOME_PRIVATE_H
#define OUTBOX_OUTCOME_PRIVATE_H

#include "collection-private.h"
#include "event-private.h"

/* The stored size of one recentCommits entry {seq: Int64, id: String}, for size estimates. */
#define _OUTBOX_RECENT_ENTRY_SIZE 64

/* Appends to `push` (the update's $push) the recentCommits entry of a commit of events[0..n)
 * whose first seq is first_seq, keeping the last _OUTBOX_RECENT_COMMITS entries. Nothing when
 * n is 0 (a change without events has no id to remember). */
void _outbox_outcome_append_ring_push(const outbox_collection_t *collection,
                                      outbox_event_t *const *events, size_t n, int64_t first_seq,
                                      bson_t *push);

/* Appends recentCommits: [{seq: 1, id}] to a new entity's document (nothing when n is 0). */
void _outbox_outcome_append_ring(const outbox_collection_t *collection,
                                 outbox_event_t *const *events, size_t n, bson_t *doc);

/* True if `error`, returned by a write that was (or may have been) sent, does not say whether
 * the write was applied: a network error, a writeConcernError, or an error of the
 * primary-changed family (a mongoc retry that met it says nothing about the first try). */
bool _outbox_outcome_is_unknown(const bson_error_t *error);

/* Turns `error` into OUTBOX_ERROR_UNKNOWN_OUTCOME (naming the original error) and remembers the
 * attempt (the version and eventSeq its filter required, the time stamped on its events) in
 * events[0..n). */
void _outbox_outcome_set_unknown(bson_error_t *error, outbox_event_t *const *events, size_t n,
                                 int64_t version, int64_t event_seq, int64_t time);

/* Before a commit of events[0..n) to entity `id` (and after each of its updates that matched
 * nothing): if they carry an attempt in doubt, finds out whether it was stored. Returns 1 if
 * it was (result and the events then hold that attempt's outcome: the call succeeded), 0 if
 * there is no attempt or it was not stored (commit normally; the attempt stays remembered
 * until a commit succeeds), -1 with `error` set otherwise (OUTBOX_ERROR_UNKNOWN_OUTCOME when
 * it cannot tell, also after a failed read; OUTBOX_ERROR_INVALID_ARGUMENT when the events are
 * not exactly those of one attempt; OUTBOX_ERROR_MALFORMED_DOCUMENT). */
int _outbox_outcome_resolve(outbox_collection_t *collection, _outbox_conn_t *conn,
                            const bson_value_t *id, outbox_event_t *const *events, size_t n,
                            outbox_commit_t *result, bson_error_t *error);

#endif /* OUTBOX_OUTCOME_PRIVATE_H */
