/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's pending events and dead letters, as an operator sees them: list and count what
 * is stored, requeue or discard what the relay could not publish.
 *
 * The relay moves an event it can never publish from the events array to the document's dead
 * letters, in one update, as {event: <the stored event>, reason: String, at: Date,
 * relay: String} (deadLettersField, default "deadLetters"). The functions below let a service
 * or an operator (outbox-admin) list pending events and dead letters, count them, send a dead
 * letter again (requeue) or discard it with an audit record. Listing and counting read through
 * the partial indexes of outbox_collection_ensure_indexes() (outbox_pending,
 * outbox_dead_letters), so they never scan documents that have neither; without the index they
 * still work, by a collection scan.
 *
 * A discarded dead letter is not deleted: it moves, in one update, to discardedField
 * ("discardedLetters") as the dead letter plus {discarded: {at: Date, by: String,
 * reason: String}}, so nothing disappears without a record of who, when and why.
 *
 * REQUEUE. outbox_collection_requeue_dead_letter() moves a dead letter back into events, in
 * ONE update guarded like every write of the stored contract: the filter holds the _id, the
 * entity's eventSeq as read, and the exact dead letter element, so a concurrent change makes it
 * match nothing (it is then read again and retried, up to appendRetries times). The event keeps
 * its id, seq, type, time and data and gains a marker requeued: {at: Date, by: String,
 * count: Int64} (count grows with every requeue of the same event); it is inserted among the
 * pending events in seq order ($push with $each and $sort {seq: 1}), and requeuesField (top
 * level, "requeues", Int64) is incremented. eventSeq and version do not change: no seq is
 * created, so consumers see no gap, and the application's optimistic concurrency is not
 * disturbed. The counter is what tells a watcher of appends (which follows eventSeq) that a
 * requeue happened; how the relay hears of it and accepts an event whose seq it has passed is
 * in relay/README.md ("Dead letters"). Events that break the stored contract
 * (outbox_collection_requeue_dead_letter() checks the stored event first) are refused: they
 * would only go back to the dead letters.
 * What consumers see: the requeued event arrives AFTER events of the same entity with higher
 * seqs (it failed before, they did not), so per-entity order is broken for that one event, by
 * the operator's decision. It was never delivered before (it went to the dead letters instead),
 * so an inbox (outbox/inbox.h) has not seen its id: outbox_inbox_apply() applies it and
 * reports OUTBOX_SEQ_LATE (a late fill of the gap it reported as OUTBOX_SEQ_GAP when the next
 * event arrived). An inbox with skipLate set skips it (OUTBOX_INBOX_SKIPPED_LATE): such
 * consumers should not be sent requeued events whose effect would be overwritten anyway.
 *
 * THREADS. The functions taking an outbox_collection_t are thread-safe like those of
 * outbox/collection.h; a cursor belongs to the thread that uses it.
 */
#ifndef OUTBOX_DEAD_LETTERS_H
#define OUTBOX_DEAD_LETTERS_H

#include <bson/bson.h>

#include "outbox/collection.h"
#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* Where a stored event is. */
typedef enum {
   OUTBOX_PLACE_PENDING = 1, /* in eventsField: not yet published */
   OUTBOX_PLACE_DEAD_LETTER, /* in deadLettersField: could not be published */
   OUTBOX_PLACE_DISCARDED,   /* in discardedField: a discarded dead letter (audit trail) */
} outbox_place_t;

/* One event as stored, returned by outbox_event_cursor_next(). Every pointer is owned by the
 * cursor and valid until the next call on it. Fields that are missing or of the wrong type in
 * the stored element (dead letters are often malformed events) are NULL or 0. */
typedef struct {
   outbox_place_t place;
   const bson_value_t *entity_id; /* the document's _id */
   const bson_t *event;           /* the stored event (empty if it is not a document) */
   const char *event_id;          /* event.id */
   int64_t seq;                   /* event.seq */
   const char *type;              /* event.type */
   int64_t time_ms;               /* event.time, ms since the Unix epoch (UTC) */
   int64_t requeue_count;         /* event.requeued.count: times it was requeued (0: never) */
   /* OUTBOX_PLACE_DEAD_LETTER and OUTBOX_PLACE_DISCARDED: */
   const char *reason; /* why the relay could not publish it */
   int64_t at_ms;      /* when it was dead-lettered */
   const char *relay;  /* the relay's name */
   /* OUTBOX_PLACE_DISCARDED: */
   const char *discarded_by;
   const char *discard_reason;
   int64_t discarded_at_ms;
   const bson_t *entry; /* the whole stored element (the event itself when pending) */
   int64_t reserved[8];
} outbox_stored_event_t;

