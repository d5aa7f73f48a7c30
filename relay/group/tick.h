/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease table and one tick of it, without a thread: given the store's operations
 * (lease-ops.h), a clock and a place to post events, a tick renews what this member owns,
 * keeps its member document alive, reads the group, checks what it read (tick-checks.c),
 * reconciles, releases strays and balances (balance.h). lease.c runs it on its thread; the
 * unit tests (tests/relay/group/test-tick.c) run it with a fake store and a fake clock.
 *
 * Who owns what: the fields under "the caller's thread" are touched only by the one thread
 * that calls the functions below (the lease thread); the atomics are what any thread may read
 * (the gate: one deadline per partition; the gauges and the histogram).
 */
#ifndef RELAY_TICK_H
#define RELAY_TICK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "group/lease-ops.h"
#include "http/metrics.h"

/* Renew latency histogram upper bounds, seconds (and +Inf). */
#define RELAY_RENEW_BUCKETS 12

/* Renewals that fail because the server is no longer primary are retried in the same tick,
 * after a primary is known again, at most this many times (issue 34, F14). */
#define RELAY_RENEW_RETRIES 2

typedef struct {
   /* Handed in by relay_tick_init() (borrowed for the tick's lifetime), then read-only. */
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   const char *me;       /* instance id */
   const char *host;     /* for the member document */
   const char *settings; /* what members must share (relay_tick_settings()) */
   int pid;
   const relay_lease_store_ops_t *ops;
   void *store;
   int64_t (*clock)(void); /* CLOCK_BOOTTIME ns (relay_boot_ns; a fake in tests) */
   relay_lease_post_fn post;
   void *post_ctx;
   uint32_t rotate; /* where balancing starts looking (spreads races) */

   /* The caller's thread only. */
   bool ready;                 /* the group documents are set up */
   bool joined;                /* a tick read the group: members that differ are warned about */
   bool mismatch_logged;       /* a member that differs was named */
   char *output_mismatch_with; /* the member last named for other output settings, or NULL */
   bool elsewhere;             /* a group of this name lives in another collection too */
   bool stalled;               /* said once until partitions have owners again */
   int64_t unowned_since_ns;   /* clock since partitions have had no owner; 0: none */
   bool fatal;                 /* this process cannot join: no more ticks */
   bool down_logged;           /* MongoDB unreachable was said already */
   bool tick_failed;           /* something failed in the current tick */
   relay_partset_t owned;      /* the lease table: partitions owned ... */
   int64_t *epochs;            /* ... at these epochs */
   bool *handoff_posted;       /* HANDOFF posted for this epoch */
   bool *malformed_seen;       /* its lease was malformed at the last read (said once) */
   char **handoff_to;          /* who asked */
   relay_group_snapshot_t *snap;
   uint32_t ticks;
   bool holding; /* events held back until the tick's acquisitions are all posted */
   relay_lease_event_t *held_head, *held_tail;

   /* Atomics, read by any thread. */
   _Atomic int64_t *deadline;  /* clock ns; 0 = not owned: the gate */
   _Atomic int64_t *epoch_pub; /* epoch per owned partition (metrics), 0 = not owned */
   atomic_int members;
   atomic_bool refused;        /* MongoDB refuses our writes (13, authentication) */
   _Atomic int64_t last_ok_ns; /* clock of the last tick MongoDB answered */
   _Atomic uint64_t renew_buckets[RELAY_RENEW_BUCKETS + 1];
   _Atomic uint64_t renew_count, renew_sum_us;
   relay_skew_t skew; /* measured by the tick, rendered by any thread (skew.h) */
} relay_tick_t;

/* Sets @t up (zeroed first) for cfg->partitions partitions; the pointers are borrowed. */
void relay_tick_init(relay_tick_t *t, const relay_config_t *cfg, relay_metrics_t *metrics,
                     const char *me, const char *host, const char *settings, int pid,
                     const relay_lease_store_ops_t *ops, void *store, int64_t (*clock)(void),
                     relay_lease_post_fn post, void *post_ctx);
void relay_tick_cleanup(relay_tick_t *t);

/* One tick: set-up, renew, member document, read, checks, reconcile, balance. */
void relay_tick_run(relay_tick_t *t, bool eligible);

/* Stores @token in the leases of @valid that are still ours at @epochs (fenced). */
void relay_tick_write_checkpoint(relay_tick_t *t, const bson_t *token, const relay_partset_t *valid,
                                 const int64_t *epochs);

/* Gives @part (drained, at @epoch) to the member that asked for it; nothing when it was
 * lost meanwhile. */
void relay_tick_hand_over(relay_tick_t *t, int part, int64_t epoch);

/* Releases every lease and deletes the member document (SIGTERM). */
void relay_tick_leave(relay_tick_t *t);

/* The gate: @part is ours and @now is before its deadline. Any thread. */
bool relay_tick_may_publish(const relay_tick_t *t, int part, int64_t now);

/* What the members of a group must share, for the member document (bson_free): the group's
 * settings, then after RELAY_LEASE_OUTPUT_MARK the output settings (tick-checks.c). */
char *relay_tick_settings(const relay_config_t *cfg);

/* Between the group's settings and the output settings in relay_tick_settings(). */
#define RELAY_LEASE_OUTPUT_MARK " | output: "
typedef enum {
   RELAY_SETTINGS_SAME,
   RELAY_SETTINGS_OUTPUT_DIFFERS, /* may differ during a rolling change: flagged */
   RELAY_SETTINGS_GROUP_DIFFERS,  /* may never differ: refused */
} relay_settings_diff_t;
/* How two members' settings strings differ. Pure. */
relay_settings_diff_t relay_tick_settings_diff(const char *mine, const char *theirs);

/* The lease metrics (epochs, renew latency histogram, skew) in the Prometheus text format.
 * Any thread. */
void relay_tick_render_metrics(const relay_tick_t *t, bson_string_t *out);

#endif /* RELAY_TICK_H */
