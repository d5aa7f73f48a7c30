/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's lifecycle and main loop: the one file that knows every component (the
 * partition owner, ingest, the publisher, the writer, the table; relay/README.md, "How the
 * relay is built") and hands each what it needs (relay-ops.c). One thread (the caller of
 * relay_run()) owns all state; the reader, clearer, scanner and lease threads and paho's
 * threads only queue work for it and wake it through the MQTT client's queue. Each turn of
 * the loop, in the order correctness needs: connect if needed; the partition owner's step and
 * what it asks for (own()); ingest; dispatch (each event admitted first); flush clears;
 * checkpoint (only what is cleared); timeouts and gauges; wait for the next wake-up.
 */
#include <signal.h>
#include <string.h>
#include <sysexits.h>

#include "util/error.h"
#include "util/log.h"
#include "relay-private.h"
#include "mqtt/render.h"
#include "mqtt/tls.h"

/* The TLS files, read once here so that a bad one is named at start instead of failing every
 * connect as "TCP/TLS connect failure"; a certificate close to its expiry is a warning. */
static bool
check_tls_files(const relay_config_t *cfg, bson_error_t *error)
{
   bson_string_t *warnings = bson_string_new(NULL);
   bool ok = relay_tls_check_files(cfg, RELAY_TLS_WARN_DAYS, warnings, error);
   if (warnings->len) {
      warnings->str[warnings->len - 1] = '\0'; /* the line's own newline */
      relay_log(RELAY_LOG_WARNING, "mqtt", "%s", warnings->str);
   }
   bson_string_free(warnings, true);
   return ok;
}

static bool
check_config(const relay_config_t *cfg, bson_error_t *error)
{
   /* The source is a CloudEvents URI-reference, not a topic: '#' and '+' are fine there. */
   if (!relay_template_check(cfg->topic_template, "topic template", true, error) ||
       !relay_template_check(cfg->source_template, "source template", false, error)) {
      return false;
   }
   if (!cfg->state_database || cfg->n_watch == 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "a state database and at least one namespace are needed");
      return false;
   }
   if (cfg->qos < 0 || cfg->qos > 2 || cfg->inflight_window < 1 || cfg->max_buffered_events < 1 ||
       cfg->clear_batch_size < 1) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "qos, inflight window, buffer or batch size out of range");
      return false;
   }
   if (cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version != 5) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "binary payload mode needs MQTT 5 (user properties)");
      return false;
   }
   return check_tls_files(cfg, error);
}

static void
wake_main(void *ctx)
{
   relay_mqtt_wake(ctx);
}

static bool
open_mongodb(relay_t *r, bson_error_t *error)
{
   const relay_config_t *cfg = r->cfg;

   r->client = relay_store_client_new(cfg, "outbox-relay", error);
   if (!r->client) {
      return false;
   }
   r->state = mongoc_client_get_collection(r->client, cfg->state_database, cfg->state_collection);
   return true;
}

/* The MQTT client (with the group's client id) and the components that use it: made before
 * the threads, which wake the main loop through it. */
static bool
open_mqtt(relay_t *r, bson_error_t *error)
{
   r->mqtt = relay_mqtt_new(r->cfg, relay_group_client_id(r->group), error);
   if (!r->mqtt) {
      return false;
   }
   r->sender = relay_sender_new(r->cfg, r->ns, r->mqtt, r->metrics);
   r->writer = relay_writer_new(r->cfg, r->ns, r->metrics, &r->table, &relay_ops_writer, r);
   r->ingest = relay_ingest_new(r->cfg, r->ns, r->metrics, &r->table, &relay_group_ingest_ops,
                                r->group, &relay_ops_ingest, r);
   r->publisher = relay_publisher_new(r->cfg, r->metrics, &r->table, &relay_ops_admission, r,
                                      &relay_ops_link, r);
   return true;
}

static void
render_lease_metrics(void *ctx, bson_string_t *out)
{
   relay_lease_render_metrics(ctx, out);
}

/* The lease thread (after the MQTT client exists: it wakes the main loop through it). */
static bool
start_lease(relay_t *r, bson_error_t *error)
{
   r->lease = relay_lease_new(r->cfg, relay_group_instance_id(r->group), r->metrics, wake_main,
                              r->mqtt, error);
   if (!r->lease) {
      return false;
   }
   relay_metrics_set_renderer(r->metrics, render_lease_metrics, r->lease);
   relay_log(RELAY_LOG_INFO, "group", "member %s of group '%s' (%d partitions, lease %d ms)",
             relay_group_instance_id(r->group), r->cfg->name, relay_group_partitions(r->group),
             r->cfg->lease_ttl_ms);
   return true;
}

