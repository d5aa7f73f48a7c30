/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The idempotent inbox: the consumer side of the outbox. The relay delivers every event at
 * least once, so a consumer sees some events twice (a relay restarted between publish and
 * clear, an MQTT QoS 1 redelivery). An inbox makes applying an event to the consumer's own
 * state in MongoDB idempotent: the state change and the record "event X was processed" are
 * ONE single-document update, so either both happen or neither does, and a redelivered event
 * is recognised and skipped.
 *
 * Example (error handling shortened):
 *
 *    outbox_inbox_t *inbox = outbox_inbox_new (pool, "reader", "directory", NULL, &error);
 *    outbox_inbox_ensure_indexes (inbox, &error);   // once, at start-up
 *
 *    // For each delivered event (id and seq come from the CloudEvents payload):
 *    bson_t *upd = BCON_NEW ("$set", "{", "email", BCON_UTF8 (email), "}");
 *    outbox_inbox_result_t res;
 *    if (!outbox_inbox_apply (inbox, &contact_id, event_id, seq, upd, &res, &error))
 *       ... // nothing was applied; do not acknowledge the message, it will come again
 *    else if (res.status == OUTBOX_INBOX_DUPLICATE)
 *       ... // seen before: the state already contains its effect
 *    else if (res.order == OUTBOX_SEQ_GAP)
 *       ... // applied; events previous_seq+1 .. seq-1 of this entity have not arrived (yet)
 *    bson_destroy (upd);
 *
 * HOW IT WORKS. Each state document (in the consumer's collection `coll`) carries two
 * bookkeeping fields:
 *
 *    inbox:    [String, ...]  ids of the last `window` events applied to this document,
 *                             oldest first (the field name is configurable: inboxField);
 *    inboxSeq: Int64          highest `seq` applied to this document (seqField).
 *
 * outbox_inbox_apply() sends one findAndModify to the state document with the filter
 * {_id: doc_id, inbox: {$ne: event_id}} and the caller's update operators plus
 * {$push: {inbox: {$each: [event_id], $slice: -window}}, $max: {inboxSeq: seq}}. MongoDB applies
 * a single-document update atomically, so the $ne guard and the state change cannot be
 * separated: of any number of concurrent or repeated deliveries of one event to one document,
 * exactly one matches. A delivery that does not match is a duplicate when the document
 * holds the id. The pre-image's inboxSeq tells the caller, atomically with the apply, whether
 * the event arrived in order, after a gap, or late.
 *
 * Besides, each applied event is recorded in a ledger collection (default "<coll>_inbox"):
 * {_id: {event: event id, doc: doc_id}, at: Date, seq: Int64}. Its _id is the pair, so it is
 * unique by construction (the _id index is the unique index); outbox_inbox_ensure_indexes()
 * adds a TTL index on `at` so entries expire after ledgerTtlSeconds. Before applying, the
 * ledger is consulted, which recognises duplicates that have already left a document's window.
 *
 * THE GUARANTEE AND ITS LIMITS.
 * - An event is applied to a state document at most once while its id is in that document's
 *   window, i.e. until `window` newer events have been applied to the same document. This
 *   holds under any crash, retry or concurrency, because it rests on one atomic update.
 * - Beyond the window, a redelivery is still recognised while its ledger entry exists (until
 *   the TTL expires it). The ledger is written after the state update, so a crash between
 *   the two leaves only the window's protection for that event (result->ledger_recorded
 *   reports a failed ledger write).
 * - A redelivery that comes both after `window` newer events to the same document and after
 *   its ledger entry expired (or was never written) is applied again. Size window and TTL
 *   for the longest redelivery delay you expect (the relay redelivers only its
 *   unacknowledged tail, usually within seconds). Its order is then reported as
 *   OUTBOX_SEQ_LATE. A consumer whose events each carry the newest state of what they
 *   describe can set skipLate: events older than the document's highest seq are then not
 *   applied at all (OUTBOX_INBOX_SKIPPED_LATE), which also turns such old redeliveries into
 *   no-ops. Leave it off when different events change different parts of the document:
 *   skipping a late one would lose its change.
 * - One event may be applied to several state documents: each document has its own window
 *   and its own ledger entries. Sequence tracking assumes one state document per source
 *   entity; pass seq 0 to apply events of several entities to one document.
 * - A failed call applies nothing, except after a network or write-concern error where, as
 *   with any MongoDB write, the update may or may not have happened: call again with the same
 *   event; the inbox makes that safe.
 *
 * ERRORS use OUTBOX_ERROR_DOMAIN and outbox_error_code_t (see outbox/error.h); errors from
 * mongoc and the server pass through unchanged.
 *
 * THREADS. An outbox_inbox_t may be used from any number of threads at once; each call pops a
 * client from the pool and pushes it back before returning.
 */
#ifndef OUTBOX_INBOX_H
#define OUTBOX_INBOX_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "outbox/error.h"
#include "outbox/outbox-macros.h"
#include "outbox-version.h"

OUTBOX_BEGIN_DECLS

typedef struct _outbox_inbox_t outbox_inbox_t;

/* What outbox_inbox_apply() did with an event. */
typedef enum {
   /* The update was applied and the event recorded as processed. */
   OUTBOX_INBOX_APPLIED = 1,
   /* The event was processed before: nothing was written. */
   OUTBOX_INBOX_DUPLICATE,
   /* skipLate only: a higher seq was applied to the document already, so this older event
    * was not applied (order is OUTBOX_SEQ_LATE): nothing was written. */
   OUTBOX_INBOX_SKIPPED_LATE,
} outbox_inbox_status_t;

/* Where an event's seq falls relative to the highest seq applied before it to the same
 * state document ("previous"). */
