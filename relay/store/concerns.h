/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The write concern, read concern and read preference of the relay's own MongoDB operations,
 * whatever --mongodb-uri says (README.md, "Replica sets and sharded clusters", has the
 * table and the reasoning per write). Every client the relay makes gets them here, before it
 * exists: the main client (change stream, dead-letter moves, entity reads), the clearer
 * (archive inserts, bulk clears), the scanner (sweeps) and the lease thread (leases,
 * checkpoints, handoffs, the group document). outbox-admin keeps the URI's read preference
 * (it says when it read from a secondary) and the relay's write concern.
 *
 * No state: pure functions of the configuration, callable from any thread.
 */
#ifndef RELAY_CONCERNS_H
#define RELAY_CONCERNS_H

#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#include "config/config.h"
#include "util/error.h"

typedef enum {
   RELAY_CONCERNS_DATA = 0, /* clears, dead-letter moves, archive inserts, the stream; document
                               reads and sweeps add their own (append_document_read()) */
   RELAY_CONCERNS_LEASES,   /* leases, checkpoints, handoffs, the group document */
   RELAY_CONCERNS_ADMIN,    /* outbox-admin: the relay's writes, the URI's reads */
} relay_concerns_role_t;

/* How long a majority write of @role waits for the majority before it fails with 64
 * (WriteConcernFailed; the write itself stays where it was made). Leases: one renew period
 * (config-check.c makes two of them fit in ttl - margin, so a renewal stuck on an isolated
 * primary fails in time for one more attempt, on the new primary, before the gate closes).
 * Data writes and outbox-admin: one lease ttl (at least 5 s); a failure there only leaves
 * events pending, retried with the clears' backoff. */
int64_t relay_concerns_wtimeout_ms(const relay_config_t *cfg, relay_concerns_role_t role);

/* Sets @role's write concern, read concern and read preference on @uri (before a client or
 * pool is made from it), replacing what the URI said. */
void relay_concerns_apply(mongoc_uri_t *uri, const relay_config_t *cfg, relay_concerns_role_t role);

/* How long a document read (an entity read, the wait before a sweep) may wait for the
 * majority snapshot to reach its time (maxTimeMS): one lease renew period. Only a member
 * that cannot reach a majority (a cut-off primary before it steps down) makes it wait that
 * long; the read then fails with 50 (relay_concerns_read_timed_out()) and is retried later,
 * by then on the new primary. */
int64_t relay_concerns_read_wait_ms(const relay_config_t *cfg);

/* Appends to find options @opts the read concern of a document read: {level: "majority",
 * afterClusterTime: Timestamp(@after_t, @after_i)} (no afterClusterTime when both are 0),
 * and maxTimeMS @max_time_ms when it is above 0. A majority read never sees a write that
 * may be rolled back (a cut-off primary's majority snapshot stops where it lost the
 * majority); afterClusterTime makes it wait until that snapshot holds every write up to the
 * time the read must cover, so it misses nothing the stream will not deliver. */
void relay_concerns_append_document_read(bson_t *opts, uint32_t after_t, uint32_t after_i,
                                         int64_t max_time_ms);

/* relay_concerns_read_timed_out(), the classifier of the reads above, is in util/error.h
 * (stream/ uses it and does not include store/). */

/* What the URI asks for that the relay overrides for its own operations, as one sentence
 * appended to @out (nothing when it asks for nothing): logged once at start. */
void relay_concerns_overridden(const relay_config_t *cfg, bson_string_t *out);

/* The table --check-config prints: each kind of operation with its concerns. */
void relay_concerns_describe(const relay_config_t *cfg, bson_string_t *out);

#endif /* RELAY_CONCERNS_H */