relay_t *
relay_new(const relay_config_t *cfg, relay_metrics_t *metrics, bson_error_t *error)
{
   relay_t *r;

   if (!check_config(cfg, error)) {
      return NULL;
   }
   /* paho writes to sockets the peer may have closed: a broken pipe must be an error code,
    * not a signal that kills the daemon. */
   signal(SIGPIPE, SIG_IGN);
   r = bson_malloc0(sizeof *r);
   r->cfg = cfg;
   r->metrics = metrics;
   atomic_init(&r->stop, 0);
   relay_table_init(&r->table);
   r->group = relay_group_new(cfg, metrics, &r->table, &relay_ops_group, r);
   r->ns = relay_namespaces_new(cfg, error);
   if (!r->ns || !open_mongodb(r, error) || !open_mqtt(r, error)) {
      relay_destroy(r);
      return NULL;
   }
   r->reader = relay_reader_new(cfg, relay_namespaces_patterns(r->ns),
                                relay_store_stream_client_new(cfg, "outbox-relay-stream", error),
                                relay_store_operation_time, wake_main, r->mqtt, error);
   /* Without per-collection series (tests that drive relay_t directly) there is nothing
    * for the scanner to fill. */
   bool want_scanner = cfg->pending_scan_interval_ms > 0 && relay_metrics_series(metrics);
   r->clearer = r->reader
                   ? relay_clearer_new(cfg, r->ns, metrics, relay_group_instance_id(r->group),
                                       wake_main, r->mqtt, error)
                   : NULL;
   if (r->clearer && want_scanner) {
      r->scanner = relay_scanner_new(cfg, r->ns, metrics, error);
   }
   if (!r->clearer || (want_scanner && !r->scanner) || !start_lease(r, error)) {
      relay_destroy(r);
      return NULL;
   }
   return r;
}

/* The table's gauges, once per turn of the loop (the only place they are set). The oldest
 * pending event's age is the older of what the table holds and what the scanner last found
 * stored (events the stream cannot show, events not read yet). */
static void
update_gauges(relay_t *r)
{
   relay_pos_t *oldest = r->table.pos_head;
   int64_t now = relay_wall_ms(), stored = relay_series_oldest(relay_metrics_series(r->metrics));
   double age = 0;
   bool refused;
   int64_t lag_ms = relay_ingest_lag_ms(r->ingest);

   if (oldest && oldest->remaining > 0 && oldest->wall_ms > 0) {
      age = (double)(now - oldest->wall_ms) / 1000.0;
   }
   if (stored > 0 && (double)(now - stored) / 1000.0 > age) {
      age = (double)(now - stored) / 1000.0;
   }
   relay_metrics_set(r->metrics, RELAY_G_OLDEST_PENDING_AGE_S, age > 0 ? age : 0);
   relay_metrics_set(r->metrics, RELAY_G_STREAM_LAG_S, lag_ms > 0 ? (double)lag_ms / 1000.0 : 0);
   relay_metrics_set(r->metrics, RELAY_G_BUFFERED, (double)r->table.buffered);
   relay_metrics_set(r->metrics, RELAY_G_BUFFERED_BYTES, (double)r->table.buffered_bytes);
   relay_metrics_set(r->metrics, RELAY_G_ENTITIES, (double)r->table.count);
   relay_metrics_set(r->metrics, RELAY_G_INFLIGHT, (double)r->table.inflight);
   /* Refused by the clears (writer.c) or by the lease writes (group/tick.c): one gauge, set
    * here only. (r->lease, like every component, exists for the whole run: relay_new() fails
    * without it.) */
   refused = relay_writer_refused(r->writer) || relay_lease_refused(r->lease);
   relay_metrics_set(r->metrics, RELAY_G_MONGODB_WRITES_REFUSED, refused ? 1.0 : 0.0);
   if (!relay_ingest_started(r->ingest)) {
      /* A standby has no stream: MongoDB counts as reachable while its lease ticks work. */
      relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED,
                        relay_lease_healthy(r->lease) ? 1.0 : 0.0);
   }
}

/* A checkpoint the writer says is due goes to the partition owner, whose lease thread stores it in
 * the leases it is valid for (fenced by their epochs). */
static void
checkpoint(relay_t *r, int64_t now, bool force)
{
   bson_t *token = relay_writer_checkpoint_due(r->writer, now, force);
   if (token) {
      relay_group_checkpoint(r->group, token);
      bson_destroy(token);
   }
}

/* The loop's one wait: every thread (reader, clearer, lease, paho) wakes it through the MQTT
 * client's queue; paho's completions go to the publisher. */
static void
handle_completions(relay_t *r, int wait_ms, int64_t now)
{
   relay_mqtt_completion_t cs[256];
   size_t n = relay_mqtt_wait(r->mqtt, cs, 256, wait_ms);

   for (size_t i = 0; i < n; i++) {
      relay_publisher_complete(r->publisher, &cs[i], now);
   }
}

static int
loop_wait_ms(const relay_t *r)
{
   int wait = 50;
   if (r->table.dirty_head) {
      wait = r->cfg->clear_interval_ms > 0 ? r->cfg->clear_interval_ms : 1;
   }
   /* --max-publish-rate: back when the next token is. */
   int paced = relay_publisher_wait_ms(r->publisher);
   return paced >= 0 && paced < wait ? paced : wait;
}

