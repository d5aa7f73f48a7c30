/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The clock skew the relay can see between itself and the MongoDB primaries that judge its
 * leases. Lease expiry is judged by the primary's clock ($$NOW), and the primary changes:
 * after a failover a lease expires early (or late) by the difference between the old and the
 * new primary's clocks. The rule (README.md, "Replica sets and sharded clusters"): the
 * largest skew between members must stay below --lease-margin-ms.
 *
 * How it is measured: each lease tick sends {hello: 1} to the primary and takes its
 * localTime minus this relay's wall clock (CLOCK_REALTIME) at the middle of the round trip,
 * timed on the monotonic clock; half the round trip is the uncertainty. Each member seen as
 * primary keeps its last skew for an hour; the spread is the largest difference between
 * them, the skew between members the relay has evidence of. A warning is logged when the
 * skew of the current primary (plus the uncertainty) or the spread reaches half the margin:
 * two members each within half the margin of this relay's clock differ by less than the
 * margin, so this is where the rule starts to be at risk.
 *
 * Thread safety: relay_skew_measure() from the lease thread only; relay_skew_render() from
 * any thread (it reads atomics).
 */
#ifndef RELAY_SKEW_H
#define RELAY_SKEW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>
#include <mongoc/mongoc.h>

#define RELAY_SKEW_MEMBERS 16

typedef struct {
   int64_t margin_ms;
   /* Lease thread only: the last skew of each member seen as primary. */
   struct {
      char *name;
      int64_t skew_us;
      int64_t at_ns; /* CLOCK_BOOTTIME */
   } seen[RELAY_SKEW_MEMBERS];
   bool warned;
   /* Read by any thread. */
   atomic_bool measured;
   _Atomic int64_t skew_us, spread_us, uncertainty_us;
} relay_skew_t;

void relay_skew_init(relay_skew_t *s, int64_t margin_ms);
void relay_skew_cleanup(relay_skew_t *s);

/* One measurement against the primary of @client. A failure is silent (the tick that follows
 * reports MongoDB down) and keeps the last values. */
void relay_skew_measure(relay_skew_t *s, mongoc_client_t *client);

/* The gauges: outbox_relay_server_clock_skew_seconds, ..._spread_seconds and
 * outbox_relay_lease_margin_seconds (nothing but the margin before a first measurement). */
void relay_skew_render(const relay_skew_t *s, bson_string_t *out);

#endif /* RELAY_SKEW_H */
