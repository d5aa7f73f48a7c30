/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's state, shared by relay.c (lifecycle and main loop), changes.c (applying the
 * change stream), sweep.c (the sweeps) and group/ (group.c, gate.c: the
 * partitions this member owns). Every field is touched by the main thread only, except @stop; the
 * reader (reader.c), the clearer (clearer.c), the lease thread (group/lease.c) and paho have their
 * own threads and talk to the main thread through queues.
 */
#ifndef RELAY_PRIVATE_H
#define RELAY_PRIVATE_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "store/clearer.h"
#include "store/scanner.h"
#include "config/config.h"
#include "group/group.h"
#include "http/metrics.h"
#include "mqtt/mqtt.h"
#include "mqtt/publish.h"
#include "publish/publisher.h"
#include "relay.h"
#include "store/store.h"
#include "store/writer.h"
#include "stream/reader.h"
#include "stream/table.h"
#include "util/util.h"

/* Documents already reported for an events field that is not an array (changes.c):
 * collection index + the BSON of {"": _id}. A writer that bypasses liboutbox should be named
 * once, not on every change of the document. Rare, so a short list. One per relay: two relays
 * in one process (the tests) each say it once. */
typedef struct {
   uint8_t **keys;
   size_t *lens;
   size_t n;
} relay_not_array_seen_t;

struct relay_t {
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   atomic_int stop;

   mongoc_client_t *client;
   mongoc_database_t *db;
   mongoc_collection_t **colls; /* cfg->n_collections */
   mongoc_collection_t *state;

   relay_mqtt_t *mqtt;
   relay_sender_t *sender;       /* events into messages (mqtt/publish.h) */
   relay_publisher_t *publisher; /* the window, admission, suspects (publish/publisher.h) */
   relay_table_t table;

   /* The partition owner: which partitions this member owns, the gate (group/group.h). */
   relay_group_t group;
   relay_lease_t *lease; /* the lease thread (group/lease.h) */
   bool fatal;           /* the group said this process cannot join: stop with exit_code */

   /* Change stream (read on the reader's thread, applied here). */
   relay_reader_t *reader;
   uint64_t stream_gen; /* changes from an earlier start are dropped */
   relay_change_t *held; /* a change whose document read failed: retried first */
   int64_t held_retry_at_ms;
   int held_backoff_ms;
   bool started;   /* the stream runs (this member owns partitions) */
   bool verifying; /* replaying history: read documents of entities not in the table */
   relay_ts_t verify_until;
   int64_t stream_lag_ms;
   bool stream_opened_once;
   relay_not_array_seen_t not_array_seen;

   /* Sweep (sweep.c). */
   bool sweeping;
   bool sweep_full, sweep_full_wanted;
   relay_partset_t sweep_wanted; /* partitions to sweep next (acquired while streaming) */
   relay_partset_t sweep_set;
   relay_ts_t sweep_start;
   mongoc_cursor_t *sweep_cursor;
   size_t sweep_coll;
   relay_pos_t *sweep_pos; /* the sweep's marker */
   bool sweep_hint;
   int64_t sweep_retry_at_ms;
   int sweep_backoff_ms;

   /* Writes. */
   relay_clearer_t *clearer;
   relay_scanner_t *scanner; /* NULL when --pending-scan-interval-ms is 0 */
   relay_writer_t *writer;   /* clears, dead letters, when a checkpoint is due (writer.h) */

   int exit_code; /* relay_run()'s result when it stops by itself (EX_OK otherwise) */
};

/* changes.c */
void relay_changes_step(relay_t *r, int64_t now);
void relay_changes_cleanup(relay_t *r);
/* Starts the stream for the owned partitions: after @token (the oldest of their
 * checkpoints), sweeping the partitions in @unswept (they came without one); without a
 * token, a full sweep first. */
void relay_changes_open(relay_t *r, const bson_t *token, const relay_partset_t *unswept);
/* Stops the stream (standby): queued changes and a running sweep are dropped. */
void relay_changes_close(relay_t *r);
/* Sets whether the stream replays history (relay_t.verifying) and with it the table's
 * keep_idle rule. */
void relay_changes_set_verifying(relay_t *r, bool verifying);
/* Below both buffer bounds: more may be read. */
bool relay_changes_has_room(const relay_t *r);
/* Takes the pending events of @doc (read from collection @coll) if its entity is in @parts
 * and owned. */
void relay_changes_sync_doc(relay_t *r, int coll, const relay_partset_t *parts, const bson_t *doc,
                            relay_pos_t *pos);

/* sweep.c */
void relay_sweep_request(relay_t *r, int part);
void relay_sweep_request_full(relay_t *r);
void relay_sweep_step(relay_t *r, int64_t now);
void relay_sweep_abort(relay_t *r);

#endif /* RELAY_PRIVATE_H */