typedef enum {
   /* seq was 0: not tracked. */
   OUTBOX_SEQ_UNTRACKED = 0,
   /* seq == previous + 1 (or 1 with nothing before). */
   OUTBOX_SEQ_IN_ORDER,
   /* seq > previous + 1: seqs previous+1 .. seq-1 have not been applied (yet); they were lost
    * before publication, are still on their way, or predate the consumer. */
   OUTBOX_SEQ_GAP,
   /* seq <= previous: a later event was applied first (reordering, or a redelivery no longer
    * recognised as a duplicate; see THE GUARANTEE AND ITS LIMITS). */
   OUTBOX_SEQ_LATE,
} outbox_seq_order_t;

/* The result of outbox_inbox_apply(). Zero-filled on entry. */
typedef struct {
   outbox_inbox_status_t status;
   /* For OUTBOX_INBOX_APPLIED and OUTBOX_INBOX_SKIPPED_LATE: the event's order and the
    * highest seq applied to the document before it (0 = none, e.g. a new document). For
    * duplicates: 0. */
   outbox_seq_order_t order;
   int64_t previous_seq;
   /* For OUTBOX_INBOX_APPLIED: true if the ledger entry was written (always false when the
    * ledger is disabled). A false value with the ledger enabled means the event is protected
    * by the document's window only. */
   bool ledger_recorded;
   /* Reserved for future fields; keeps the struct's size stable. */
   int64_t reserved[4];
} outbox_inbox_result_t;

/* Classifies `seq` against `previous` (the highest seq applied before, 0 = none), as
 * outbox_inbox_apply() does. Pure function, for consumers that track seqs themselves. */
OUTBOX_API outbox_seq_order_t outbox_seq_classify(int64_t previous, int64_t seq);

/* A static lowercase name: "untracked", "in-order", "gap", "late" ("unknown" otherwise). */
OUTBOX_API const char *outbox_seq_order_name(outbox_seq_order_t order);

/* Creates an inbox over the consumer's state collection `db`.`coll`, using clients from
 * `pool` (borrowed; must outlive the handle; set error API 2 on it before the first pop).
 * `opts` (may be NULL) is read during the call:
 *   writeConcern      document, default {w: "majority"}: used for every write;
 *   inboxField        string, default "inbox": the window of processed event ids;
 *   seqField          string, default "inboxSeq": the highest seq applied;
 *   window            int 1..10000, default 128: event ids kept per state document;
 *   upsert            bool, default true: create a missing state document (the caller's
 *                     update then applies to {_id: doc_id}); false: OUTBOX_ERROR_NOT_FOUND;
 *   skipLate          bool, default false: do not apply an event whose seq is not above the
 *                     document's seqField (the guard joins the same atomic update);
 *   ledger            string, default "<coll>_inbox": the ledger collection; "" disables it;
 *   ledgerTtlSeconds  int >= 1, default 604800 (7 days): expiry of ledger entries.
 * Field names must be non-empty, distinct, not "_id", without '.' and not starting with '$'.
 * Unknown options are refused (OUTBOX_ERROR_INVALID_ARGUMENT), and so are a NULL pool and a
 * NULL or empty db or coll. `db` and `coll` are copied. No I/O happens here.
 * Free with outbox_inbox_destroy(). */
OUTBOX_API outbox_inbox_t *outbox_inbox_new(mongoc_client_pool_t *pool, const char *db,
                                            const char *coll, const bson_t *opts,
                                            bson_error_t *error);

/* Frees the handle. NULL is allowed. No call on the handle may be running. */
OUTBOX_API void outbox_inbox_destroy(outbox_inbox_t *inbox);

/* Creates the ledger's TTL index (name "outbox_inbox_ttl", key {at: 1}, expireAfterSeconds
 * ledgerTtlSeconds). Idempotent; a no-op when the ledger is disabled. Thread-safe. */
OUTBOX_API bool outbox_inbox_ensure_indexes(outbox_inbox_t *inbox, bson_error_t *error);

/* Applies `update` to the state document `doc_id` unless event `event_id` was processed
 * before, and records the event as processed in the same atomic update.
 *
 * `doc_id` is an ObjectId, string (valid UTF-8), int32, int64 or binary; `event_id` a
 * non-empty UTF-8 string of at most 256 bytes (the CloudEvents `id`); `seq` the event's
 * per-entity seq, or 0 when not tracked. `update` (may be NULL: only record the event) is made
 * of update operators; it may not touch _id or the inbox's fields
 * (OUTBOX_ERROR_RESERVED_FIELD); other shapes, and invalid UTF-8 in keys or strings, are
 * OUTBOX_ERROR_INVALID_ARGUMENT; it may use $push and $max on other fields (the library merges
 * its own). `doc_id`, `event_id` and `update` are borrowed for the call only. `result` (may be
 * NULL) tells what happened. Returns false on error: then the event was not applied (but see
 * network errors above); errors in the arguments are found before any I/O. Thread-safe. */
OUTBOX_API bool outbox_inbox_apply(outbox_inbox_t *inbox, const bson_value_t *doc_id,
                                   const char *event_id, int64_t seq, const bson_t *update,
                                   outbox_inbox_result_t *result, bson_error_t *error);

/* Sets *seen to whether `event_id` was applied to state document `doc_id`: present in its
 * window or in the ledger. Arguments are checked as by outbox_inbox_apply() and borrowed for
 * the call; *seen is false when the call fails. Read-only. Thread-safe. */
OUTBOX_API bool outbox_inbox_seen(outbox_inbox_t *inbox, const bson_value_t *doc_id,
                                  const char *event_id, bool *seen, bson_error_t *error);

OUTBOX_END_DECLS

#endif /* OUTBOX_INBOX_H */
