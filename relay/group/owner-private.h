/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner's state (relay_group_t, opaque outside relay/group/: owner.h), below
 * both of its files: group.c (lease events, intents, checkpoints, the queries: group.h,
 * owner.h) and gate.c (the gate, parking, drains: gate.h). Included by those two files and
 * nothing else. Main thread only; relay.c owns the handle (relay_group_new()).
 */
#ifndef RELAY_GROUP_OWNER_PRIVATE_H
#define RELAY_GROUP_OWNER_PRIVATE_H

#include "group/owner.h"

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

struct relay_group_t {
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   relay_table_t *table;
   const relay_group_ops_t *ops;
   void *ctx;
   char instance_id[300]; /* "<hostname>/<pid>/<8 hex>" */
   char suffix[9];        /* the 8 hex: the default MQTT client id is "<name>-<suffix>" */
   char *client_id;       /* the MQTT client id this process uses */
   int n;                 /* partitions */
   relay_part_t *parts;
   relay_partset_t active;   /* owned and not draining: what the stream carries */
   relay_partset_t streamed; /* what the open stream's server-side filter selects */
   int probe;                /* 0 not yet, 1 the server hashes like us, -1 it does not */
   int64_t probe_retry_at_ms;
   int probe_backoff_ms;
   int n_draining;
   int64_t drain_check_ms;
   int n_fresh_done;     /* fresh partitions whose sweep ended ... */
   relay_ts_t fresh_min; /* ... the earliest of their fresh_until */
   int64_t mqtt_down_since_ms;
   bool eligible;
};

#endif /* RELAY_GROUP_OWNER_PRIVATE_H */
