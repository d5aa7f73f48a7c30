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

typedef enum {
   RELAY_CONCERNS_DATA = 0, /* clears, dead-letter moves, archive inserts, sweeps, the stream */
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

/* What the URI asks for that the relay overrides for its own operations, as one sentence
 * appended to @out (nothing when it asks for nothing): logged once at start. */
void relay_concerns_overridden(const relay_config_t *cfg, bson_string_t *out);

/* The table --check-config prints: each kind of operation with its concerns. */
void relay_concerns_describe(const relay_config_t *cfg, bson_string_t *out);

#endif /* RELAY_CONCERNS_H */
