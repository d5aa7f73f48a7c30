/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease thread: a thread with its own mongoc client that owns this member's lease table
 * and does all lease I/O on schedule (every --lease-renew-ms), whatever the main loop is
 * doing: it renews what it owns, keeps the member document alive, reads the group, balances
 * (balance.h) and carries out handoffs and releases. It tells the main thread what changed
 * through a queue of events (acquired, lost, handoff asked, fatal), and publishes one atomic
 * deadline per partition that the main thread reads before every publish (the gate).
 *
 * The deadline is local and monotonic, on CLOCK_BOOTTIME (which counts through suspension):
 * the time the successful renew or acquire was sent, plus --lease-ttl-ms, minus
 * --lease-margin-ms. The server's lease expires no earlier than ttl after it received that
 * write, so while the gate is open no other member can own the partition. Past the deadline
 * nothing of the partition is published, whether or not MongoDB can be reached to find out.
 *
 * Thread safety: relay_lease_may_publish() may be called from any thread; the others are
 * for the main thread. The lease thread calls @wake after each queued event.
 */
#ifndef RELAY_LEASE_H
#define RELAY_LEASE_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "base/partition.h"
#include "config/config.h"
#include "group/lease-ops.h"
#include "http/metrics.h"

typedef struct relay_lease_t relay_lease_t;

/* Creates the lease thread for @cfg (borrowed, like @metrics, for the thread's lifetime),
 * with this process's @instance_id (copied). It starts at once: it sets up the group
 * documents (lease-store.h) and takes its share. Returns NULL and fills @error on a bad URI. */
relay_lease_t *relay_lease_new(const relay_config_t *cfg, const char *instance_id,
                               relay_metrics_t *metrics, void (*wake)(void *), void *wake_ctx,
                               bson_error_t *error);

/* Takes the oldest event (lease-ops.h; caller frees with relay_lease_event_free()), or
 * NULL. */
relay_lease_event_t *relay_lease_pop(relay_lease_t *lease);

/* The gate: true while @part's lease is ours and its local deadline has not passed. */
bool relay_lease_may_publish(const relay_lease_t *lease, int part);

/* The checkpoint @token (copied) is valid for the partitions in @valid at @epochs: store it
 * in their leases (fenced) at the next write, at most every cfg->checkpoint_interval_ms. */
void relay_lease_checkpoint(relay_lease_t *lease, const bson_t *token, const relay_partset_t *valid,
                            const int64_t *epochs);

/* @part (at @epoch) is drained after a HANDOFF event: nothing of it is in flight or waits to
 * be cleared. The lease thread closes its gate and hands the lease to the member that asked. */
void relay_lease_drained(relay_lease_t *lease, int part, int64_t epoch);

/* Whether this member may own partitions (false while the broker cannot be reached: then,
 * when other members are live, it releases its leases and takes none). */
void relay_lease_set_eligible(relay_lease_t *lease, bool eligible);

/* True after a successful tick within the last lease time (MongoDB reachable). */
bool relay_lease_healthy(const relay_lease_t *lease);

/* Whether MongoDB refused the lease thread's last writes (13 Unauthorized, or authentication),
 * until a tick succeeds (any thread). relay.c shows it in the writes-refused gauge. */
bool relay_lease_refused(const relay_lease_t *lease);

/* SIGTERM: writes the checkpoint given last, releases every lease (others take them at
 * their next tick, without waiting for expiry), deletes the member document and stops the
 * thread. Waits up to @timeout_ms. */
void relay_lease_shutdown(relay_lease_t *lease, int timeout_ms);

/* Appends the lease metrics (epochs per owned partition, renew latency histogram) in the
 * Prometheus text format. Any thread. */
void relay_lease_render_metrics(const relay_lease_t *lease, bson_string_t *out);

/* Stops and joins the thread (without releasing: see shutdown), frees everything;
 * NULL-safe. */
void relay_lease_destroy(relay_lease_t *lease);

/* Now on CLOCK_BOOTTIME, in nanoseconds. */
int64_t relay_boot_ns(void);

#endif /* RELAY_LEASE_H */
