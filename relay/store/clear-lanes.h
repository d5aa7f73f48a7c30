/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Clear lanes: the clearer's bulk writes to different namespaces in flight at once. MongoDB
 * 6.0 has no bulk write across namespaces, so a batch whose clears span many tenants'
 * collections is one round trip per namespace; done one after the other they made the
 * clears, not publishing, the limit with a thousand namespaces (tests/bench/README.md,
 * "Namespaces"). The clearer thread is lane 0; the other lanes are threads of their own, each
 * with its own client and collection handles, started with the clearer and idle between
 * batches.
 *
 * Thread safety: relay_clear_lanes_run() is for the clearer thread only; the group function
 * runs on any lane and must only touch its group (and what it locks itself).
 */
#ifndef RELAY_STORE_CLEAR_LANES_H
#define RELAY_STORE_CLEAR_LANES_H

#include <stddef.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "stream/namespaces.h"

/* What one lane writes through: its client, its handles by namespace index, its archive. */
typedef struct {
   mongoc_client_t *client;
   relay_ns_handles_t colls;
   mongoc_collection_t *archive; /* NULL without --archive-collection */
} relay_clear_lane_t;

typedef struct relay_clear_lanes_t relay_clear_lanes_t;

/* Runs group @g of the batch on @lane. */
typedef void (*relay_clear_group_fn)(void *ctx, relay_clear_lane_t *lane, size_t g);

/* Starts @n_extra lanes beside the caller's (fewer when a client or thread cannot be made:
 * then the batch just takes longer). @fn(@ctx) is called for each group. */
relay_clear_lanes_t *relay_clear_lanes_new(const relay_config_t *cfg, int n_extra,
                                           relay_clear_group_fn fn, void *ctx);

/* Runs groups 0..@n-1 on @lane0 (the caller's) and the extra lanes; returns when all are
 * done. */
void relay_clear_lanes_run(relay_clear_lanes_t *ls, relay_clear_lane_t *lane0, size_t n);

/* Frees a lane's handles and client (for lane 0 too). */
void relay_clear_lane_cleanup(relay_clear_lane_t *lane);

/* Stops and joins the lanes; NULL-safe. */
void relay_clear_lanes_destroy(relay_clear_lanes_t *ls);

#endif /* RELAY_STORE_CLEAR_LANES_H */
