/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's collections: an outbox_collection_t is a handle on one MongoDB collection of
 * entities; each call commits a change and its events in one single-document update (create,
 * update, append, soft delete), reads an entity or deletes it. The stored contract every
 * document of such a collection keeps is below; pending events and dead letters are listed and
 * handled through outbox/dead-letters.h, the contract is installed as a validator by
 * outbox/schema.h.
 *
 * THE STORED CONTRACT. Every document managed by this library has the shape below; the relay,
 * the examples and consumers in other languages rely on it. The bookkeeping field names can be
 * renamed with collection options (versionField, eventSeqField, eventsField,
 * recentCommitsField).
 *
 *    { _id:      ObjectId | string | int32 | int64 | binary (any subtype),
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
 * ({eventSeq: 1}, partialFilterExpression {"events.0": {$exists: true}}), which holds only the
 * entities with pending events, so they can be found without scanning the collection (how the
 * relay uses it: relay/README.md). outbox_collection_ensure_schema() (outbox/schema.h) makes
 * MongoDB itself refuse writes that break this contract (error 121,
 * DocumentValidationFailure), whoever sends them.
 *
 * THREADS. An outbox_collection_t may be used from any number of threads at once; each call
 * pops a client from the pool and pushes it back before returning. Its options are fixed when
 * it is made; the only state it changes is an internal cache, behind its own lock.
 */
#ifndef OUTBOX_COLLECTION_H
#define OUTBOX_COLLECTION_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "outbox/error.h"
#include "outbox/event.h"
#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* Pass as expected_version to commit whatever the current version is. The library then reads
 * the entity and retries on conflict up to appendRetries times. */
#define OUTBOX_ANY_VERSION ((int64_t)-1)

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
OUTBOX_API outbox_collection_t *outbox_collection_new(mongoc_client_pool_t *pool, const char *db,
                                                      const char *coll, const bson_t *opts,
                                                      bson_error_t *error);

/* Frees the handle. NULL is allowed. No call on the handle may be running. */
OUTBOX_API void outbox_collection_destroy(outbox_collection_t *collection);

/* Inserts a new entity {_id: id, ...fields, version: 1, eventSeq: n_events,
 * events: [events...]}.
 *
 * `id` must be an ObjectId, string, int32, int64 or binary (any subtype); `fields` (may be
 * NULL) are the business fields and may not contain _id or a bookkeeping field
 * (OUTBOX_ERROR_RESERVED_FIELD) or a top-level key starting with '$'. `events` is an array of
 * `n_events` distinct, not yet committed events (may be NULL when n_events is 0); they are
 * borrowed, and on success each gets its seq (1..n_events) and time. Fails with
 * OUTBOX_ERROR_ALREADY_EXISTS if the id exists, OUTBOX_ERROR_LIMIT_PENDING if n_events is above
 * maxPendingEvents, OUTBOX_ERROR_LIMIT_SIZE if the document would be above maxDocumentSize.
 * `result` (may be NULL) receives version 1 and the seq range. OUTBOX_ERROR_UNKNOWN_OUTCOME
 * and its retry with the same events as for outbox_collection_update() (a create without
 * events cannot be recognized: its retry may report OUTBOX_ERROR_ALREADY_EXISTS). Thread-safe. */
OUTBOX_API bool outbox_collection_create(outbox_collection_t *collection, const bson_value_t *id,
                                         const bson_t *fields, outbox_event_t *const *events,
                                         size_t n_events, outbox_commit_t *result,
                                         bson_error_t *error);

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
OUTBOX_API bool outbox_collection_update(outbox_collection_t *collection, const bson_value_t *id,
                                         int64_t expected_version, const bson_t *update,
                                         outbox_event_t *const *events, size_t n_events,
                                         outbox_commit_t *result, bson_error_t *error);

/* Appends events to an entity without an expected version: the same as
 * outbox_collection_update(collection, id, OUTBOX_ANY_VERSION, NULL, events, n_events, ...).
 * Use it when the events do not depend on the entity's state. Thread-safe. */
OUTBOX_API bool outbox_collection_append(outbox_collection_t *collection, const bson_value_t *id,
                                         outbox_event_t *const *events, size_t n_events,
                                         outbox_commit_t *result, bson_error_t *error);

/* Reads an entity. `doc` (may be NULL) is always initialized and receives the whole stored
 * document (empty when the call fails); the caller must bson_destroy() it. `version` (may be
 * NULL) receives its version, e.g. for an HTTP ETag. Fails with OUTBOX_ERROR_NOT_FOUND, or
 * OUTBOX_ERROR_MALFORMED_DOCUMENT if version or eventSeq is missing or not an integer.
 * Reads from the primary. Thread-safe. */
OUTBOX_API bool outbox_collection_read(outbox_collection_t *collection, const bson_value_t *id,
                                       bson_t *doc, int64_t *version, bson_error_t *error);

/* Marks an entity deleted: sets deletedField to true, increments the version and appends
 * `event` (may be NULL), in one update, under the same rules and errors as
 * outbox_collection_update(). The document stays until outbox_collection_delete().
 * Thread-safe. */
OUTBOX_API bool outbox_collection_soft_delete(outbox_collection_t *collection,
                                              const bson_value_t *id, int64_t expected_version,
                                              outbox_event_t *event, outbox_commit_t *result,
                                              bson_error_t *error);

/* Removes an entity's document. Refused with OUTBOX_ERROR_PENDING_EVENTS while it has pending
 * events (they would never be published); allowed once the relay has published them. With an
 * expected version other than OUTBOX_ANY_VERSION, fails with OUTBOX_ERROR_CONFLICT if the
 * version differs. OUTBOX_ERROR_NOT_FOUND if there is no such entity. Thread-safe. */
OUTBOX_API bool outbox_collection_delete(outbox_collection_t *collection, const bson_value_t *id,
                                         int64_t expected_version, bson_error_t *error);

/* Creates the partial index through which pending events are found (by the relay's recovery
 * sweep and outbox_collection_find_events()): name "outbox_pending", key
 * {<eventSeqField>: 1}, partialFilterExpression {"<eventsField>.0": {$exists: true}}. It only
 * holds entities with pending events, so it stays small. Also "outbox_dead_letters", the same
 * over "<deadLettersField>.0", through which dead letters are listed and counted. Idempotent;
 * call it at start-up or from a migration (the relay creates both too). Thread-safe. */
OUTBOX_API bool outbox_collection_ensure_indexes(outbox_collection_t *collection,
                                                 bson_error_t *error);

OUTBOX_END_DECLS

#endif /* OUTBOX_COLLECTION_H */