/* A cursor over stored events; not thread-safe (use it from one thread at a time). It holds a
 * client popped from the collection's pool until it is destroyed. */
typedef struct _outbox_event_cursor_t outbox_event_cursor_t;

/* Lists the events in `place`. `opts` (may be NULL) is read during the call; all filters
 * must hold:
 *   entityId   any BSON value: only this entity;
 *   eventId    string: only this event;
 *   type       string: only events of this type;
 *   reason     string: dead letters whose reason contains it (case-sensitive);
 *   before     Date: pending events whose time is earlier; dead letters (and discarded ones)
 *              dead-lettered earlier;
 *   limit      int, default 0 (none): stop after this many.
 * Documents come in no particular order, the events of a document in stored order. No I/O
 * happens until the first outbox_event_cursor_next(). Returns NULL with
 * OUTBOX_ERROR_INVALID_ARGUMENT on a bad option. Free with outbox_event_cursor_destroy().
 * Thread-safe (each cursor is used by one thread). */
OUTBOX_API outbox_event_cursor_t *outbox_collection_find_events(outbox_collection_t *collection,
                                                                outbox_place_t place,
                                                                const bson_t *opts,
                                                                bson_error_t *error);

/* Sets *event to the next matching event and returns true, or returns false at the end or
 * on an error (see outbox_event_cursor_error()). *event is valid until the next call. */
OUTBOX_API bool outbox_event_cursor_next(outbox_event_cursor_t *cursor,
                                         const outbox_stored_event_t **event);

/* True (and fills `error`) if the cursor stopped on an error (network, server, or a document
 * whose events or dead letters field is not an array: OUTBOX_ERROR_MALFORMED_DOCUMENT). */
OUTBOX_API bool outbox_event_cursor_error(const outbox_event_cursor_t *cursor, bson_error_t *error);

/* Frees the cursor and gives its client back to the pool. NULL is allowed. */
OUTBOX_API void outbox_event_cursor_destroy(outbox_event_cursor_t *cursor);

/* What outbox_collection_count_events() counts. */
typedef struct {
   int64_t pending_documents;     /* documents with pending events */
   int64_t pending_events;        /* pending events in them */
   int64_t oldest_pending_ms;     /* time of the oldest pending event, 0 when none */
   int64_t dead_letter_documents; /* documents with dead letters */
   int64_t dead_letters;          /* dead letters in them */
   int64_t newest_dead_letter_ms; /* when the last dead letter was made, 0 when none */
   int64_t malformed_documents;   /* documents whose events or dead letters field is not an
                                   * array (written without liboutbox): not counted above */
   int64_t reserved[7];
} outbox_counts_t;

/* Counts pending events and dead letters with two aggregations over the partial indexes
 * (the time of the oldest pending event is that of each document's first pending event, which
 * the contract keeps oldest first). `counts` is zero-filled first. Thread-safe. */
OUTBOX_API bool outbox_collection_count_events(outbox_collection_t *collection,
                                               outbox_counts_t *counts, bson_error_t *error);

/* Requeues the dead letter of event `event_id` of entity `entity_id` (see REQUEUE above): one
 * update moves it back into the pending events with requeued: {at: now, by, count}. `by` (who)
 * is required, non-empty and copied. Fails with OUTBOX_ERROR_NOT_FOUND when the entity has no
 * such dead letter, OUTBOX_ERROR_INVALID_EVENT when the stored event breaks the contract (fix
 * it by hand, or discard it), OUTBOX_ERROR_RETRIES_EXHAUSTED when the entity kept changing.
 * Thread-safe. */
OUTBOX_API bool outbox_collection_requeue_dead_letter(outbox_collection_t *collection,
                                                      const bson_value_t *entity_id,
                                                      const char *event_id, const char *by,
                                                      bson_error_t *error);

/* Discards the dead letter of event `event_id` of entity `entity_id`: moves it, in one update
 * that requires the exact element to still be there, to discardedField with
 * discarded: {at: now, by, reason}. `by` (who: a user name, e.g. "alice@ops-host") and
 * `reason` (why) are required, non-empty and copied. Fails with OUTBOX_ERROR_NOT_FOUND when
 * the entity has no such dead letter, OUTBOX_ERROR_INVALID_ARGUMENT on a missing argument.
 * Thread-safe. */
OUTBOX_API bool outbox_collection_discard_dead_letter(outbox_collection_t *collection,
                                                      const bson_value_t *entity_id,
                                                      const char *event_id, const char *by,
                                                      const char *reason, bson_error_t *error);

OUTBOX_END_DECLS

#endif /* OUTBOX_DEAD_LETTERS_H */
