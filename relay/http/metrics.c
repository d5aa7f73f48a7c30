/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's counters and gauges (metrics.h) and their Prometheus text rendering. Values are
 * atomics that any thread may add to or set; the name and the extra renderer, set at start-up,
 * are guarded by name_mutex because the HTTP thread may render concurrently.
 */
#include "http/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "util/version.h"

#include "outbox/contract.h" /* liboutbox: the rules a header is left out by */

/* Rules of the event contract whose outcome is "left out" (headers), counted apiece. */
#define LEFT_OUT_RULES_MAX 16

struct relay_metrics_t {
   _Atomic uint64_t counters[RELAY_M_COUNTER_COUNT_];
   _Atomic uint64_t left_out[LEFT_OUT_RULES_MAX]; /* by left_out_rule() index */
   _Atomic double gauges[RELAY_G_GAUGE_COUNT_];
   /* The name changes at most once, at start-up, but render() may run concurrently on the
    * HTTP thread, so it is guarded. */
   pthread_mutex_t name_mutex;
   char *name;
   relay_series_t *series;                        /* set once at start-up */
   void (*render)(void *ctx, bson_string_t *out); /* guarded by name_mutex */
   void *render_ctx;
   _Atomic(const char *) role;
};

typedef struct {
   const char *name;
   const char *help;
} metric_desc_t;

/* Indexed by relay_counter_t. Names follow Prometheus conventions: counters end in _total,
 * units are spelled out (seconds), the prefix names the program. */
static const metric_desc_t counter_descs[RELAY_M_COUNTER_COUNT_] = {
   {"outbox_relay_events_published_total", "Events published and acknowledged by the broker."},
   {"outbox_relay_events_cleared_total", "Events removed from their documents after publishing."},
   {"outbox_relay_events_dead_lettered_total",
    "Events moved to the dead-letter place because they cannot be published."},
   {"outbox_relay_publish_failures_total", "Publish attempts that failed and will be retried."},
   {"outbox_relay_mqtt_reconnects_total", "Reconnections to the MQTT broker."},
   {"outbox_relay_mongodb_reconnects_total", "Change streams re-opened after a MongoDB error."},
   {"outbox_relay_resumes_total", "Change streams resumed from a stored resume token."},
   {"outbox_relay_sweeps_total", "Full scans for pending events (no usable resume token)."},
   {"outbox_relay_lease_acquisitions_total", "Partition leases this member acquired."},
   {"outbox_relay_lease_losses_total",
    "Partition leases this member lost (expired and taken by another member)."},
   {"outbox_relay_lease_handoffs_total", "Partition leases this member handed to another."},
   {"outbox_relay_events_archived_total",
    "Published events written to the archive (--archive-collection) before their clear."},
   {"outbox_relay_archive_write_failures_total",
    "Archive writes that failed; their events stay pending and are retried."},
   {"outbox_relay_headers_dropped_total",
    "Stored event headers left out of messages (not strings, reserved or invalid names, too "
    "large); the log names the reason."},
   {"outbox_relay_lease_recreations_total",
    "Times this member found lease documents deleted (or their collection dropped) while the "
    "group ran, and re-created them."},
   {"outbox_relay_lease_repairs_total",
    "Malformed lease documents (an epoch that is not a number, or out of range) this member "
    "repaired; the log names them."},
   {"outbox_relay_events_expired_total",
    "Events whose expiry (expiresAt, --message-expiry) passed before they were published, "
    "handled by --expired-events."},
};

