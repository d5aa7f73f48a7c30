/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Refusing to run a group whose lease or state collection is sharded (issue 26, "Sharded
 * clusters"). A group keeps every lease, member and the group document in one collection so
 * that one primary judges every expiry with one clock ($$NOW) and one read sees the whole
 * group at once; sharded, its documents would live on several shards with several primaries
 * and clocks, and the fencing argued in lease-store.h would no longer hold. The watched
 * collections may be sharded: the relay's writes to them name the document by an exact _id,
 * which mongos 6.0 accepts for an updateOne on any shard key (relay/README.md).
 * No state; called by the lease thread before it sets the group up.
 */
#ifndef RELAY_SHARDING_H
#define RELAY_SHARDING_H

#include <stdbool.h>
#include <stddef.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

typedef enum {
   RELAY_SHARDING_OK = 0,  /* not mongos, or none of the collections is sharded */
   RELAY_SHARDING_RETRY,   /* the server could not be asked: @error says why; ask again */
   RELAY_SHARDING_REFUSE,  /* one of them is sharded: @error says which and what to do */
   RELAY_SHARDING_UNKNOWN, /* mongos refused to show config.collections (13 Unauthorized:
                            * the relay's user may not read the config database) */
} relay_sharding_t;

/* Whether @hello (a hello or isMaster reply) comes from mongos ({msg: "isdbgrid"}). */
bool relay_sharding_is_mongos(const bson_t *hello);

/* Whether @entry (a document of config.collections) describes a sharded collection that
 * still exists: a "key" document, and not {dropped: true} (servers before 5.0 kept dropped
 * collections there). On true, @error (RELAY_ERROR_CONFIG) names the collection, its key and
 * @role ("state" or "lease"). */
bool relay_sharding_entry_is_sharded(const bson_t *entry, const char *role, bson_error_t *error);

/* Asks the server behind @client whether it is mongos and, if so, whether the state
 * collection @state or the lease collection @lease (NULL: the state collection) of @db is
 * sharded, in config.collections. A server that does not know "hello" is no mongos of a
 * version the relay supports: OK. @error must not be NULL. */
relay_sharding_t relay_sharding_check_group(mongoc_client_t *client, const char *db,
                                            const char *state, const char *lease,
                                            bson_error_t *error);

#endif /* RELAY_SHARDING_H */
