/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's counters and gauges, rendered in the Prometheus text exposition format
 * (served on /metrics by http.h) and summarised by the health check (/healthz).
 *
 * Thread safety: relay_metrics_add(), relay_metrics_set(), the getters and the renderers may
 * be called from any thread at any time (values are atomics; no locks are taken, so they
 * are also cheap on hot paths). relay_metrics_new() and relay_metrics_destroy() must not race
 * with other calls. Every function accepts NULL metrics and then does nothing (returns 0).
 */
#ifndef RELAY_METRICS_H
#define RELAY_METRICS_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "http/series.h"

/* Monotonic counters (Prometheus "counter", names end in _total). */
typedef enum {
   RELAY_M_PUBLISHED = 0,      /* outbox_relay_events_published_total: acknowledged by the broker */
   RELAY_M_CLEARED,            /* outbox_relay_events_cleared_total: removed from documents */
   RELAY_M_DEAD_LETTERED,      /* outbox_relay_events_dead_lettered_total */
   RELAY_M_PUBLISH_FAILURES,   /* outbox_relay_publish_failures_total: failed attempts (retried) */
   RELAY_M_MQTT_RECONNECTS,    /* outbox_relay_mqtt_reconnects_total */
   RELAY_M_MONGODB_RECONNECTS, /* outbox_relay_mongodb_reconnects_total: stream re-opened */
   RELAY_M_RESUMES,            /* outbox_relay_resumes_total: stream resumed from a token */
   RELAY_M_SWEEPS,             /* outbox_relay_sweeps_total: full scans for pending events */
   RELAY_M_LEASE_ACQUISITIONS, /* outbox_relay_lease_acquisitions_total */
   RELAY_M_LEASE_LOSSES,       /* outbox_relay_lease_losses_total: taken by another member */
   RELAY_M_LEASE_HANDOFFS,     /* outbox_relay_lease_handoffs_total: handed to another member */
   RELAY_M_ARCHIVED,           /* outbox_relay_events_archived_total: written to the archive */
   RELAY_M_ARCHIVE_FAILURES,   /* outbox_relay_archive_write_failures_total: (retried) */
   RELAY_M_HEADERS_DROPPED,    /* outbox_relay_headers_dropped_total: left out of messages */
   RELAY_M_LEASE_RECREATIONS,  /* outbox_relay_lease_recreations_total: deleted leases re-made */
   RELAY_M_LEASE_REPAIRS,      /* outbox_relay_lease_repairs_total: malformed leases repaired */
   RELAY_M_EXPIRED,            /* outbox_relay_events_expired_total: expired before publishing */
   RELAY_M_COUNTER_COUNT_,
} relay_counter_t;

/* Point-in-time values (Prometheus "gauge"). */
typedef enum {
   RELAY_G_INFLIGHT = 0,           /* outbox_relay_inflight_messages: published, not acknowledged */
   RELAY_G_BUFFERED,               /* outbox_relay_buffered_events: read, not yet cleared */
   RELAY_G_BUFFERED_BYTES,         /* outbox_relay_buffered_bytes: their BSON size */
   RELAY_G_ENTITIES,               /* outbox_relay_entities: entities the relay keeps in memory */
   RELAY_G_OLDEST_PENDING_AGE_S,   /* outbox_relay_oldest_pending_event_age_seconds */
   RELAY_G_STREAM_LAG_S,           /* outbox_relay_change_stream_lag_seconds: now - clusterTime */
   RELAY_G_MQTT_CONNECTED,         /* outbox_relay_mqtt_connected: 1 or 0 */
   RELAY_G_MONGODB_CONNECTED,      /* outbox_relay_mongodb_connected: 1 or 0 */
   RELAY_G_MQTT_SHORT_CONNECTIONS, /* outbox_relay_mqtt_short_connections: lost soon, in a row */
   RELAY_G_PARTITIONS_OWNED,       /* outbox_relay_partitions_owned: leases this member holds */
   RELAY_G_GROUP_MEMBERS,          /* outbox_relay_group_members: live members it counts */
   RELAY_G_MONGODB_WRITES_REFUSED, /* outbox_relay_mongodb_writes_refused: 1 while refused */
   RELAY_G_PENDING_SCAN_S,         /* outbox_relay_pending_scan_seconds: the last scan's duration */
   RELAY_G_PARTITIONS,             /* outbox_relay_partitions: the group's --partitions */
   RELAY_G_ARCHIVE_FAILING,        /* outbox_relay_archive_failing: 1 while archive writes fail */
   RELAY_G_PARTITIONS_UNOWNED,     /* outbox_relay_group_partitions_unowned: no live owner seen */
   RELAY_G_GROUP_MISMATCH,         /* outbox_relay_group_settings_mismatch: 1 while they differ */
   RELAY_G_GROUP_STALLED,          /* outbox_relay_group_stalled: unowned for 2 lease times */
   RELAY_G_PUBLISH_RATE_LIMIT,     /* outbox_relay_publish_rate_limit: --max-publish-rate, 0 off */
   RELAY_G_PUBLISH_PACED,          /* outbox_relay_publish_paced: 1 while the limit holds events */
   RELAY_G_ARCHIVE_TTL_MISSING,   /* outbox_relay_archive_ttl_missing: --archive-ttl not in force */
   RELAY_G_GROUP_OUTPUT_MISMATCH, /* outbox_relay_group_output_mismatch: members publish otherwise
                                   */
   RELAY_G_GAUGE_COUNT_,
} relay_gauge_t;

