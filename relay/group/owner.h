/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner's state (relay_group_t) and what it is handed (relay_group_ops_t), below
 * both of its files: group.c (lease events, intents, checkpoints: group.h) and gate.c (the
 * gate, parking, drains: gate.h). Main thread only; relay.c owns the struct.
 */
#ifndef RELAY_GROUP_OWNER_H
#define RELAY_GROUP_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"
#include "group/lease.h"
#include "group/partition.h"
#include "http/metrics.h"
#include "store/store.h"
#include "stream/table.h"

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

/* What the partition owner needs of the lease thread and the server (relay.c: group/lease.h
 * and a probe on the state collection). Main thread calls. */
typedef struct {
   /* The lease thread's next event (the caller frees it), or NULL. */
   relay_lease_event_t *(*pop)(void *ctx);
   /* Whether @part is inside its lease deadline now. */
   bool (*may_publish)(void *ctx, int part);
   /* @part (at @epoch) is drained: hand it over. */
   void (*drained)(void *ctx, int part, int64_t epoch);
   /* Whether this member may own partitions (it can reach the broker). */
   void (*set_eligible)(void *ctx, bool eligible);
   /* Save @token in the leases of the partitions in @valid (at @epochs). */
   void (*checkpoint)(void *ctx, const bson_t *token, const relay_partset_t *valid,
                      const int64_t *epochs);
   /* Whether the server's $toHashedIndexKey hashes like the relay: 1 yes (filter there), -1
    * no (filter here), 0 cannot tell yet (ask again later). */
   int (*probe)(void *ctx);
} relay_group_ops_t;

typedef struct relay_group_t {
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
} relay_group_t;

/* Whether changes and documents of partition @p are taken (owned and not draining): the one
 * place this rule is written. */
static inline bool
relay_group_takes(const relay_group_t *g, int p)
{
   const relay_part_t *part = &g->parts[p];
   return part->owned && !part->draining;
}

#endif /* RELAY_GROUP_OWNER_H */
