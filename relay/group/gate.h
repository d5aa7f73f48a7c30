/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The publish gate and what happens to a partition's events when it goes: parking entities
 * whose partition may not publish now, dropping a lost partition's queued events (they stay
 * pending in their documents for the new owner), draining a partition asked for by another
 * member (nothing new is published; the handoff waits for its in-flight acknowledgements and
 * their clears, at most one lease time), and the member's eligibility (connected to the
 * broker). Main thread only.
 */
#ifndef RELAY_GATE_H
#define RELAY_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "group/owner.h"
#include "stream/table.h"

/* Whether @e may be published now: its partition is owned, not draining, and inside its
 * lease deadline. When not, @e is parked (relay_gate_unpark() offers it again). */
bool relay_gate_admit(relay_group_t *g, relay_entity_t *e);

/* The in-flight event of @e ended without an acknowledgement. False when its partition is
 * gone or draining: the event was dropped (it stays pending for the new owner). True: it may
 * be queued again. */
bool relay_gate_keep_failed(relay_group_t *g, relay_entity_t *e);

/* Lease events: @p (at @epoch) was lost, or is asked for. True when the set of partitions
 * the stream should carry changed. */
bool relay_gate_lost(relay_group_t *g, int p, int64_t epoch);
bool relay_gate_drain(relay_group_t *g, int p, int64_t epoch, int64_t now);

/* Hands over the draining partitions that have nothing left in flight or to clear (or have
 * drained for a whole lease time). */
void relay_gate_finish_drains(relay_group_t *g, int64_t now);

/* Offers the parked entities of partitions whose gate is open again. */
void relay_gate_unpark(relay_group_t *g);

/* Tells the lease thread whether this member may own partitions: not while the broker
 * (@mqtt_connected now) has been unreachable for more than a lease time. */
void relay_gate_eligibility(relay_group_t *g, int64_t now, bool mqtt_connected);

#endif /* RELAY_GATE_H */