typedef struct relay_metrics_t relay_metrics_t;

/* All counters and gauges start at 0. Free with relay_metrics_destroy(). */
relay_metrics_t *relay_metrics_new(void);

/* NULL-safe. Nothing may use @metrics afterwards (stop the HTTP server first). */
void relay_metrics_destroy(relay_metrics_t *metrics);

/* Adds @n to a counter. */
void relay_metrics_add(relay_metrics_t *metrics, relay_counter_t counter, uint64_t n);

/* Counts @n headers left out of a message by the event contract's rule whose reason is
 * @reason (the static sentence relay_headers_read() recorded): the labelled counter
 * outbox_relay_headers_dropped_by_rule_total{rule="<the rule's name>"}. */
void relay_metrics_add_left_out(relay_metrics_t *metrics, const char *reason, uint64_t n);

/* Sets a gauge. */
void relay_metrics_set(relay_metrics_t *metrics, relay_gauge_t gauge, double value);

uint64_t relay_metrics_get(const relay_metrics_t *metrics, relay_counter_t counter);

double relay_metrics_get_gauge(const relay_metrics_t *metrics, relay_gauge_t gauge);

/* Sets the relay name shown as a label on outbox_relay_info (copied). */
void relay_metrics_set_name(relay_metrics_t *metrics, const char *name);

/* Creates the per-collection series (series.h) for @n collections. Call once, before the
 * HTTP server starts rendering. */
void relay_metrics_set_collections(relay_metrics_t *metrics, char *const *names, size_t n);

/* The per-collection series, NULL before relay_metrics_set_collections(). */
relay_series_t *relay_metrics_series(relay_metrics_t *metrics);

/* Metrics kept elsewhere (labelled series, histograms): @render(@ctx, out) is called at the
 * end of every relay_metrics_render(), from the HTTP thread. Set it to NULL before @ctx goes
 * away; the call waits for a render in progress. */
void relay_metrics_set_renderer(relay_metrics_t *metrics,
                                void (*render)(void *ctx, bson_string_t *out), void *ctx);

/* The member's role in its group for /healthz: "active" (owns partitions), "standby", or
 * NULL (not said). A static string. */
void relay_metrics_set_role(relay_metrics_t *metrics, const char *role);

/* The role set last, or NULL. */
const char *relay_metrics_role(const relay_metrics_t *metrics);

/* Appends all metrics in the Prometheus text exposition format (version 0.0.4) to @out:
 * "# HELP", "# TYPE" and one sample line per metric. */
void relay_metrics_render(const relay_metrics_t *metrics, bson_string_t *out);

/* True when both connected gauges are 1 and the MQTT connection does not keep dropping (fewer
 * than 3 short connections in a row). Otherwise false, and *@reason (if not NULL) points
 * to a static sentence saying what is down. */
bool relay_metrics_healthy(const relay_metrics_t *metrics, const char **reason);

#endif /* RELAY_METRICS_H */
