/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease thread's state, shared by three files: lease.c (the loop, the queues, the gate),
 * tick.c (the group I/O of one tick) and tick-checks.c (what a tick checks in the group it
 * read). Fields under "lease thread only" are touched by that thread
 * alone; the others are guarded by @lock or are atomics, as marked.
 */
#ifndef RELAY_LEASE_PRIVATE_H
#define RELAY_LEASE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include <mongoc/mongoc.h>

#include "group/lease-store.h"
#include "group/lease.h"
#include "group/skew.h"

/* Renew latency histogram upper bounds, seconds (and +Inf). */
#define RELAY_RENEW_BUCKETS 12

struct relay_drained_t {
   int part;
   int64_t epoch;
};

struct relay_lease_t {
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   char *me;       /* instance id */
   char *host;     /* for the member document */
   char *settings; /* what members must share (lease-store.h) */
   int pid;
   void (*wake)(void *);
   void *wake_ctx;

   /* Lease thread only (set up before the thread starts). */
   mongoc_client_t *client;
   mongoc_collection_t *state_coll, *lease_coll;
   mongoc_database_t *db;
   relay_lease_store_t st;
   bool ready;               /* the group documents are set up */
   bool joined;              /* a tick read the group: members that differ are warned about */
   bool mismatch_logged;     /* a member that differs was named */
   bool elsewhere;           /* a group of this name lives in another collection too */
   bool stalled;             /* said once until partitions have owners again */
   int64_t unowned_since_ns; /* CLOCK_BOOTTIME since partitions have had no owner; 0: none */
   bool fatal;               /* this process cannot join: no more ticks */
   bool down_logged;         /* MongoDB unreachable was said already */
   bool tick_failed;         /* something failed in the current tick */
   relay_partset_t owned;    /* the lease table: partitions owned ... */
   int64_t *epochs;          /* ... at these epochs */
   bool *handoff_posted;     /* HANDOFF sent to the main thread for this epoch */
   bool *malformed_seen;     /* its lease was malformed at the last read (said once) */
   char **handoff_to;        /* who asked */
   int64_t *scratch_epochs;  /* a copy of the main thread's epochs for a checkpoint */
   relay_group_snapshot_t *snap;
   uint32_t rotate;
   uint32_t ticks;
   int64_t next_tick_ns; /* CLOCK_MONOTONIC; under @lock */
   int64_t last_ckpt_ns; /* CLOCK_MONOTONIC; under @lock */

   pthread_t thread;
   bool started;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   /* Under @lock: what the main thread asked for. */
   bool stop, shutdown_asked, shutdown_done;
   bool eligible;
   bson_t *ckpt_token;
   relay_partset_t ckpt_valid;
   int64_t *ckpt_epochs;
   struct relay_drained_t *drained;
   size_t n_drained;
   /* Under @lock: events for the main thread. */
   relay_lease_event_t *head, *tail;
   /* Lease thread only: events held back by _relay_lease_hold(). */
   bool holding;
   relay_lease_event_t *held_head, *held_tail;

   /* Atomics, read by any thread. */
   _Atomic int64_t *deadline;  /* CLOCK_BOOTTIME ns; 0 = not owned: the gate */
   _Atomic int64_t *epoch_pub; /* epoch per owned partition (metrics), 0 = not owned */
   atomic_int members;
   atomic_bool refused; /* MongoDB refuses our writes (13, authentication); lease thread writes */
   _Atomic int64_t last_ok_ns; /* CLOCK_BOOTTIME of the last tick MongoDB answered */
   _Atomic uint64_t renew_buckets[RELAY_RENEW_BUCKETS + 1];
   _Atomic uint64_t renew_count, renew_sum_us;
   relay_skew_t skew; /* measured by the lease thread, rendered by any (skew.h) */
};

/* Queues an event for the main thread (takes @token) and wakes it. */
void _relay_lease_post(relay_lease_t *l, relay_lease_event_kind_t kind, int part, int64_t epoch,
                       bson_t *token, const char *message);

/* Queues a FATAL event: the relay stops with exit status @code; @message says why. */
void _relay_lease_post_fatal(relay_lease_t *l, int code, const char *message);

/* Holds events back until _relay_lease_flush(): the main thread then sees a whole tick's
 * acquisitions at once (one stream start, one sweep). Lease thread only. */
void _relay_lease_hold(relay_lease_t *l);
void _relay_lease_flush(relay_lease_t *l);

/* tick.c: one tick: set-up, renew, member document, read, reconcile, balance. */
void _relay_lease_tick(relay_lease_t *l, bool eligible);

/* A failed lease write or read: said once (tick.c). */
void _relay_lease_note_down(relay_lease_t *l, const char *what, const bson_error_t *error);

/* tick-checks.c: reads the group into l->snap, re-creating deleted lease documents (false:
 * nothing read); members whose settings differ (false: this member must stop, FATAL posted);
 * malformed leases; the unowned-partition gauges. */
bool _relay_lease_read_group(relay_lease_t *l);
char *_relay_lease_settings(const relay_config_t *cfg); /* for the member document; bson_free */
bool _relay_lease_check_settings(relay_lease_t *l);
void _relay_lease_repair_malformed(relay_lease_t *l);
void _relay_lease_watch_unowned(relay_lease_t *l);

/* tick.c: stores @token in the leases of @valid (fenced by @epochs). */
void _relay_lease_write_checkpoint(relay_lease_t *l, const bson_t *token,
                                   const relay_partset_t *valid, const int64_t *epochs);

/* tick.c: gives @part (drained, at @epoch) to the member that asked for it. */
void _relay_lease_hand_over(relay_lease_t *l, int part, int64_t epoch);

/* tick.c: releases every lease and deletes the member document (SIGTERM). */
void _relay_lease_leave(relay_lease_t *l);

#endif /* RELAY_LEASE_PRIVATE_H */
