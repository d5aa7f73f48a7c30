/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease store over MongoDB: the lease thread's own mongoc client, the group's
 * collections, and the operations table (lease-ops.h) the tick is handed, each a call of
 * lease-store.h, sharding.h or skew.h. Created by relay_lease_new() and used by the lease
 * thread alone.
 */
#ifndef RELAY_LEASE_MONGO_H
#define RELAY_LEASE_MONGO_H

#include "config/config.h"
#include "group/lease-ops.h"

typedef struct relay_lease_mongo_t relay_lease_mongo_t;

/* The operations; their @store is a relay_lease_mongo_t. */
extern const relay_lease_store_ops_t relay_lease_mongo_ops;

/* Connects for @cfg (borrowed, like @me and @settings, for the store's lifetime). NULL with
 * @error on a bad URI. */
relay_lease_mongo_t *relay_lease_mongo_new(const relay_config_t *cfg, const char *me,
                                           const char *settings, bson_error_t *error);

/* NULL-safe. */
void relay_lease_mongo_destroy(relay_lease_mongo_t *m);

#endif /* RELAY_LEASE_MONGO_H */
