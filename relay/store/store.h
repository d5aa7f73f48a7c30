/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's MongoDB round-trips other than the change stream and the group's documents
 * (group/lease-store.h): the pending index, the cluster time, the sweep and reading one
 * entity. Main thread only.
 */
#ifndef RELAY_STORE_H
#define RELAY_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "base/partition.h"
#include "base/ts.h"
#include "config/config.h"
#include "store/concerns.h"
#include "stream/reader.h" /* RELAY_READ_BATCH_SIZE */

/* Replies are bounded (see RELAY_READ_BATCH_SIZE in stream/reader.h). A sweep document may hold
 * maxPendingEvents events (~400 KiB at 1000 events of 200 B), so sweep replies are sized in bytes:
 * the first reply has RELAY_SWEEP_FIRST_BATCH documents, later ones as many as fit
 * RELAY_SWEEP_REPLY_BYTES at the size of the last document read, at most RELAY_READ_BATCH_SIZE.
 * Either way a reply carries more events than the in-flight window, so throughput does not depend
 * on these. */
#define RELAY_SWEEP_FIRST_BATCH 16
#define RELAY_SWEEP_REPLY_BYTES (1024 * 1024)

/* Creates a client for cfg->mongodb_uri with error API 2 and @appname, and the concerns of
 * the relay's data operations (concerns.h: RELAY_CONCERNS_DATA), whatever the URI says. Unless
 * the URI says otherwise, server selection gives up after 5 s instead of mongoc's 30 s: the
 * relay retries anyway, and a shorter wait keeps shutdown and the main loop responsive while
 * MongoDB is down. Returns NULL and fills @error on a bad URI. */
mongoc_client_t *relay_store_client_new(const relay_config_t *cfg, const char *appname,
                                        bson_error_t *error);

/* The same with the concerns of @role (the lease thread: RELAY_CONCERNS_LEASES). */
mongoc_client_t *relay_store_client_new_for(const relay_config_t *cfg, const char *appname,
                                            relay_concerns_role_t role, bson_error_t *error);

/* The change stream's client: relay_store_client_new(), and unless the URI sets
 * socketTimeoutMS, RELAY_STREAM_SOCKET_TIMEOUT_MS instead of mongoc's 300 s. A getMore waits at
 * most maxAwaitTimeMS (stream/reader.c) on the server, so a reply that does not come in
 * that long is a connection gone dead without a reset (a blackholed network, a hung
 * server): the timeout makes it a network error, which the stream resumes from, instead of
 * five minutes of nothing published (FINDINGS.md F20). */
#define RELAY_STREAM_SOCKET_TIMEOUT_MS 30000
mongoc_client_t *relay_store_stream_client_new(const relay_config_t *cfg, const char *appname,
                                               bson_error_t *error);

/* The same as a pool, for code that uses liboutbox (which works on pools): outbox-admin
 * (RELAY_CONCERNS_ADMIN) and the scanner (RELAY_CONCERNS_DATA). */
mongoc_client_pool_t *relay_store_pool_new(const relay_config_t *cfg, const char *appname,
                                           relay_concerns_role_t role, bson_error_t *error);

/* Creates the "outbox_pending" partial index ({<eventSeq>: 1} where "<events>.0" exists)
 * that the sweep uses, and "outbox_dead_letters" (the same where "<dead letters>.0" exists),
 * exactly as liboutbox's outbox_collection_ensure_indexes() does, so whichever runs first
 * wins and the other is a no-op. */
bool relay_store_ensure_index(mongoc_collection_t *coll, const relay_config_t *cfg,
                              bson_error_t *error);

/* The server's current operation time (from a ping): a point no later than any write that
 * starts after this call returns. */
bool relay_store_operation_time(mongoc_client_t *client, relay_ts_t *ts, bson_error_t *error);

/* Reads the bookkeeping fields of one entity into @doc (initialised by the call), from the
 * majority snapshot once it holds every write up to @after (NULL: the snapshot as it is; see
 * relay_concerns_append_document_read()), and the snapshot's time into @seen (the reply's
 * operationTime; {0, 0} if it has none). Returns false with error->code 0 if the document
 * does not exist; relay_concerns_read_timed_out(@error): the snapshot did not get there
 * within relay_concerns_read_wait_ms(), retry later. */
bool relay_store_read_entity(mongoc_collection_t *coll, const relay_config_t *cfg,
                             const bson_value_t *id, const relay_ts_t *after, bson_t *doc,
                             relay_ts_t *seen, bson_error_t *error);

/* Waits (at most relay_concerns_read_wait_ms()) until @coll's majority snapshot holds every
 * write up to @after: what a sweep does first, so its cursor, which reads that snapshot,
 * needs no maxTimeMS (that would bound the whole cursor's server time, which a long sweep
 * may need). False with @error (relay_concerns_read_timed_out(): try again later). */
bool relay_store_wait_majority(mongoc_collection_t *coll, const relay_config_t *cfg,
                               const relay_ts_t *after, bson_error_t *error);

/* Opens the sweep: every document with pending events, through the pending index when it
 * exists, read from the majority snapshot (as it is now). Never NULL; check
 * mongoc_cursor_error(). */
mongoc_cursor_t *relay_store_sweep_cursor(mongoc_collection_t *coll, const relay_config_t *cfg,
                                          bool hint);

/* The same, from the majority snapshot once it holds every write up to @after (NULL: as it
 * is; relay_store_wait_majority() first, so it does not wait), for the entities in
 * partitions @parts of @n only (partition.h: by their hashed _id, computed by the server).
 * @parts NULL: every entity. */
mongoc_cursor_t *relay_store_sweep_cursor_in(mongoc_collection_t *coll, const relay_config_t *cfg,
                                             bool hint, const relay_ts_t *after,
                                             const relay_partset_t *parts, int n);

/* Sizes the sweep cursor's next reply after reading @doc (see RELAY_SWEEP_REPLY_BYTES). */
void relay_store_sweep_pace(mongoc_cursor_t *cursor, const bson_t *doc);

#endif /* RELAY_STORE_H */