static const metric_desc_t gauge_descs[RELAY_G_GAUGE_COUNT_] = {
   {"outbox_relay_inflight_messages", "Messages published but not yet acknowledged."},
   {"outbox_relay_buffered_events", "Events read from MongoDB but not yet cleared."},
   {"outbox_relay_buffered_bytes",
    "BSON size of the buffered events (reading pauses at --max-buffered-bytes)."},
   {"outbox_relay_entities",
    "Entities the relay keeps in memory: those with events buffered or in flight, and "
    "those it must remember while a sweep or a resumed stream may show their events again."},
   {"outbox_relay_oldest_pending_event_age_seconds",
    "Age of the oldest event seen but not yet cleared (0 when none)."},
   {"outbox_relay_change_stream_lag_seconds",
    "Time between a change's commit and the relay reading it, for the latest change."},
   {"outbox_relay_mqtt_connected", "1 when connected to the MQTT broker, else 0."},
   {"outbox_relay_mongodb_connected",
    "1 when the change stream is open (a standby: when its leases are renewed), else 0."},
   {"outbox_relay_mqtt_short_connections",
    "MQTT connections in a row lost within 30 s of connecting (3 or more fail /healthz)."},
   {"outbox_relay_partitions_owned", "Partition leases this member holds."},
   {"outbox_relay_group_members", "Live members of this relay's group, as it last counted."},
   {"outbox_relay_mongodb_writes_refused",
    "1 while MongoDB refuses the relay's writes (13 Unauthorized or authentication): "
    "publishing is paused."},
   {"outbox_relay_pending_scan_seconds",
    "Duration of the last periodic scan of the stored pending events and dead letters."},
   {"outbox_relay_partitions",
    "Partitions of this relay's group (--partitions): with outbox_relay_partitions_owned, "
    "shows partitions nobody owns."},
   {"outbox_relay_archive_failing",
    "1 while the archive refuses writes: published events are not cleared (fails /healthz)."},
   {"outbox_relay_group_partitions_unowned",
    "Partitions of the group without a live owner at this member's last read of the group "
    "(free, expired or malformed leases); above 0 for long, events wait (fails /healthz)."},
   {"outbox_relay_group_settings_mismatch",
    "1 while a live member of this group watches other collections, or keeps its group "
    "documents elsewhere (fails /healthz); the log names both values."},
   {"outbox_relay_group_stalled",
    "1 while partitions of the group have had no live owner for more than two lease times "
    "(their events wait; fails /healthz)."},
   {"outbox_relay_publish_rate_limit",
    "Events per second the relay publishes at most (--max-publish-rate; 0: no limit)."},
   {"outbox_relay_publish_paced", "1 while --max-publish-rate holds ready events back, else 0."},
   {"outbox_relay_archive_ttl_missing",
    "1 while --archive-ttl is set but the archive has no TTL index with that expireAfterSeconds "
    "(entries do not expire; /healthz says so; the log names the index in the way)."},
   {"outbox_relay_group_output_mismatch",
    "1 while a live member of this group publishes its partitions otherwise (archive, topic, "
    "source, payload mode, user properties, QoS or MQTT version differ): expected during a "
    "rolling change only; /healthz warns, the log names both values."},
};

relay_metrics_t *
relay_metrics_new(void)
{
   relay_metrics_t *m = bson_malloc0(sizeof *m);
   for (int i = 0; i < RELAY_M_COUNTER_COUNT_; i++) {
      atomic_init(&m->counters[i], 0);
   }
   for (int i = 0; i < LEFT_OUT_RULES_MAX; i++) {
      atomic_init(&m->left_out[i], 0);
   }
   for (int i = 0; i < RELAY_G_GAUGE_COUNT_; i++) {
      atomic_init(&m->gauges[i], 0.0);
   }
   pthread_mutex_init(&m->name_mutex, NULL);
   atomic_init(&m->role, NULL);
   return m;
}

void
relay_metrics_destroy(relay_metrics_t *metrics)
{
   if (!metrics) {
      return;
   }
   pthread_mutex_destroy(&metrics->name_mutex);
   bson_free(metrics->name);
   relay_series_destroy(metrics->series);
   bson_free(metrics);
}

void
relay_metrics_add(relay_metrics_t *metrics, relay_counter_t counter, uint64_t n)
{
   if (metrics && (unsigned)counter < RELAY_M_COUNTER_COUNT_) {
      atomic_fetch_add_explicit(&metrics->counters[counter], n, memory_order_relaxed);
   }
}

void
relay_metrics_set(relay_metrics_t *metrics, relay_gauge_t gauge, double value)
{
   if (metrics && (unsigned)gauge < RELAY_G_GAUGE_COUNT_) {
      atomic_store_explicit(&metrics->gauges[gauge], value, memory_order_relaxed);
   }
}

