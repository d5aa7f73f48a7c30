/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox: record the events a change raises in the same single-document update as the
 * change itself, so an event is stored if and only if the change is. A relay
 * (outbox-relay) publishes the pending events later and removes them from the document.
 *
 * Example (error handling shortened):
 *
 *    mongoc_client_pool_t *pool = mongoc_client_pool_new (uri);
 *    mongoc_client_pool_set_error_api (pool, MONGOC_ERROR_API_VERSION_2);
 *    bson_error_t error;
 *    outbox_collection_t *contacts =
 *       outbox_collection_new (pool, "app", "contacts", NULL, &error);
 *    outbox_collection_ensure_indexes (contacts, &error);   // once, at start-up
 *
 *    bson_value_t id = {.value_type = BSON_TYPE_UTF8};
 *    id.value.v_utf8.str = "c-42";
 *    id.value.v_utf8.len = 4;
 *    bson_t *fields = BCON_NEW ("name", BCON_UTF8 ("Ada"));
 *
 *    outbox_event_t *created = outbox_event_new ("contact.created", fields);
 *    outbox_commit_t res;
 *    if (!outbox_collection_create (contacts, &id, fields, &created, 1, &res, &error)) ...
 *    // res.version == 1, res.first_seq == res.last_seq == 1
 *    outbox_event_destroy (created);
 *    bson_destroy (fields);
 *
 *    bson_t *upd = BCON_NEW ("$set", "{", "email", BCON_UTF8 ("a@example.org"), "}");
 *    outbox_event_t *changed = outbox_event_new ("contact.email-changed", NULL);
 *    outbox_event_set_header (changed, "traceparent", "00-...-01", &error);
 *    if (!outbox_collection_update (contacts, &id, res.version, upd, &changed, 1, &res,
 *                                   &error)) {
 *       if (error.domain == OUTBOX_ERROR_DOMAIN && error.code == OUTBOX_ERROR_CONFLICT)
 *          ... // someone else changed it: res.version is the current version (HTTP 412)
 *    }
 *    outbox_event_destroy (changed);
 *    bson_destroy (upd);
 *    outbox_collection_destroy (contacts);
 *    mongoc_client_pool_destroy (pool);
 *
 * THE STORED CONTRACT. Every document managed by this library has the shape below; the relay,
 * the examples and consumers in other languages rely on it. The bookkeeping field names can be
 * renamed with collection options (versionField, eventSeqField, eventsField,
 * recentCommitsField).
 *
 *    { _id:      ObjectId | string | int32 | int64 | UUID binary (subtype 4),
 *      ...business fields...,
 *      version:  Int64,  1 on creation, +1 on every committed change (with or without
 *                        events); never changed by the relay,
 *      eventSeq: Int64,  seq of the newest event ever appended to this entity (0 = none),
 *      events: [         pending (not yet published) events, oldest first; [] or absent = none
 *        { id:      String,   unique across all entities (UUID v4, lowercase, 36 chars),
 *          seq:     Int64,    per entity 1, 2, 3 ... strictly increasing, no gaps, never reused,
 *          type:    String,   1..128 characters of [A-Za-z0-9._-],
 *          time:    Date,     UTC, when the change was committed (the caller's clock),
 *          data:    Document,
 *          headers: Document of string values (optional) } ],
 *      recentCommits: [ optional; the last 8 commits with events, oldest first, so that a
 *        { seq: Int64,   retry after OUTBOX_ERROR_UNKNOWN_OUTCOME recognizes its attempt
 *          id: String }  when the relay has cleared its events: the commit's first seq and
 *      ] }               first event id. Never changed by the relay.
 *
 * A change is one MongoDB update command whose filter holds the expected version and
 * eventSeq and whose update sets the new version and eventSeq and $push-es the events (and
 * their recentCommits entry, keeping the last 8 with $slice); the
 * relay publishes events, then removes them with $pull without touching version or eventSeq.
 * outbox_collection_ensure_indexes() creates the partial index "outbox_pending"
 * ({eventSeq: 1}, partialFilterExpression {"events.0": {$exists: true}}); the relay's recovery
 * sweep runs find({"events.0": {$exists: true}}) hinted on it, so it never scans the whole
 * collection. outbox_collection_ensure_schema() makes MongoDB itself refuse writes that break
 * this contract (error 121, DocumentValidationFailure), whoever sends them.
 *
 * ERRORS. Every function that can fail returns false (or NULL) and fills the bson_error_t
 * (which may be NULL). Errors found by this library use OUTBOX_ERROR_DOMAIN and the codes of
 * outbox_error_code_t; errors from mongoc and the server (network, authentication, write
 * concern ...) are passed through unchanged with mongoc's domains and codes, except that a
 * commit whose outcome is unknown (network error after sending, election during the write,
 * writeConcernError) fails with OUTBOX_ERROR_UNKNOWN_OUTCOME: retrying it with the same event
 * objects is safe. Any other failed call leaves the stored document exactly as it was (for the
 * non-commit writes, a network or write-concern error may or may not have applied the change,
 * as with any MongoDB write). Events are never half-written: all events of a call are stored
 * together with the change, or none is.
 *
 * THREADS. An outbox_collection_t may be used from any number of threads at once; each call
 * pops a client from the pool and pushes it back before returning. An outbox_event_t is not
 * thread-safe: use one from one thread at a time.
 *
 * This header declares the whole API: it also includes outbox/inbox.h, the consumer side
 * (either header may be included on its own).
 */
#ifndef OUTBOX_H
#define OUTBOX_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "outbox/outbox-macros.h"
#include "outbox-version.h"

OUTBOX_BEGIN_DECLS

/* Returns the library's version, e.g. "0.1.0". The string is static; do not free it. */
OUTBOX_API const char *
outbox_get_version(void);

/* ---------------------------------------------------------------------------------------------
 * Errors
 */

/* The bson_error_t domain of errors raised by liboutbox itself ("ob" in ASCII; far from
 * mongoc's and libbson's small domain numbers). */
#define OUTBOX_ERROR_DOMAIN 0x6f62

typedef enum {
   /* A NULL or malformed argument, an unsupported id type, an update that is not made of
    * update operators, an unknown option, invalid UTF-8 in fields or update. */
   OUTBOX_ERROR_INVALID_ARGUMENT = 1,
   /* The caller's fields or update touch _id or a bookkeeping field (version, eventSeq,
    * events, or their configured names), including dotted paths ("events.0") and $rename
    * targets. */
   OUTBOX_ERROR_RESERVED_FIELD,
   /* An event is invalid: bad type, header or data (the message names the event and why). */
   OUTBOX_ERROR_INVALID_EVENT,
   /* The entity's version is not the expected one. outbox_commit_t.version holds the
    * current version. */
   OUTBOX_ERROR_CONFLICT,
   /* No entity with that id. */
   OUTBOX_ERROR_NOT_FOUND,
   /* outbox_collection_create(): an entity with that id exists already. */
   OUTBOX_ERROR_ALREADY_EXISTS,
   /* The change would leave more than maxPendingEvents unpublished events in the entity
    * (the relay is behind or down). Nothing was written; retry later. */
   OUTBOX_ERROR_LIMIT_PENDING,
   /* The change would make the document larger than maxDocumentSize (or the server refused
    * it as too large). Nothing was written. */
   OUTBOX_ERROR_LIMIT_SIZE,
   /* outbox_collection_delete(): the entity still has pending events, which would be lost. */
   OUTBOX_ERROR_PENDING_EVENTS,
   /* OUTBOX_ANY_VERSION: the entity kept changing under us appendRetries times in a row. */
   OUTBOX_ERROR_RETRIES_EXHAUSTED,
   /* The stored document breaks the stored contract (e.g. version is not an integer). */
   OUTBOX_ERROR_MALFORMED_DOCUMENT,
   /* outbox_collection_ensure_schema(): the collection has a validator this library did not
    * install; it was left unchanged. */
   OUTBOX_ERROR_FOREIGN_VALIDATOR,
   /* A commit (create, update, append, soft delete) was sent but its outcome is unknown: the
    * connection was lost after sending, the primary stepped down during the write, or the
    * server applied it but reported a writeConcernError (e.g. 64, wtimeout), so it may still
    * be rolled back. The message names the original error. It may or may not be stored. Retry
    * with the SAME event objects: the retry first finds out whether this attempt was
    * stored ("Commit outcomes" in README.md says what each case returns). A commit known to
    * be stored is a success, one known not to be a plain failure: never this code. */
   OUTBOX_ERROR_UNKNOWN_OUTCOME,
} outbox_error_code_t;

/* Pass as expected_version to commit whatever the current version is. The library then reads
 * the entity and retries on conflict up to appendRetries times. */
#define OUTBOX_ANY_VERSION ((int64_t) -1)

/* ---------------------------------------------------------------------------------------------
 * Events
 */

/* An event to commit with a change. Functions that commit events borrow them for the call
 * only. An event can be committed once: on success it records its seq and time, and giving it
 * to another commit is OUTBOX_ERROR_INVALID_ARGUMENT. After OUTBOX_ERROR_UNKNOWN_OUTCOME it
 * remembers the attempt (not its seq): a retry with the same objects keeps their ids and is
 * recognized, so the events are stored once (see outbox_collection_update()). */
typedef struct _outbox_event_t outbox_event_t;

/* Creates an event of the given type with a fresh random id (UUID v4 from getrandom()).
 * `type` and `data` are copied; `data` NULL means an empty document. Never returns NULL
 * (aborts on out-of-memory, like libbson). The type, data and headers are validated when the
 * event is committed (or by outbox_event_validate()), so an invalid type is reported there
 * with OUTBOX_ERROR_INVALID_EVENT. `type` NULL is treated as "" and therefore invalid.
 * Free with outbox_event_destroy(). */
OUTBOX_API outbox_event_t *
outbox_event_new(const char *type, const bson_t *data);

/* Frees the event. NULL is allowed. */
OUTBOX_API void
outbox_event_destroy(outbox_event_t *event);

/* Sets header `key` to `value` (both copied; a second call with the same key replaces the
 * value). Keys are 1..128 bytes of valid UTF-8 not starting with '$'; values are valid UTF-8
 * without NUL. Returns false with OUTBOX_ERROR_INVALID_EVENT and leaves the event unchanged
 * otherwise. Stored as the event's "headers" document (the relay maps them to MQTT user
 * properties). */
OUTBOX_API bool
outbox_event_set_header(outbox_event_t *event, const char *key, const char *value,
                        bson_error_t *error);

/* Checks the event as a commit would: type 1..128 characters of [A-Za-z0-9._-]; data valid
 * UTF-8 throughout and without keys that are empty or start with '$' at any depth (consumers
 * read events as Extended JSON, where {"$date": ...} would change meaning). Returns false with
 * OUTBOX_ERROR_INVALID_EVENT and the reason. */
OUTBOX_API bool
outbox_event_validate(const outbox_event_t *event, bson_error_t *error);

/* The event id: 36 lowercase characters, e.g. "0f8fad5b-d9cb-469f-a165-70867728950e".
 * Owned by the event; valid until it is destroyed. */
OUTBOX_API const char *
outbox_event_get_id(const outbox_event_t *event);

/* The event type as given to outbox_event_new(). Owned by the event; valid until it is
 * destroyed. */
OUTBOX_API const char *
outbox_event_get_type(const outbox_event_t *event);

/* The event data. Owned by the event; valid until it is destroyed. */
OUTBOX_API const bson_t *
outbox_event_get_data(const outbox_event_t *event);

/* The seq the entity gave the event, 0 until a commit containing it succeeds. */
OUTBOX_API int64_t
outbox_event_get_seq(const outbox_event_t *event);

/* The stored "time" (milliseconds since the Unix epoch, UTC), 0 until committed. */
OUTBOX_API int64_t
outbox_event_get_time(const outbox_event_t *event);

/* ---------------------------------------------------------------------------------------------
 * Collections
 */

typedef struct _outbox_collection_t outbox_collection_t;

/* The result of a commit. Zero-filled on entry to every function that takes one. */
typedef struct {
   /* After success: the entity's new version. After OUTBOX_ERROR_CONFLICT: its current
    * version. Otherwise 0. */
   int64_t version;
   /* The seq of the first and last event appended by the call; 0 when it appended none. */
   int64_t first_seq;
   int64_t last_seq;
   /* Reserved for future fields; keeps the struct's size stable. */
   int64_t reserved[5];
} outbox_commit_t;

/* Creates a handle on collection `db`.`coll`, using clients from `pool`.
 *
 * `pool` is borrowed and must outlive the handle; call
 * mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2) before the pool's first
 * pop so server errors carry MONGOC_ERROR_SERVER. `opts` (may be NULL) is read during the call:
 *   writeConcern      document, default {w: "majority"}: used for every write, whatever the
 *                     URI says; w must be "majority" (j and wtimeout may be added): a weaker
 *                     w is OUTBOX_ERROR_INVALID_ARGUMENT, since an acknowledged w:1 write
 *                     can be rolled back (README.md, "Commit outcomes");
 *   versionField      string, default "version";
 *   eventSeqField     string, default "eventSeq";
 *   eventsField       string, default "events";
 *   deletedField      string, default "deleted" (set to true by soft delete);
 *   deadLettersField  string, default "deadLetters": where the relay moves events it can
 *                     never publish (its --dead-letters-field);
 *   discardedField    string, default "discardedLetters": discarded dead letters, kept as
 *                     the audit trail of outbox_collection_discard_dead_letter();
 *   requeuesField     string, default "requeues": Int64 incremented by
 *                     outbox_collection_requeue_dead_letter() (the relay's
 *                     --requeues-field);
 *   recentCommitsField  string, default "recentCommits" (see the stored contract);
 *   maxPendingEvents  int, default 1000: pending events allowed per entity after a change;
 *   maxDocumentSize   int, default 15 MiB (16 MiB server limit minus 1 MiB of margin);
 *   appendRetries     int, default 10: update commands one call may send; with
 *                     OUTBOX_ANY_VERSION each concurrent change costs one (then
 *                     OUTBOX_ERROR_RETRIES_EXHAUSTED);
 *   cacheSize         int, default 4096: entries of the (id -> version, eventSeq) cache that
 *                     saves a read per update; 0 disables it. Correctness never depends on it.
 * Field names must be non-empty, distinct, not "_id", without '.' and not starting with '$'.
 * Unknown options are refused. `db` and `coll` are copied. Returns NULL with
 * OUTBOX_ERROR_INVALID_ARGUMENT on a bad option or a NULL or empty pool, db or coll. No I/O
 * happens here. Free with outbox_collection_destroy(). */
OUTBOX_API outbox_collection_t *
outbox_collection_new(mongoc_client_pool_t *pool, const char *db, const char *coll,
                      const bson_t *opts, bson_error_t *error);

/* Frees the handle. NULL is allowed. No call on the handle may be running. */
OUTBOX_API void
outbox_collection_destroy(outbox_collection_t *collection);

/* Inserts a new entity {_id: id, ...fields, version: 1, eventSeq: n_events,
 * events: [events...]}.
 *
 * `id` must be an ObjectId, string, int32, int64 or UUID binary (subtype 4); `fields` (may be
 * NULL) are the business fields and may not contain _id or a bookkeeping field
 * (OUTBOX_ERROR_RESERVED_FIELD) or a top-level key starting with '$'. `events` is an array of
 * `n_events` distinct, not yet committed events (may be NULL when n_events is 0); they are
 * borrowed, and on success each gets its seq (1..n_events) and time. Fails with
 * OUTBOX_ERROR_ALREADY_EXISTS if the id exists, OUTBOX_ERROR_LIMIT_PENDING if n_events is above
 * maxPendingEvents, OUTBOX_ERROR_LIMIT_SIZE if the document would be above maxDocumentSize.
 * `result` (may be NULL) receives version 1 and the seq range. OUTBOX_ERROR_UNKNOWN_OUTCOME
 * and its retry with the same events as for outbox_collection_update() (a create without
 * events cannot be recognized: its retry may report OUTBOX_ERROR_ALREADY_EXISTS). Thread-safe. */
OUTBOX_API bool
outbox_collection_create(outbox_collection_t *collection, const bson_value_t *id,
                         const bson_t *fields, outbox_event_t *const *events, size_t n_events,
                         outbox_commit_t *result, bson_error_t *error);

/* Changes an entity and appends events in one atomic update command.
 *
 * The update is applied only if the entity's version is `expected_version` (else
 * OUTBOX_ERROR_CONFLICT with the current version in result->version; nothing written), or
 * whatever it is when `expected_version` is OUTBOX_ANY_VERSION (then conflicts are retried up
 * to appendRetries times, then OUTBOX_ERROR_RETRIES_EXHAUSTED). `update` (may be NULL: events
 * only) holds update operators only ($set, $unset, $inc, $min, $max, $mul, $currentDate,
 * $rename, $push, $addToSet, $pull, $pullAll, $pop, $bit); a replacement document, a pipeline
 * or another operator is OUTBOX_ERROR_INVALID_ARGUMENT, and a path on _id or a bookkeeping
 * field is OUTBOX_ERROR_RESERVED_FIELD (the deleted field is not reserved). The library adds
 * to the same update a $set of version (V + 1) and eventSeq (S + n_events) and a
 * $push {events: {$each: [...]}}, merged into the caller's own $set and $push if any, and a
 * filter on _id, version and eventSeq. The version increases by one even with no events.
 * Change streams show the appended events as "events.<index>" in updatedFields (or the whole
 * array when it was empty).
 * Other failures: OUTBOX_ERROR_NOT_FOUND; OUTBOX_ERROR_LIMIT_PENDING when more than
 * maxPendingEvents would be pending; OUTBOX_ERROR_LIMIT_SIZE when the document would grow
 * past maxDocumentSize (estimated from the last size seen plus the encoded size of the change;
 * the server's own 16 MiB limit is reported the same way). Event rules as for
 * outbox_collection_create(); on success the events get seq first_seq..last_seq.
 * OUTBOX_ERROR_UNKNOWN_OUTCOME when the update was sent and may or may not be stored; call
 * again with the same `events` objects (and the same update): the library then reads the
 * entity and returns success with the first attempt's result if that attempt is stored (its
 * event ids are in the entity or its first id in recentCommits, and what it wrote is
 * majority-committed), commits normally if it is not (eventSeq never moved past it, another
 * commit holds the seqs it was to get, or recentCommits reaches back that far without it; with
 * an expected version a change made meanwhile by someone else is OUTBOX_ERROR_CONFLICT as
 * usual), and OUTBOX_ERROR_UNKNOWN_OUTCOME again when it cannot tell (its events were cleared
 * and more than 8 commits followed, or writers outside liboutbox left no recentCommits). A
 * change without events carries no id to recognize it by: its retry is a plain new commit.
 * See "Commit outcomes" in README.md.
 * Thread-safe. */
OUTBOX_API bool
outbox_collection_update(outbox_collection_t *collection, const bson_value_t *id,
                         int64_t expected_version, const bson_t *update,
                         outbox_event_t *const *events, size_t n_events,
                         outbox_commit_t *result, bson_error_t *error);

/* Appends events to an entity without an expected version: the same as
 * outbox_collection_update(collection, id, OUTBOX_ANY_VERSION, NULL, events, n_events, ...).
 * Use it when the events do not depend on the entity's state. Thread-safe. */
OUTBOX_API bool
outbox_collection_append(outbox_collection_t *collection, const bson_value_t *id,
                         outbox_event_t *const *events, size_t n_events,
                         outbox_commit_t *result, bson_error_t *error);

/* Reads an entity. `doc` (may be NULL) is always initialized and receives the whole stored
 * document (empty when the call fails); the caller must bson_destroy() it. `version` (may be
 * NULL) receives its version, e.g. for an HTTP ETag. Fails with OUTBOX_ERROR_NOT_FOUND, or
 * OUTBOX_ERROR_MALFORMED_DOCUMENT if version or eventSeq is missing or not an integer.
 * Reads from the primary. Thread-safe. */
OUTBOX_API bool
outbox_collection_read(outbox_collection_t *collection, const bson_value_t *id, bson_t *doc,
                       int64_t *version, bson_error_t *error);

/* Marks an entity deleted: sets deletedField to true, increments the version and appends
 * `event` (may be NULL), in one update, under the same rules and errors as
 * outbox_collection_update(). The document stays until outbox_collection_delete().
 * Thread-safe. */
OUTBOX_API bool
outbox_collection_soft_delete(outbox_collection_t *collection, const bson_value_t *id,
                              int64_t expected_version, outbox_event_t *event,
                              outbox_commit_t *result, bson_error_t *error);

/* Removes an entity's document. Refused with OUTBOX_ERROR_PENDING_EVENTS while it has pending
 * events (they would never be published); allowed once the relay has published them. With an
 * expected version other than OUTBOX_ANY_VERSION, fails with OUTBOX_ERROR_CONFLICT if the
 * version differs. OUTBOX_ERROR_NOT_FOUND if there is no such entity. Thread-safe. */
OUTBOX_API bool
outbox_collection_delete(outbox_collection_t *collection, const bson_value_t *id,
                         int64_t expected_version, bson_error_t *error);

/* ---------------------------------------------------------------------------------------------
 * Operating: pending events and dead letters
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
 * disturbed. Why a counter of its own: the relay's change stream passes only updates that set
 * eventSeq (appends), and a requeue must not raise eventSeq; so the stream's filter also passes
 * updates that set requeuesField, and an $inc always changes it (a timestamp set twice in the
 * same millisecond would not show as changed). A relay that was down finds the event in its
 * sweep or when it reads the document. The relay accepts an event carrying the requeued
 * marker although its seq is not above the entity's last published seq, once: only while it
 * is not already among the entity's events in flight, and never dead-letters it for its seq.
 * Events that break the stored contract (outbox_collection_requeue_dead_letter() checks the
 * stored event first) are refused: they would only go back to the dead letters.
 * What consumers see: the requeued event arrives AFTER events of the same entity with higher
 * seqs (it failed before, they did not), so per-entity order is broken for that one event, by
 * the operator's decision. It was never delivered before (it went to the dead letters instead),
 * so an inbox (outbox/inbox.h) has not seen its id: outbox_inbox_apply() applies it and
 * reports OUTBOX_SEQ_LATE (a late fill of the gap it reported as OUTBOX_SEQ_GAP when the next
 * event arrived). An inbox with skipLate set skips it (OUTBOX_INBOX_SKIPPED_LATE): such
 * consumers should not be sent requeued events whose effect would be overwritten anyway.
 */

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
   const char *reason;            /* why the relay could not publish it */
   int64_t at_ms;                 /* when it was dead-lettered */
   const char *relay;             /* the relay's name */
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
OUTBOX_API outbox_event_cursor_t *
outbox_collection_find_events(outbox_collection_t *collection, outbox_place_t place,
                              const bson_t *opts, bson_error_t *error);

/* Sets *event to the next matching event and returns true, or returns false at the end or
 * on an error (see outbox_event_cursor_error()). *event is valid until the next call. */
OUTBOX_API bool
outbox_event_cursor_next(outbox_event_cursor_t *cursor, const outbox_stored_event_t **event);

/* True (and fills `error`) if the cursor stopped on an error (network, server, or a document
 * whose events or dead letters field is not an array: OUTBOX_ERROR_MALFORMED_DOCUMENT). */
OUTBOX_API bool
outbox_event_cursor_error(const outbox_event_cursor_t *cursor, bson_error_t *error);

/* Frees the cursor and gives its client back to the pool. NULL is allowed. */
OUTBOX_API void
outbox_event_cursor_destroy(outbox_event_cursor_t *cursor);

/* What outbox_collection_count_events() counts. */
typedef struct {
   int64_t pending_documents;    /* documents with pending events */
   int64_t pending_events;       /* pending events in them */
   int64_t oldest_pending_ms;    /* time of the oldest pending event, 0 when none */
   int64_t dead_letter_documents; /* documents with dead letters */
   int64_t dead_letters;         /* dead letters in them */
   int64_t newest_dead_letter_ms; /* when the last dead letter was made, 0 when none */
   int64_t reserved[8];
} outbox_counts_t;

/* Counts pending events and dead letters with two aggregations over the partial indexes
 * (the time of the oldest pending event is that of each document's first pending event, which
 * the contract keeps oldest first). `counts` is zero-filled first. Thread-safe. */
OUTBOX_API bool
outbox_collection_count_events(outbox_collection_t *collection, outbox_counts_t *counts,
                               bson_error_t *error);

/* Requeues the dead letter of event `event_id` of entity `entity_id` (see REQUEUE above): one
 * update moves it back into the pending events with requeued: {at: now, by, count}. `by` (who)
 * is required, non-empty and copied. Fails with OUTBOX_ERROR_NOT_FOUND when the entity has no
 * such dead letter, OUTBOX_ERROR_INVALID_EVENT when the stored event breaks the contract (fix
 * it by hand, or discard it), OUTBOX_ERROR_RETRIES_EXHAUSTED when the entity kept changing.
 * Thread-safe. */
OUTBOX_API bool
outbox_collection_requeue_dead_letter(outbox_collection_t *collection,
                                      const bson_value_t *entity_id, const char *event_id,
                                      const char *by, bson_error_t *error);

/* Discards the dead letter of event `event_id` of entity `entity_id`: moves it, in one update
 * that requires the exact element to still be there, to discardedField with
 * discarded: {at: now, by, reason}. `by` (who: a user name, e.g. "alice@ops-host") and
 * `reason` (why) are required, non-empty and copied. Fails with OUTBOX_ERROR_NOT_FOUND when
 * the entity has no such dead letter, OUTBOX_ERROR_INVALID_ARGUMENT on a missing argument.
 * Thread-safe. */
OUTBOX_API bool
outbox_collection_discard_dead_letter(outbox_collection_t *collection,
                                      const bson_value_t *entity_id, const char *event_id,
                                      const char *by, const char *reason, bson_error_t *error);

/* Creates the partial index the relay's recovery sweep uses: name "outbox_pending", key
 * {<eventSeqField>: 1}, partialFilterExpression {"<eventsField>.0": {$exists: true}}. It only
 * holds entities with pending events, so it stays small. Also "outbox_dead_letters", the same
 * over "<deadLettersField>.0", through which dead letters are listed and counted. Idempotent;
 * call it at start-up or from a migration (the relay creates both too). Thread-safe. */
OUTBOX_API bool
outbox_collection_ensure_indexes(outbox_collection_t *collection, bson_error_t *error);

/* Installs the stored contract as the collection's validator, so that MongoDB refuses any
 * write (from this library, another language, a shell) that would leave a document breaking
 * it, with error 121 DocumentValidationFailure and an errInfo naming the rule. The validator
 * is a $jsonSchema titled "outbox stored contract" (see outbox_collection_schema()) that
 * checks the bookkeeping fields under their configured names:
 *   version and eventSeq   required, Int64, version >= 1, eventSeq >= 0. Every document of an
 *                          outbox collection is an entity this library can change, and it
 *                          always writes both; insert entities without them elsewhere;
 *   events (if present)    an array of documents with id (lowercase UUID v4 string), seq
 *                          (Int64 >= 1), type (1..128 of [A-Za-z0-9._-]), time (Date) and
 *                          data (document) required, headers (document of strings) optional;
 *   deadLetters (if present, the relay's --dead-letters-field) an array of documents.
 * Business fields, _id and deletedField are not checked. The relay's own writes (clearing
 * published events, moving an event to the dead letters) keep documents valid.
 *
 * `opts` (may be NULL), read during the call:
 *   validationAction  "error" (default): refuse; "warn": accept and have the server log it;
 *   validationLevel   "moderate" (default): check inserts and updates of documents that
 *                     satisfy the contract; documents that broke it before (written without
 *                     the validator) stay writable, so the relay can still clear and
 *                     dead-letter their events; "strict": check every write;
 *   deadLettersField  string, default the collection's deadLettersField;
 *   combine           bool, default false: see below.
 * If the collection does not exist it is created with the validator. If it has no validator
 * or ours (any version, any field names), the validator, level and action are set with
 * collMod, which is skipped when they are already as asked (so calling this at every start-up
 * costs one listCollections). A validator installed by someone else is never dropped: the call
 * fails with OUTBOX_ERROR_FOREIGN_VALIDATOR and changes nothing, unless `combine` is true, in
 * which case {$and: [their validator, ours]} is installed (the level and action then apply to
 * both); a later call replaces only our part of such a $and. Errors from the server (e.g. a
 * user without the collMod or listCollections privilege: 13 Unauthorized) are passed through.
 * Documents already stored are not checked. Thread-safe. */
OUTBOX_API bool
outbox_collection_ensure_schema(outbox_collection_t *collection, const bson_t *opts,
                                bson_error_t *error);

/* The validator outbox_collection_ensure_schema() installs with the same `opts`
 * ({$jsonSchema: {...}}), e.g. for an admin tool to print or install it. `validator` is always
 * initialised by the callee and must be freed with bson_destroy(); it is empty when the call
 * fails (OUTBOX_ERROR_INVALID_ARGUMENT on a bad option). No I/O. Thread-safe. */
OUTBOX_API bool
outbox_collection_schema(const outbox_collection_t *collection, const bson_t *opts,
                         bson_t *validator, bson_error_t *error);

OUTBOX_END_DECLS

/* The consumer side, so that one include gives the whole API. outbox/inbox.h includes this
 * header in turn; the include guards make either order work. */
#include "outbox/inbox.h"

#endif /* OUTBOX_H */
