/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The group's documents in MongoDB and every write to them. Only the lease thread calls
 * these (through the operations of lease-mongo.c, which the tick is handed), with its own
 * client. The stored schema (outbox-admin reads it too):
 *
 *   state collection   {_id: "<name>", partitions: Int32 P, createdAt: Date}
 *   lease collection   {_id: {relay: "<name>", partition: Int32 p}, partitions: Int32 P,
 *                       owner: String|null, epoch: Int64, expiresAt: Date|null,
 *                       acquiredAt: Date, renewedAt: Date, token: Document|null,
 *                       tokenAt: Date, handoff: null|{to: String, at: Date},
 *                       reservedFor: String|null, reservedUntil: Date|null}
 *                      {_id: {relay: "<name>", member: "<instance id>"}, host: String,
 *                       pid: Int32, startedAt: Date, expiresAt: Date, owned: Int32,
 *                       version: String}
 *
 * Every expiry is written and judged by the server ($$NOW in pipeline updates and in the
 * snapshot's $project), never by a relay's clock. Every write made for a lease carries
 * {owner: me, epoch: E} in its filter (the fencing token): a relay that lost the lease, even
 * one paused for minutes, changes nothing with it.
 */
#ifndef RELAY_LEASE_STORE_H
#define RELAY_LEASE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "group/balance.h"
#include "base/partition.h"

typedef struct {
   mongoc_collection_t *state;  /* the group document */
   mongoc_collection_t *leases; /* leases and members */
   mongoc_database_t *db;       /* their database (a group found elsewhere in it) */
   const char *name;            /* the group: --name */
   const char *me;              /* this process's instance id */
   int partitions;
   int64_t ttl_ms;
   /* What every member of the group must share, in one string written in its member
    * document ("collections=a,b state-collection=s lease-collection=l lease-ttl-ms=t"):
    * members that differ publish some events twice or never (issue 29). */
   const char *settings;
} relay_lease_store_t;

typedef enum {
   RELAY_GROUP_OK = 0,
   RELAY_GROUP_RETRY,    /* a server error: try again later (@error says what) */
   RELAY_GROUP_MISMATCH, /* the group has another partition count, or lives elsewhere */
} relay_group_init_t;

/* Creates or checks the group document (which records the lease collection; a group of
 * this name found in another collection of the database is a MISMATCH), migrates an old checkpoint
 * document
 * ({_id: name, token} without partitions: its token goes into every lease), and makes sure
 * all P lease documents exist. A group document created here starts a new group: the
 * leases' old tokens are cleared (epochs keep counting), so deleting the state document still
 * means "sweep". Logs a migration or a new group once. */
relay_group_init_t relay_lease_store_init(const relay_lease_store_t *st, bson_error_t *error);

/* The group document (group-doc.c), for relay_lease_store_init(): creates it (RETRY when
 * another member created it first) and checks the one found (@doc): the same partition
 * count and lease collection, or a migration of an old checkpoint document. */
relay_group_init_t relay_group_doc_create(const relay_lease_store_t *st, bson_error_t *error);
relay_group_init_t relay_group_doc_check(const relay_lease_store_t *st, const bson_t *doc,
                                         bson_error_t *error);

/* Whether a group document of this name is in a collection of the database other than the
 * state collection (another --state-collection): MISMATCH with @error naming it, OK, or
 * RETRY. Such a group runs beside this one, and each publishes everything. Checked before a
 * group is created and, by the lease thread, every 10 ticks. */
relay_group_init_t relay_lease_store_find_elsewhere(const relay_lease_store_t *st,
                                                    bson_error_t *error);

/* The fence: {$or: [{_id: <lease p>, epoch: E}, ...], owner: me} for the partitions in
 * @parts with their epochs in @epochs. */
void relay_lease_store_fence(const relay_lease_store_t *st, const relay_partset_t *parts,
                             const int64_t *epochs, bson_t *filter);

/* Extends the leases in @parts (fenced by @epochs) to $$NOW + ttl; with @token, also stores
 * it as their checkpoint. */
bool relay_lease_store_renew(const relay_lease_store_t *st, const relay_partset_t *parts,
                             const int64_t *epochs, const bson_t *token, bson_error_t *error);

/* Stores @token as the checkpoint of the leases in @parts (fenced), nothing else. */
bool relay_lease_store_checkpoint(const relay_lease_store_t *st, const relay_partset_t *parts,
                                  const int64_t *epochs, const bson_t *token, bson_error_t *error);

/* Takes the free or expired leases among @parts that are not reserved for another member
 * (epoch + 1, expiresAt $$NOW + ttl). Which were taken is learnt with
 * relay_lease_store_read_mine(). */
bool relay_lease_store_acquire(const relay_lease_store_t *st, const relay_partset_t *parts,
                               bson_error_t *error);

/* For the partitions in @parts that this member owns: their epoch and checkpoint token
 * (@tokens[p] set to a new bson_t or NULL; caller frees). @owned receives them. */
bool relay_lease_store_read_mine(const relay_lease_store_t *st, const relay_partset_t *parts,
                                 relay_partset_t *owned, int64_t *epochs, bson_t **tokens,
                                 bson_error_t *error);

/* Gives lease @p (fenced by @epoch) up: owner and expiry null, handoff cleared; when
 * @reserve_for is not NULL it is reserved for that member until $$NOW + ttl. */
bool relay_lease_store_release(const relay_lease_store_t *st, const relay_partset_t *parts,
                               const int64_t *epochs, const char *reserve_for, bson_error_t *error);

/* Asks the owner of lease @p (@owner at @epoch) to hand it to this member. */
bool relay_lease_store_request(const relay_lease_store_t *st, int p, const char *owner,
                               int64_t epoch, bson_error_t *error);

/* Upserts this member's document (expiresAt $$NOW + ttl, @owned leases). */
bool relay_lease_store_member(const relay_lease_store_t *st, const char *host, int pid, int owned,
                              bson_error_t *error);

/* Deletes this member's document. */
bool relay_lease_store_leave(const relay_lease_store_t *st, bson_error_t *error);

/* Deletes the documents of members that have been dead for ten lease times (a kill -9 leaves
 * its document behind). */
bool relay_lease_store_forget_dead(const relay_lease_store_t *st, bson_error_t *error);

/* Reads a lease's epoch at @it: true with @epoch set when it is an integer in
 * [0, RELAY_EPOCH_MAX) (int32, int64, or a double holding one); false for anything else
 * (a string, a fraction, NaN, out of range), which is never converted. */
bool relay_lease_epoch_read(const bson_iter_t *it, int64_t *epoch);

/* Repairs the malformed leases among @parts that are free or expired (epoch 0, no owner):
 * an owned one waits until it expires, since its owner can no longer renew it. */
bool relay_lease_store_repair(const relay_lease_store_t *st, const relay_partset_t *parts,
                              bson_error_t *error);

/* Appends {relay: name, partition: @p} under @key (a lease's _id). */
void relay_lease_store_append_id(bson_t *doc, const char *key, const relay_lease_store_t *st,
                                 int p);

/* updateMany(@filter, {$set} or [{$set}] of @set). */
bool relay_lease_store_update_many(mongoc_collection_t *coll, const bson_t *filter,
                                   const bson_t *set, bool pipeline, bson_error_t *error);

/* What a member sees of its group on one tick. Strings are owned by the snapshot. */
typedef struct {
   relay_lease_view_t leases[RELAY_PARTITIONS_MAX];
   int n_leases; /* lease documents found: fewer than P when some were deleted */
   char *member_ids[1024];
   char *member_settings[1024]; /* their settings (NULL: an older relay that writes none) */
   size_t n_members;
   char *strings[3 * RELAY_PARTITIONS_MAX];
   size_t n_strings;
} relay_group_snapshot_t;

/* Reads every lease and the live member documents of the group (liveness judged by the
 * server's $$NOW). @snap must be zeroed or cleaned up before. */
bool relay_lease_store_snapshot(const relay_lease_store_t *st, relay_group_snapshot_t *snap,
                                bson_error_t *error);

void relay_group_snapshot_cleanup(relay_group_snapshot_t *snap);

#endif /* RELAY_LEASE_STORE_H */
