/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest's state (ingest.h), shared by changes.c (the stream), change-events.c (what a change
 * carries), documents.c (documents into the table) and sweep.c (the sweeps) and nothing else.
 * Main thread only.
 */
#ifndef RELAY_STREAM_INGEST_PRIVATE_H
#define RELAY_STREAM_INGEST_PRIVATE_H

#include "stream/ingest.h"

/* Documents already reported for an events field that is not an array (documents.c):
 * collection index + the BSON of {"": _id}. A writer that bypasses liboutbox should be named
 * once, not on every change of the document. Rare, so a short list. One per relay: two relays
 * in one process (the tests) each say it once. */
typedef struct {
   uint8_t **keys;
   size_t *lens;
   size_t n;
} relay_not_array_seen_t;

struct relay_ingest_t {
   const relay_config_t *cfg;
   relay_namespaces_t *ns; /* the watched set: an entity's coll is its index there */
   relay_metrics_t *metrics;
   relay_table_t *table;
   const relay_ingest_owner_ops_t *owner; /* the partition owner */
   void *owner_ctx;
   const relay_ingest_ops_t *ops;
   void *ctx;

   /* The stream (changes.c). */
   uint64_t stream_gen;  /* changes from an earlier start are dropped */
   relay_change_t *held; /* a change whose document read failed: retried first */
   int64_t held_retry_at_ms;
   int held_backoff_ms;
   bool started;   /* the stream runs (this member owns partitions) */
   bool verifying; /* replaying history: read documents of entities not in the table */
   relay_ts_t verify_until;
   int64_t stream_lag_ms;
   relay_ts_t newest_change; /* the clusterTime of the newest change applied */
   relay_ts_t reads_seen;    /* the newest snapshot time of a document read (documents.c) */
   bool stream_opened_once;
   relay_not_array_seen_t not_array_seen;
   int indexed; /* namespaces below this index had their partial index created */

   /* The sweep (sweep.c). */
   bool sweeping;
   bool sweep_full, sweep_full_wanted;
   relay_partset_t sweep_wanted; /* partitions to sweep next (acquired while streaming) */
   relay_partset_t sweep_set;
   relay_ts_t sweep_start;
   void *sweep_cursor;
   size_t sweep_coll;
   relay_pos_t *sweep_pos; /* the sweep's marker */
   bool sweep_hint;
   const char *sweep_waited_db; /* the majority reached the start there (a name of ns) */
   int sweep_indexed;           /* the namespace whose index the sweep created, -1: none */
   int64_t sweep_retry_at_ms;
   int sweep_backoff_ms;
};

/* changes.c */
/* Frees the held change, ends a running sweep, forgets the documents reported. */
void relay_changes_cleanup(relay_ingest_t *in);
/* Sets verifying and with it the table's keep_idle rule. */
void relay_changes_set_verifying(relay_ingest_t *in, bool verifying);
/* Below both buffer bounds: more may be read. */
bool relay_changes_has_room(const relay_ingest_t *in);
/* Creates the sweeps' partial index on the namespaces below @upto not checked yet (the
 * known ones at each open; the sweep creates the others' when its hinted query fails). */
void relay_changes_ensure_indexes(relay_ingest_t *in, int upto);

/* ingest.c */
/* The metrics series of namespace @coll (its first matching pattern). */
int relay_ingest_label(relay_ingest_t *in, int coll);

/* documents.c */
/* Takes the pending events of @doc (read from collection @coll) if its entity is in @parts
 * and owned. */
void relay_docs_sync(relay_ingest_t *in, int coll, const relay_partset_t *parts, const bson_t *doc,
                     relay_pos_t *pos);
/* Reads entity @id of collection @coll in partition @part, as a majority holds it once that
 * holds every write up to @after (the change that asked for it; a sweep's start), and takes
 * its pending events. False if the read failed (a deleted document is not a failure). */
bool relay_docs_read(relay_ingest_t *in, int coll, int part, const bson_value_t *id,
                     const relay_ts_t *after, relay_pos_t *pos);
/* Offers the stored event @value (one element of an events array) or every element of the
 * array at @it to @e; events up to @replayed_upto may be replays. @from_document: read from
 * the document (a requeued event may be taken), not from a change. */
void relay_docs_offer_one(relay_ingest_t *in, relay_entity_t *e, const bson_value_t *value,
                          relay_pos_t *pos, int64_t replayed_upto, bool from_document);
void relay_docs_offer_array(relay_ingest_t *in, relay_entity_t *e, const bson_iter_t *it,
                            relay_pos_t *pos, int64_t replayed_upto, bool from_document);
/* Whether an entity taken now in partition @part must stay in the table until the running
 * sweep ends. */
bool relay_docs_hold_for_sweep(const relay_ingest_t *in, int part);

/* change-events.c */
/* Takes the new events of the change @doc (operation @op) of @e into the table. False when
 * the change does not carry them in a form understood, or skips seqs: then read the document. */
bool relay_change_events_take(relay_ingest_t *in, relay_entity_t *e, const char *op,
                              const bson_t *doc, relay_pos_t *pos);
/* The eventSeq the change @doc (operation @op) leaves in its document, or 0 if it does not
 * say. */
int64_t relay_change_events_seq(const relay_ingest_t *in, const char *op, const bson_t *doc);

/* sweep.c */
void relay_sweep_request(relay_ingest_t *in, int part);
void relay_sweep_request_full(relay_ingest_t *in);
void relay_sweep_step(relay_ingest_t *in, int64_t now);
void relay_sweep_abort(relay_ingest_t *in);

#endif /* RELAY_STREAM_INGEST_PRIVATE_H */
