/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The main thread's side of a group: which partitions this member may publish, and what it
 * does when that changes. The lease thread (lease.h) decides ownership and says so in
 * events; here they turn into stream and sweep changes and into the table: an acquired
 * partition is swept and its entities are read from their documents until that sweep is
 * behind the stream ("fresh"); a lost or handed-over partition's queued events are dropped
 * (they stay pending in their documents for the new owner), its acknowledged ones are still
 * cleared. Before every publish the entity's partition must be owned, not draining, and
 * inside its lease deadline (the gate); otherwise the entity is parked until it is.
 *
 * Checkpoints: the table's checkpoint candidate (a stream position) is valid for partition p
 * only once the FIFO passed p's acquisition marker (the position pushed when its sweep
 * began: everything swept hangs on it), so a token saved in p's lease never claims events
 * of p that were not done.
 *
 * Main thread only (relay_group_t lives in relay_t).
 */
#ifndef RELAY_GROUP_H
#define RELAY_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "group/lease.h"
#include "group/partition.h"
#include "store/store.h"
#include "stream/table.h"

typedef struct relay_t relay_t;

typedef struct {
   bool owned;    /* acquired, not lost, not handed over */
   bool draining; /* a handoff was asked: publish nothing new, finish what is in flight */
   int64_t epoch;
   int64_t drain_started_ms;
   uint64_t marker_seq; /* the token is valid once the checkpoint's seq passes this */
   bool fresh;          /* entities not in the table are read from their documents */
   bool sweep_done;     /* its sweep ended at fresh_until */
   relay_ts_t fresh_until;
   bson_t *token;          /* the checkpoint it came with, until the stream starts */
   relay_entity_t *parked; /* entities waiting for the gate (linked by pnext) */
} relay_part_t;

typedef struct {
   relay_lease_t *lease;
   char instance_id[300]; /* "<hostname>/<pid>/<8 hex>" */
   char suffix[9];        /* the 8 hex: the default MQTT client id is "<name>-<suffix>" */
   char *client_id;       /* the MQTT client id this process uses */
   int n;                 /* partitions */
   relay_part_t *parts;
   relay_partset_t active;   /* owned and not draining: what the stream carries */
   relay_partset_t streamed; /* what the open stream's server-side filter selects */
   relay_partset_t sweep_wanted;
   int probe; /* 0 not yet, 1 the server hashes like us, -1 it does not */
   int64_t probe_retry_at_ms;
   int probe_backoff_ms;
   int n_draining;
   int64_t drain_check_ms;
   int n_fresh_done;     /* fresh partitions whose sweep ended ... */
   relay_ts_t fresh_min; /* ... the earliest of their fresh_until */
   bool fatal;
   int64_t mqtt_down_since_ms;
   bool eligible;
} relay_group_t;

/* Sets the group up: the instance id and the MQTT client id (before the MQTT client is
 * created). */
bool relay_group_init(relay_t *r, bson_error_t *error);

/* Starts the lease thread (after the MQTT client exists: it wakes the main loop through
 * it). False with @error on a bad URI. */
bool relay_group_start(relay_t *r, bson_error_t *error);
void relay_group_cleanup(relay_t *r);

/* One turn of the main loop: lease events, stream changes, drains, the parked, health. */
void relay_group_step(relay_t *r, int64_t now);

/* The partition of @id (the relay's own hash of it). */
int relay_group_part_of(const relay_t *r, const bson_value_t *id);

/* Whether changes and documents of partition @p are taken (owned and not draining). */
bool relay_group_takes(const relay_t *r, int p);

/* Whether an entity of @p not yet in the table must be read from its document. */
bool relay_group_fresh(const relay_t *r, int p);

/* The stream reached @ts (a change's clusterTime), or caught up (@ts NULL): partitions whose
 * sweep ended before it are not fresh any more. */
void relay_group_stream_at(relay_t *r, const relay_ts_t *ts);

/* Hands the checkpoint candidate @token to the lease thread for the partitions it is valid
 * for. */
void relay_group_checkpoint(relay_t *r, const bson_t *token);

/* The stream starts at marker @marker for @parts: their tokens become valid past it. */
void relay_group_valid_after(relay_t *r, const relay_partset_t *parts, const relay_pos_t *marker);

/* A sweep of @parts began at marker @marker: relay_group_valid_after(), and they are fresh
 * until the stream passes the time the sweep ends (relay_group_sweep_ended()). */
void relay_group_sweep_began(relay_t *r, const relay_partset_t *parts, const relay_pos_t *marker);

/* The sweep of @parts ended; the server's time then was @ts. */
void relay_group_sweep_ended(relay_t *r, const relay_partset_t *parts, relay_ts_t ts);

/* SIGTERM, after the drain: the final checkpoint, then every lease released. */
void relay_group_shutdown(relay_t *r);

#endif /* RELAY_GROUP_H */
