/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What the lease tick (tick.h) is handed, and what it hands back: the store of the group's
 * documents as a table of operations (lease-mongo.c fills it over MongoDB, the unit tests
 * with a fake in memory), and the events it posts for the main thread. Every operation that
 * writes a lease is fenced by {owner: me, epoch} in the store (lease-store.h): a member that
 * lost a lease changes nothing with it. The tick calls them from the lease thread only.
 */
#ifndef RELAY_LEASE_OPS_H
#define RELAY_LEASE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "base/partition.h"
#include "group/lease-store.h"
#include "group/skew.h"
#include "store/sharding.h"

typedef enum {
   RELAY_LEASE_ACQUIRED = 0, /* @part is ours at @epoch; @token: its checkpoint, or NULL */
   RELAY_LEASE_LOST,         /* @part is not ours any more (taken after it expired) */
   RELAY_LEASE_HANDOFF,      /* @part (at @epoch) is asked for: drain it, then drained() */
   RELAY_LEASE_FATAL,        /* @message: this process cannot join its group: stop with
                              * exit status @code */
} relay_lease_event_kind_t;

typedef struct relay_lease_event_t {
   relay_lease_event_kind_t kind;
   int part;
   int64_t epoch;
   int code;      /* FATAL: the <sysexits.h> exit status */
   bson_t *token; /* owned */
   char *message; /* owned */
   struct relay_lease_event_t *next;
} relay_lease_event_t;

/* Frees @ev (not the events after it); NULL-safe. */
void relay_lease_event_free(relay_lease_event_t *ev);

/* The group's documents, as lease-store.h describes them; @store is the table's own state.
 * Each returns false (or RETRY) and fills @error when the server could not be asked or
 * refused; @error's domain and code are the server's (the tick tells "not primary" and
 * "refused" apart by them). */
typedef struct {
   /* Creates or checks the group document and the P lease documents. */
   relay_group_init_t (*init)(void *store, bson_error_t *error);
   /* Whether the group's collections are unsharded (through mongos they must be). */
   relay_sharding_t (*check_sharding)(void *store, bson_error_t *error);
   /* A group of this name kept in another collection (MISMATCH), or not (OK), or RETRY. */
   relay_group_init_t (*find_elsewhere)(void *store, bson_error_t *error);
   /* Measures the clock skew of the members of the replica set into @skew (skew.h). */
   void (*measure_skew)(void *store, relay_skew_t *skew);
   /* Waits (bounded by the store's server selection timeout) until a primary is known. */
   bool (*wait_primary)(void *store, bson_error_t *error);
   bool (*renew)(void *store, const relay_partset_t *parts, const int64_t *epochs,
                 bson_error_t *error);
   bool (*checkpoint)(void *store, const relay_partset_t *parts, const int64_t *epochs,
                      const bson_t *token, bson_error_t *error);
   bool (*acquire)(void *store, const relay_partset_t *parts, bson_error_t *error);
   bool (*read_mine)(void *store, const relay_partset_t *parts, relay_partset_t *owned,
                     int64_t *epochs, bson_t **tokens, bson_error_t *error);
   bool (*release)(void *store, const relay_partset_t *parts, const int64_t *epochs,
                   const char *reserve_for, bson_error_t *error);
   bool (*request)(void *store, int p, const char *owner, int64_t epoch, bson_error_t *error);
   bool (*member)(void *store, const char *host, int pid, int owned, bson_error_t *error);
   bool (*leave)(void *store, bson_error_t *error);
   bool (*forget_dead)(void *store, bson_error_t *error);
   /* Reads every lease and the live members into @snap (cleaned up before). */
   bool (*snapshot)(void *store, relay_group_snapshot_t *snap, bson_error_t *error);
   /* Resets the malformed leases among @parts that are free or expired. */
   bool (*repair)(void *store, const relay_partset_t *parts, bson_error_t *error);
} relay_lease_store_ops_t;

/* Where the tick's events go: @first..@last (a chain through next, owned by the callee) are
 * queued for the main thread at once, which is then woken once. */
typedef void (*relay_lease_post_fn)(void *ctx, relay_lease_event_t *first,
                                    relay_lease_event_t *last);

#endif /* RELAY_LEASE_OPS_H */