uint64_t
relay_metrics_get(const relay_metrics_t *metrics, relay_counter_t counter)
{
   if (!metrics || (unsigned)counter >= RELAY_M_COUNTER_COUNT_) {
      return 0;
   }
   return atomic_load_explicit(&metrics->counters[counter], memory_order_relaxed);
}

double
relay_metrics_get_gauge(const relay_metrics_t *metrics, relay_gauge_t gauge)
{
   if (!metrics || (unsigned)gauge >= RELAY_G_GAUGE_COUNT_) {
      return 0.0;
   }
   return atomic_load_explicit(&metrics->gauges[gauge], memory_order_relaxed);
}

void
relay_metrics_set_name(relay_metrics_t *metrics, const char *name)
{
   if (!metrics) {
      return;
   }
   pthread_mutex_lock(&metrics->name_mutex);
   bson_free(metrics->name);
   metrics->name = name ? bson_strdup(name) : NULL;
   pthread_mutex_unlock(&metrics->name_mutex);
}

void
relay_metrics_set_collections(relay_metrics_t *metrics, char *const *names, size_t n)
{
   if (metrics && !metrics->series) {
      metrics->series = relay_series_new(names, n);
   }
}

relay_series_t *
relay_metrics_series(relay_metrics_t *metrics)
{
   return metrics ? metrics->series : NULL;
}

/* Label values escape backslash, double quote and newline (exposition format 0.0.4). */
static void
append_label_value(bson_string_t *out, const char *s)
{
   for (; *s; s++) {
      if (*s == '\\' || *s == '"') {
         bson_string_append_c(out, '\\');
         bson_string_append_c(out, *s);
      } else if (*s == '\n') {
         bson_string_append(out, "\\n");
      } else {
         bson_string_append_c(out, *s);
      }
   }
}

static void
append_double(bson_string_t *out, double v)
{
   if (isnan(v)) {
      bson_string_append(out, "NaN");
   } else if (isinf(v)) {
      bson_string_append(out, v > 0 ? "+Inf" : "-Inf");
   } else if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v) {
      bson_string_append_printf(out, "%" PRId64, (int64_t)v);
   } else {
      bson_string_append_printf(out, "%.17g", v);
   }
}

static void
render_info(const relay_metrics_t *metrics, bson_string_t *out)
{
   bson_string_append(out, "# HELP outbox_relay_info The relay's version and name.\n"
                           "# TYPE outbox_relay_info gauge\n"
                           "outbox_relay_info{version=\"");
   append_label_value(out, relay_version());
   bson_string_append(out, "\",name=\"");
   pthread_mutex_t *mutex = (pthread_mutex_t *)&metrics->name_mutex;
   pthread_mutex_lock(mutex);
   append_label_value(out, metrics->name ? metrics->name : "");
   pthread_mutex_unlock(mutex);
   bson_string_append(out, "\"} 1\n");
}

void
relay_metrics_set_renderer(relay_metrics_t *metrics, void (*render)(void *ctx, bson_string_t *out),
                           void *ctx)
{
   if (!metrics) {
      return;
   }
   pthread_mutex_lock(&metrics->name_mutex);
   metrics->render = render;
   metrics->render_ctx = ctx;
   pthread_mutex_unlock(&metrics->name_mutex);
}

void
relay_metrics_set_role(relay_metrics_t *metrics, const char *role)
{
   if (metrics) {
      atomic_store(&metrics->role, role);
   }
}

const char *
relay_metrics_role(const relay_metrics_t *metrics)
{
   return metrics ? atomic_load(&((relay_metrics_t *)metrics)->role) : NULL;
}

static void
render_extra(const relay_metrics_t *metrics, bson_string_t *out)
{
   pthread_mutex_t *mutex = (pthread_mutex_t *)&metrics->name_mutex;
   pthread_mutex_lock(mutex);
   if (metrics->render) {
      metrics->render(metrics->render_ctx, out);
   }
   pthread_mutex_unlock(mutex);
}

/* The @k-th rule of the event contract whose outcome is "left out", or NULL past the last. */
static const outbox_contract_rule_t *
left_out_rule(size_t k)
{
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules), seen = 0;
   for (size_t i = 0; i < n; i++) {
      if (rules[i].outcome == OUTBOX_CONTRACT_LEFT_OUT && seen++ == k) {
         return &rules[i];
      }
   }
   return NULL;
}

