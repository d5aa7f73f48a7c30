/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease store over MongoDB (lease-mongo.h): the lease thread's client and collections,
 * and the operations table the tick is handed. Each operation is one call of the store
 * (lease-store.h: fenced writes, the snapshot), the sharding check or the skew measurement.
 * Lease thread only.
 */
#include "group/lease-mongo.h"

#include "store/store.h"

struct relay_lease_mongo_t {
   mongoc_client_t *client;
   mongoc_collection_t *state, *leases;
   mongoc_database_t *db;
   const relay_config_t *cfg;
   relay_lease_store_t st;
};

relay_lease_mongo_t *
relay_lease_mongo_new(const relay_config_t *cfg, const char *me, const char *settings,
                      bson_error_t *error)
{
   relay_lease_mongo_t *m = bson_malloc0(sizeof *m);

   m->cfg = cfg;
   m->client = relay_store_client_new_for(cfg, "outbox-relay-lease", RELAY_CONCERNS_LEASES, error);
   if (!m->client) {
      bson_free(m);
      return NULL;
   }
   m->state = mongoc_client_get_collection(m->client, cfg->state_database, cfg->state_collection);
   m->leases = mongoc_client_get_collection(m->client, cfg->state_database,
                                            cfg->lease_collection ? cfg->lease_collection
                                                                  : cfg->state_collection);
   m->db = mongoc_client_get_database(m->client, cfg->state_database);
   m->st = (relay_lease_store_t){.state = m->state,
                                 .leases = m->leases,
                                 .db = m->db,
                                 .name = cfg->name,
                                 .me = me,
                                 .partitions = cfg->partitions,
                                 .ttl_ms = cfg->lease_ttl_ms,
                                 .settings = settings};
   return m;
}

void
relay_lease_mongo_destroy(relay_lease_mongo_t *m)
{
   if (!m) {
      return;
   }
   mongoc_collection_destroy(m->state);
   mongoc_database_destroy(m->db);
   mongoc_collection_destroy(m->leases);
   mongoc_client_destroy(m->client);
   bson_free(m);
}

#define ST(store) (&((relay_lease_mongo_t *)(store))->st)

static relay_group_init_t
init(void *store, bson_error_t *error)
{
   return relay_lease_store_init(ST(store), error);
}

static relay_sharding_t
check_sharding(void *store, bson_error_t *error)
{
   relay_lease_mongo_t *m = store;
   return relay_sharding_check_group(m->client, m->cfg->state_database, m->cfg->state_collection,
                                     m->cfg->lease_collection, error);
}

static relay_group_init_t
find_elsewhere(void *store, bson_error_t *error)
{
   return relay_lease_store_find_elsewhere(ST(store), error);
}

static void
measure_skew(void *store, relay_skew_t *skew)
{
   relay_skew_measure(skew, ((relay_lease_mongo_t *)store)->client);
}

/* Server selection for a write blocks until a primary is known (mongoc rescans the topology
 * after a "not primary" error), within serverSelectionTimeoutMS. */
static bool
wait_primary(void *store, bson_error_t *error)
{
   mongoc_server_description_t *sd =
      mongoc_client_select_server(((relay_lease_mongo_t *)store)->client, true, NULL, error);
   mongoc_server_description_destroy(sd);
   return sd != NULL;
}

static bool
renew(void *store, const relay_partset_t *parts, const int64_t *epochs, bson_error_t *error)
{
   return relay_lease_store_renew(ST(store), parts, epochs, NULL, error);
}

static bool
checkpoint(void *store, const relay_partset_t *parts, const int64_t *epochs, const bson_t *token,
           bson_error_t *error)
{
   return relay_lease_store_checkpoint(ST(store), parts, epochs, token, error);
}

static bool
acquire(void *store, const relay_partset_t *parts, bson_error_t *error)
{
   return relay_lease_store_acquire(ST(store), parts, error);
}

static bool
read_mine(void *store, const relay_partset_t *parts, relay_partset_t *owned, int64_t *epochs,
          bson_t **tokens, bson_error_t *error)
{
   return relay_lease_store_read_mine(ST(store), parts, owned, epochs, tokens, error);
}

static bool
release(void *store, const relay_partset_t *parts, const int64_t *epochs, const char *reserve_for,
        bson_error_t *error)
{
   return relay_lease_store_release(ST(store), parts, epochs, reserve_for, error);
}

static bool
request(void *store, int p, const char *owner, int64_t epoch, bson_error_t *error)
{
   return relay_lease_store_request(ST(store), p, owner, epoch, error);
}

static bool
member(void *store, const char *host, int pid, int owned, bson_error_t *error)
{
   return relay_lease_store_member(ST(store), host, pid, owned, error);
}

static bool
leave(void *store, bson_error_t *error)
{
   return relay_lease_store_leave(ST(store), error);
}

static bool
forget_dead(void *store, bson_error_t *error)
{
   return relay_lease_store_forget_dead(ST(store), error);
}

static bool
snapshot(void *store, relay_group_snapshot_t *snap, bson_error_t *error)
{
   return relay_lease_store_snapshot(ST(store), snap, error);
}

static bool
repair(void *store, const relay_partset_t *parts, bson_error_t *error)
{
   return relay_lease_store_repair(ST(store), parts, error);
}

const relay_lease_store_ops_t relay_lease_mongo_ops = {
   .init = init,
   .check_sharding = check_sharding,
   .find_elsewhere = find_elsewhere,
   .measure_skew = measure_skew,
   .wait_primary = wait_primary,
   .renew = renew,
   .checkpoint = checkpoint,
   .acquire = acquire,
   .read_mine = read_mine,
   .release = release,
   .request = request,
   .member = member,
   .leave = leave,
   .forget_dead = forget_dead,
   .snapshot = snapshot,
   .repair = repair,
};
