/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner as the other components see it: an opaque handle (relay_group_t; its
 * state is in owner-private.h, touched only by group.c and gate.c), what it is handed
 * (relay_group_ops_t), and its queries. The queries only read its state, so ingest and relay.c
 * may ask them at any time; what changes the state is in group.h and gate.h. Main thread only.
 */
#ifndef RELAY_GROUP_OWNER_H
#define RELAY_GROUP_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"
#include "group/lease.h"
#include "base/partition.h"
#include "http/metrics.h"
#include "store/store.h"
#include "stream/table.h"

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

typedef struct relay_group_t relay_group_t;

/* The queries (group.c). */

/* Whether changes and documents of partition @p are taken (owned and not draining): the one
 * place this rule is written. */
bool relay_group_takes(const relay_group_t *g, int p);

/* Whether an entity of @p not yet in the table must be read from its document. */
bool relay_group_fresh(const relay_group_t *g, int p);

/* The partition of @id (the relay's own hash of it). */
int relay_group_part_of(const relay_group_t *g, const bson_value_t *id);

/* How many partitions the group has (--partitions). */
int relay_group_partitions(const relay_group_t *g);

/* The partitions this member takes (owned and not draining): what the stream carries.
 * Valid until the partition owner's next step. */
const relay_partset_t *relay_group_active(const relay_group_t *g);

/* Whether the server hashes ids like the relay, so that it can select partitions itself
 * (change stream and sweep filters); false also while this is not known yet. */
bool relay_group_server_filters(const relay_group_t *g);

/* This process's member id ("<hostname>/<pid>/<8 hex>") and MQTT client id; valid as long as
 * @g. */
const char *relay_group_instance_id(const relay_group_t *g);
const char *relay_group_client_id(const relay_group_t *g);

#endif /* RELAY_GROUP_OWNER_H */