void
relay_metrics_add_left_out(relay_metrics_t *metrics, const char *reason, uint64_t n)
{
   const outbox_contract_rule_t *r;
   for (size_t k = 0; metrics && k < LEFT_OUT_RULES_MAX && (r = left_out_rule(k)); k++) {
      if (r->reason == reason) {
         atomic_fetch_add_explicit(&metrics->left_out[k], n, memory_order_relaxed);
         return;
      }
   }
}

static void
render_left_out(const relay_metrics_t *metrics, bson_string_t *out)
{
   const outbox_contract_rule_t *r;
   bson_string_append(out, "# HELP outbox_relay_headers_dropped_by_rule_total Stored event headers "
                           "left out of messages, by the event contract's rule (<outbox/"
                           "contract.h>).\n"
                           "# TYPE outbox_relay_headers_dropped_by_rule_total counter\n");
   for (size_t k = 0; k < LEFT_OUT_RULES_MAX && (r = left_out_rule(k)); k++) {
      bson_string_append(out, "outbox_relay_headers_dropped_by_rule_total{rule=\"");
      append_label_value(out, r->name);
      bson_string_append_printf(out, "\"} %" PRIu64 "\n",
                                atomic_load_explicit(&metrics->left_out[k], memory_order_relaxed));
   }
}

void
relay_metrics_render(const relay_metrics_t *metrics, bson_string_t *out)
{
   if (!metrics) {
      return;
   }
   render_info(metrics, out);
   for (int i = 0; i < RELAY_M_COUNTER_COUNT_; i++) {
      const metric_desc_t *d = &counter_descs[i];
      bson_string_append_printf(out, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", d->name,
                                d->help, d->name, d->name,
                                relay_metrics_get(metrics, (relay_counter_t)i));
   }
   for (int i = 0; i < RELAY_G_GAUGE_COUNT_; i++) {
      const metric_desc_t *d = &gauge_descs[i];
      bson_string_append_printf(out, "# HELP %s %s\n# TYPE %s gauge\n%s ", d->name, d->help,
                                d->name, d->name);
      append_double(out, relay_metrics_get_gauge(metrics, (relay_gauge_t)i));
      bson_string_append_c(out, '\n');
   }
   render_left_out(metrics, out);
   relay_series_render(metrics->series, out);
   render_extra(metrics, out);
}

bool
relay_metrics_healthy(const relay_metrics_t *metrics, const char **reason)
{
   const char *why = NULL;
   bool mongo = relay_metrics_get_gauge(metrics, RELAY_G_MONGODB_CONNECTED) == 1.0;
   bool mqtt = relay_metrics_get_gauge(metrics, RELAY_G_MQTT_CONNECTED) == 1.0;
   if (!metrics) {
      why = "no metrics";
   } else if (!mongo && !mqtt) {
      why = "MongoDB and MQTT broker not connected";
   } else if (!mongo) {
      why = "MongoDB not connected";
   } else if (!mqtt) {
      why = "MQTT broker not connected";
   } else if (relay_metrics_get_gauge(metrics, RELAY_G_MQTT_SHORT_CONNECTIONS) >= 3) {
      why = "MQTT connection keeps dropping (lost 3 times in a row within 30 s of connecting)";
   } else if (relay_metrics_get_gauge(metrics, RELAY_G_MONGODB_WRITES_REFUSED) == 1.0) {
      why = "MongoDB refuses the relay's writes (not authorized): publishing paused";
   } else if (relay_metrics_get_gauge(metrics, RELAY_G_ARCHIVE_FAILING) == 1.0) {
      why = "archive writes fail: published events stay pending until they are archived";
   } else if (relay_metrics_get_gauge(metrics, RELAY_G_GROUP_MISMATCH) == 1.0) {
      why = "group members run with different collections or settings (see the log)";
   } else if (relay_metrics_get_gauge(metrics, RELAY_G_GROUP_STALLED) == 1.0) {
      why = "partitions of the group have had no owner for two lease times: their events wait";
   }
   if (reason) {
      *reason = why;
   }
   return why == NULL;
}