/* SIGTERM: stop reading, wait (bounded) for the acknowledgements of what is in flight,
 * clear it, checkpoint, release the leases (the group's other members take them at once),
 * disconnect. Events read but never published stay pending in their documents and the
 * checkpoint stays before them, so the next owner publishes them. */
static void
drain(relay_t *r)
{
   int64_t now = relay_now_ms();
   int64_t deadline = now + r->cfg->shutdown_timeout_ms;

   relay_log(RELAY_LOG_INFO, "relay", "stopping: %zu messages in flight", r->table.inflight);
   while (now < deadline && (r->table.inflight > 0 || !relay_writer_idle(r->writer))) {
      handle_completions(r, 20, now);
      now = relay_now_ms();
      relay_writer_flush(r->writer, now, true);
      update_gauges(r);
   }
   if (r->table.inflight > 0) {
      relay_log(RELAY_LOG_WARNING, "relay",
                "%zu messages still unacknowledged at shutdown: they will be sent again",
                r->table.inflight);
   }
   checkpoint(r, now, true);
   relay_lease_shutdown(r->lease, 5000);
   relay_mqtt_disconnect(r->mqtt, 1000);
}

/* The partition owner's step, and what it asked for: sweeps of partitions acquired while
 * the stream runs, then the stream opened, refiltered or closed. */
static void
own(relay_t *r, int64_t now)
{
   relay_group_intents_t in;

   relay_group_step(r->group, now, relay_ingest_started(r->ingest),
                    relay_publisher_connected(r->publisher), &in);
   for (int p = 0; p < relay_group_partitions(r->group); p++) {
      if (relay_partset_has(&in.sweep, p)) {
         relay_ingest_sweep(r->ingest, p);
      }
   }
   switch (in.stream) {
   case RELAY_STREAM_OPEN:
      relay_reader_set_partitions(r->reader, in.filter, relay_group_partitions(r->group));
      relay_ingest_open(r->ingest, in.token, &in.unswept);
      break;
   case RELAY_STREAM_REFILTER:
      relay_reader_set_partitions(r->reader, in.filter, relay_group_partitions(r->group));
      relay_reader_reopen(r->reader);
      break;
   case RELAY_STREAM_CLOSE:
      relay_ingest_close(r->ingest);
      break;
   case RELAY_STREAM_KEEP:
      break;
   }
   if (in.fatal) {
      r->fatal = true;
      r->exit_code = in.exit_code;
   }
   relay_group_intents_cleanup(&in);
}

int
relay_run(relay_t *r)
{
   const relay_nsset_t *set = relay_namespaces_patterns(r->ns);
   const char *single = relay_nsset_single_db(set);
   relay_log(RELAY_LOG_INFO, "relay",
             "relay '%s' starting: %zu namespace pattern(s) through one %s stream%s%s, state in "
             "database %s",
             r->cfg->name, relay_nsset_count(set), single ? "database" : "cluster",
             single ? " on " : "", single ? single : "", r->cfg->state_database);
   while (!atomic_load(&r->stop) && !r->fatal) {
      int64_t now = relay_now_ms();
      relay_publisher_connect(r->publisher, now);
      own(r, now);
      relay_ingest_step(r->ingest, now);
      relay_publisher_dispatch(r->publisher, now);
      relay_writer_flush(r->writer, now, false);
      checkpoint(r, now, false);
      relay_publisher_check_timeouts(r->publisher, now);
      update_gauges(r);
      handle_completions(r, loop_wait_ms(r), relay_now_ms());
   }
   drain(r);
   update_gauges(r);
   relay_log(RELAY_LOG_INFO, "relay", "stopped");
   return r->exit_code;
}

void
relay_request_stop(relay_t *r)
{
   if (r) {
      atomic_store(&r->stop, 1);
   }
}

void
relay_destroy(relay_t *r)
{
   if (!r) {
      return;
   }
   /* The threads first: they wake the main loop through the MQTT client's queue. */
   relay_reader_destroy(r->reader);
   relay_clearer_destroy(r->clearer);
   relay_writer_destroy(r->writer);
   relay_scanner_destroy(r->scanner);
   relay_ingest_destroy(r->ingest);
   relay_metrics_set_renderer(r->metrics, NULL, NULL);
   relay_lease_destroy(r->lease);
   relay_group_destroy(r->group);
   relay_publisher_destroy(r->publisher);
   relay_sender_destroy(r->sender);
   relay_mqtt_destroy(r->mqtt);
   relay_table_cleanup(&r->table);
   relay_ns_handles_clear(&r->colls);
   mongoc_collection_destroy(r->state);
   mongoc_client_destroy(r->client);
   relay_namespaces_destroy(r->ns);
   bson_free(r);
}
