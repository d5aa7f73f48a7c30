/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Balancing: what one member of a group does on one tick, given what it just read of the
 * group's leases and members. A pure function (no I/O, no clock: "live" was judged by the
 * server's $$NOW when the snapshot was read), unit-tested on its own; the lease tick
 * (tick.c) carries the plan out.
 *
 * The target is an equal share: with M live members, hi = ceil(P / M) and lo = floor(P / M)
 * leases each. A member takes free or expired leases (those reserved for it first) up to hi.
 * When none are left and it owns fewer than hi, it asks the most loaded member for a handoff
 * of half the difference, but only when that member owns at least two more than it does
 * (anti-flap: a one-lease difference is balanced, so nothing moves back and forth). A live
 * lease is never taken: the owner hands it over (handoff), or it expires.
 *
 * A malformed lease (its epoch is not a number in range: written by someone else) is neither
 * taken nor asked for: the lease thread repairs it once it is free or expired.
 *
 * Live members are the unexpired member documents, minus members whose every lease has
 * expired (dead or paused: they must not hold back the survivors' share for another tick),
 * plus this member when it is eligible (connected to the broker).
 */
#ifndef RELAY_BALANCE_H
#define RELAY_BALANCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/partition.h"

/* One lease as read (borrowed strings; NULL when the field is null). */
typedef struct {
   const char *owner;
   int64_t epoch;
   bool live; /* expiresAt after the server's $$NOW */
   const char *handoff_to;
   const char *reserved_for;
   bool reservation_live; /* reservedUntil after the server's $$NOW */
   bool malformed; /* its epoch is not a number in [0, RELAY_EPOCH_MAX): nobody can take it */
} relay_lease_view_t;

/* Epochs count changes of owner; one above this (2^53, where doubles stop counting by one)
 * is malformed: the server's $add would soon leave int64 and give a double. */
#define RELAY_EPOCH_MAX (INT64_C(1) << 53)

typedef struct {
   int n;                            /* partitions */
   const char *me;                   /* this member's instance id */
   const relay_lease_view_t *leases; /* n, indexed by partition */
   const char *const *members; /* ids of the unexpired member documents (me included or not) */
   size_t n_members;
   bool eligible;   /* this member may own partitions now */
   uint32_t rotate; /* where this member starts looking for free leases (spreads races) */
} relay_balance_input_t;

typedef struct {
   int acquire[RELAY_PARTITIONS_MAX]; /* try to take these (free, expired or reserved for me) */
   int n_acquire;
   int handoff[RELAY_PARTITIONS_MAX]; /* ask their owner to hand these over */
   int n_handoff;
   int members; /* M used for the targets */
   int hi, lo;  /* the targets */
   int owned;   /* leases this member owns in the snapshot */
} relay_balance_plan_t;

/* Fills @plan for @in. */
void relay_balance_plan(const relay_balance_input_t *in, relay_balance_plan_t *plan);

#endif /* RELAY_BALANCE_H */
