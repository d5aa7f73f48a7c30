/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The publisher (publisher.h): ready events into the in-flight window, the broker's answers
 * back into the table, the connection's state. Its state (slots, backoff, the connection,
 * the suspect) is its own, in struct relay_publisher_t; main thread only.
 *
 * A publish's tag is (gen << 32 | slot index): a completion for an abandoned publish (its slot
 * reused since, gen moved on) is recognised and ignored.
 */
#include "publish/publisher.h"

#include "mqtt/expiry.h"
#include "publish/pacer.h"
#include "publish/suspect.h"
#include "util/log.h"
#include "util/util.h"

/* One publish slot of the in-flight window. */
typedef struct {
   relay_entity_t *entity; /* NULL when free */
   uint32_t gen;
   int64_t sent_ms;
   int64_t sent_us; /* bson_get_monotonic_time() at the send: the round-trip histogram */
} slot_t;

struct relay_publisher_t {
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   relay_table_t *table;
   const relay_admission_ops_t *admission;
   void *admission_ctx;
   const relay_link_ops_t *link;
   void *link_ctx;

   slot_t *slots; /* cfg->inflight_window */
   uint32_t *free_slots;
   size_t n_free;
   uint32_t gen;
   int64_t pause_until_ms; /* the client refused a publish: wait before the next */
   int backoff_ms;

   bool connected, connecting, ever_connected;
   /* The oldest publish paho failed because its connection ended (it may say so before the
    * loss): the suspect if the loss then finds nothing older in flight. */
   char *ended_id;
   int64_t ended_sent_ms;
   int64_t retry_at_ms;
   int connect_backoff_ms;
   relay_suspect_t suspect;
   relay_pacer_t pacer; /* --max-publish-rate */
};

relay_publisher_t *
relay_publisher_new(const relay_config_t *cfg, relay_metrics_t *metrics, relay_table_t *table,
                    const relay_admission_ops_t *admission, void *admission_ctx,
                    const relay_link_ops_t *link, void *link_ctx)
{
   relay_publisher_t *p = bson_malloc0(sizeof *p);
   size_t n = (size_t)cfg->inflight_window;

   p->cfg = cfg;
   p->metrics = metrics;
   p->table = table;
   p->admission = admission;
   p->admission_ctx = admission_ctx;
   p->link = link;
   p->link_ctx = link_ctx;
   p->slots = bson_malloc0(n * sizeof *p->slots);
   p->free_slots = bson_malloc(n * sizeof *p->free_slots);
   for (size_t i = 0; i < n; i++) {
      p->free_slots[i] = (uint32_t)(n - 1 - i);
   }
   p->n_free = n;
   p->suspect.metrics = metrics;
   p->suspect.mqtt_version = cfg->mqtt_version;
   p->suspect.last_reason = -1;
   relay_pacer_init(&p->pacer, cfg->max_publish_rate, bson_get_monotonic_time());
   relay_metrics_set(metrics, RELAY_G_PUBLISH_RATE_LIMIT, cfg->max_publish_rate);
   return p;
}

void
relay_publisher_destroy(relay_publisher_t *p)
{
   if (!p) {
      return;
   }
   relay_suspect_cleanup(&p->suspect);
   bson_free(p->ended_id);
   bson_free(p->slots);
   bson_free(p->free_slots);
   bson_free(p);
}

bool
relay_publisher_connected(const relay_publisher_t *p)
{
   return p->connected;
}

void
relay_publisher_connect(relay_publisher_t *p, int64_t now)
{
   bson_error_t error;

   if (p->connected || p->connecting || now < p->retry_at_ms) {
      return;
   }
   if (p->link->connect(p->link_ctx, &error)) {
      p->connecting = true;
      return;
   }
   relay_log(RELAY_LOG_WARNING, "mqtt", "%s", error.message);
   p->retry_at_ms = now + relay_backoff_next(p->cfg->reconnect_min_ms, p->cfg->reconnect_max_ms,
                                             &p->connect_backoff_ms);
}

/* Queues the in-flight event of @e again, to be sent at @retry_at, unless admission says its
 * partition went to another member meanwhile (then it is left pending for that one). */
static void
retry_later(relay_publisher_t *p, relay_entity_t *e, int64_t retry_at)
{
   if (p->admission->keep_failed(p->admission_ctx, e)) {
      relay_table_failed(p->table, e, retry_at);
   }
}

static void
publish_failed(relay_publisher_t *p, relay_entity_t *e, int64_t now)
{
   int delay =
      relay_backoff_next(p->cfg->reconnect_min_ms, p->cfg->reconnect_max_ms, &p->backoff_ms);
   retry_later(p, e, now + delay);
   relay_metrics_add(p->metrics, RELAY_M_PUBLISH_FAILURES, 1);
}

static void
release(relay_publisher_t *p, slot_t *s)
{
   s->entity = NULL;
   p->free_slots[p->n_free++] = (uint32_t)(s - p->slots);
}

/* Everything in flight is abandoned and queued again: after a reconnect it is sent anew, in
 * order. A late answer to an abandoned publish finds its slot reused and is ignored. */
static void
requeue_inflight(relay_publisher_t *p, int64_t now)
{
   for (int i = 0; i < p->cfg->inflight_window; i++) {
      slot_t *s = &p->slots[i];
      if (s->entity) {
         relay_entity_t *e = s->entity;
         release(p, s);
         retry_later(p, e, now);
      }
   }
}

/* Drops the connection and connects again at once with a clean session: after a message was
 * dead-lettered for killing the connection, paho must forget the copy its session would send
 * again on the next reconnect (see relay_mqtt_clean_session()); after a publish timeout the
 * connection itself is no good. What was in flight is sent again on the new connection. */
static void
renew(relay_publisher_t *p, int64_t now)
{
   requeue_inflight(p, now);
   p->link->clean_session(p->link_ctx);
   p->connected = false;
   p->connecting = false;
   p->retry_at_ms = now;
   relay_metrics_set(p->metrics, RELAY_G_MQTT_CONNECTED, 0.0);
}

static void
renew_after_conviction(relay_publisher_t *p, int64_t now)
{
   relay_log(RELAY_LOG_INFO, "mqtt",
             "reconnecting with a clean session, so that the broker is not sent that message "
             "again");
   renew(p, now);
}

/* The window in effect (relay_mqtt_window(): the rule outbox-admin replay shares). */
static size_t
window(relay_publisher_t *p)
{
   return relay_mqtt_window(p->cfg->inflight_window, p->cfg->qos,
                            p->link->receive_max(p->link_ctx));
}

/* Sends the in-flight event of @e in a free slot. False when the client refused it (then
 * nothing more goes out this turn). */
static bool
send_one(relay_publisher_t *p, relay_entity_t *e, int64_t now)
{
   const char *poison = NULL;
   uint32_t slot = p->free_slots[--p->n_free];
   uint64_t tag;
   int rc;

   p->gen++;
   tag = ((uint64_t)p->gen << 32) | slot;
   rc = p->link->send(p->link_ctx, e, tag, &poison);
   if (poison || rc != 0) {
      p->free_slots[p->n_free++] = slot;
      if (poison) {
         relay_table_poisoned(p->table, e, poison);
         return true;
      }
      publish_failed(p, e, now);
      p->pause_until_ms = now + p->backoff_ms;
      return false;
   }
   p->slots[slot] = (slot_t){e, p->gen, now, bson_get_monotonic_time()};
   return true;
}

/* An event whose expiresAt passed before its turn (--expired-events): dropped (acknowledged
 * without a publish: archived when an archive is configured, then cleared) or dead-lettered;
 * true when so handled. With "publish" it goes out, without an expiry interval. */
static bool
expired(relay_publisher_t *p, relay_entity_t *e)
{
   const relay_event_t *ev = &e->inflight->ev;
   int64_t now = relay_wall_ms();
   if (p->cfg->expired_mode == RELAY_EXPIRED_PUBLISH || !relay_expiry_passed(ev, now)) {
      return false;
   }
   relay_metrics_add(p->metrics, RELAY_M_EXPIRED, 1);
   relay_log(
      RELAY_LOG_INFO, "mqtt", "event %s (seq %lld) of %s expired %lld ms before its turn: %s",
      ev->id, (long long)ev->seq, e->rendered, (long long)(now - ev->expires_ms),
      p->cfg->expired_mode == RELAY_EXPIRED_DROP ? "cleared without publishing" : "dead-lettered");
   if (p->cfg->expired_mode == RELAY_EXPIRED_DROP) {
      relay_table_acked(p->table, e);
   } else {
      relay_table_poisoned(p->table, e, "expired before it was published (expiresAt passed)");
   }
   return true;
}

/* Whether --max-publish-rate lets another event go; the gauge says when it holds one back. */
static bool
paced(relay_publisher_t *p)
{
   if (p->cfg->max_publish_rate == 0) {
      return false; /* no clock read per event without a limit */
   }
   bool held = !relay_pacer_ready(&p->pacer, bson_get_monotonic_time());
   relay_metrics_set(p->metrics, RELAY_G_PUBLISH_PACED, held && p->table->ready_head);
   return held;
}

void
relay_publisher_dispatch(relay_publisher_t *p, int64_t now)
{
   size_t limit = window(p);

   while (p->connected && p->admission->open(p->admission_ctx) && p->n_free > 0 &&
          p->table->inflight < limit && now >= p->pause_until_ms && !paced(p)) {
      relay_entity_t *e = relay_table_next_ready(p->table, now);
      const char *poison;

      if (!e) {
         break;
      }
      if (!p->admission->admit(p->admission_ctx, e)) {
         continue; /* parked until its partition's lease allows it */
      }
      if ((poison = relay_suspect_verdict(&p->suspect, e->inflight->ev.id))) {
         relay_table_poisoned(p->table, e, poison);
         renew_after_conviction(p, now);
         break;
      }
      if (expired(p, e)) {
         continue;
      }
      if (!send_one(p, e, now)) {
         break;
      }
      relay_pacer_spend(&p->pacer);
   }
}

int
relay_publisher_wait_ms(const relay_publisher_t *p)
{
   int64_t us = relay_pacer_wait_us(&p->pacer, bson_get_monotonic_time());
   return us > 0 && p->table->ready_head ? (int)((us + 999) / 1000) : -1;
}

/* Returns the slot the completion belongs to, or NULL if it is stale. */
static slot_t *
slot_of(relay_publisher_t *p, uint64_t tag)
{
   uint32_t idx = (uint32_t)(tag & 0xffffffffu);
   slot_t *s;
   if (idx >= (uint32_t)p->cfg->inflight_window) {
      return NULL;
   }
   s = &p->slots[idx];
   return s->entity && s->gen == (uint32_t)(tag >> 32) ? s : NULL;
}

/* MQTT 5 reason codes that say "this message will never be accepted": retrying cannot help,
 * so the event goes to the dead letters. */
static bool
is_poison_reason(int reason)
{
   return reason == 0x90 /* topic name invalid */ || reason == 0x95 /* packet too large */ ||
          reason == 0x99 /* payload format invalid */;
}

/* The latency histograms, per collection: commit (the event's stored time, the writer's
 * clock) to acknowledgement, and send to acknowledgement. Two atomic adds each. */
static void
observe_ack(relay_publisher_t *p, const relay_entity_t *e, int64_t sent_us)
{
   relay_series_t *series = relay_metrics_series(p->metrics);
   const relay_event_t *ev = &e->inflight->ev;
   if (!series) {
      return;
   }
   relay_series_observe(series, RELAY_H_PUBLISH_ROUND_TRIP, (size_t)e->label,
                        (double)(bson_get_monotonic_time() - sent_us) / 1e6);
   if (ev->has_time) {
      relay_series_observe(series, RELAY_H_COMMIT_TO_ACK, (size_t)e->label,
                           (double)(relay_wall_ms() - ev->time_ms) / 1e3);
   }
}

static void
on_publish_result(relay_publisher_t *p, const relay_mqtt_completion_t *c, int64_t now)
{
   slot_t *s = slot_of(p, c->tag);
   relay_entity_t *e;
   int64_t sent_us;

   if (!s) {
      return;
   }
   e = s->entity;
   sent_us = s->sent_us;
   if (c->kind == RELAY_MQTT_FAIL && c->code == RELAY_MQTT_CODE_INCOMPLETE && p->cfg->qos > 0 &&
       (!p->ended_id || s->sent_ms < p->ended_sent_ms)) {
      bson_free(p->ended_id);
      p->ended_id = bson_strdup(e->inflight->ev.id);
      p->ended_sent_ms = s->sent_ms;
   }
   release(p, s);
   if (c->kind == RELAY_MQTT_ACK) {
      observe_ack(p, e, sent_us);
      relay_suspect_acked(&p->suspect, e->inflight->ev.id);
      relay_table_acked(p->table, e);
      relay_metrics_add(p->metrics, RELAY_M_PUBLISHED, 1);
      p->backoff_ms = 0;
   } else if (is_poison_reason(c->reason)) {
      relay_table_poisoned(p->table, e, "refused by the broker");
   } else {
      relay_log(RELAY_LOG_DEBUG, "mqtt", "publish failed: code %d, reason 0x%02x", c->code,
                c->reason);
      publish_failed(p, e, now);
   }
}

/* The oldest unacknowledged publish: the one a broker that dropped the connection was
 * reading. */
static slot_t *
oldest_inflight(relay_publisher_t *p)
{
   slot_t *oldest = NULL;
   for (int i = 0; i < p->cfg->inflight_window; i++) {
      slot_t *s = &p->slots[i];
      if (s->entity && (!oldest || s->sent_ms < oldest->sent_ms ||
                        (s->sent_ms == oldest->sent_ms && s->gen < oldest->gen))) {
         oldest = s;
      }
   }
   return oldest;
}

/* Forgets the publish paho failed with its connection (a new connection began, or the loss
 * was counted). */
static void
forget_ended(relay_publisher_t *p)
{
   bson_free(p->ended_id);
   p->ended_id = NULL;
}

static void
lost(relay_publisher_t *p, int64_t now)
{
   /* QoS 0 publishes are never suspects: they count as done once written. */
   slot_t *oldest = p->cfg->qos > 0 ? oldest_inflight(p) : NULL;
   bool ended = p->ended_id && (!oldest || p->ended_sent_ms < oldest->sent_ms);
   const char *id = ended ? p->ended_id : oldest ? oldest->entity->inflight->ev.id : NULL;
   int64_t sent_ms = ended ? p->ended_sent_ms : oldest ? oldest->sent_ms : 0;
   bool convicted = relay_suspect_on_lost(&p->suspect, id, sent_ms,
                                          p->link->last_disconnect_reason(p->link_ctx), now);

   forget_ended(p);
   p->connected = false;
   p->connecting = true; /* paho reconnects by itself; a connect now is refused */
   /* Convicted while waiting to be sent again (paho failed it first): dispatch dead-letters
    * it (relay_suspect_verdict()) instead of sending it. */
   if (convicted && !ended) {
      relay_entity_t *e = oldest->entity;
      release(p, oldest);
      relay_table_poisoned(p->table, e, relay_suspect_verdict(&p->suspect, e->inflight->ev.id));
      renew_after_conviction(p, now);
   }
   requeue_inflight(p, now);
}

static void
on_connection(relay_publisher_t *p, const relay_mqtt_completion_t *c, int64_t now)
{
   switch (c->kind) {
   case RELAY_MQTT_CONNECTED:
      relay_log(RELAY_LOG_INFO, "mqtt", "connected to %s", p->cfg->mqtt_uri);
      if (p->ever_connected) {
         relay_metrics_add(p->metrics, RELAY_M_MQTT_RECONNECTS, 1);
      }
      p->ever_connected = true;
      p->connected = true;
      forget_ended(p);
      relay_suspect_on_connected(&p->suspect, now);
      p->connecting = false;
      p->connect_backoff_ms = 0;
      p->pause_until_ms = 0;
      break;
   case RELAY_MQTT_LOST:
      lost(p, now);
      break;
   case RELAY_MQTT_CONNECT_FAILED:
      /* paho retries by itself only after a connection was lost, not after a failed
       * first connect. */
      p->connecting = false;
      p->retry_at_ms = now + relay_backoff_next(p->cfg->reconnect_min_ms, p->cfg->reconnect_max_ms,
                                                &p->connect_backoff_ms);
      break;
   default:
      break;
   }
   relay_metrics_set(p->metrics, RELAY_G_MQTT_CONNECTED, p->connected ? 1.0 : 0.0);
}

void
relay_publisher_complete(relay_publisher_t *p, const relay_mqtt_completion_t *c, int64_t now)
{
   if (c->kind == RELAY_MQTT_ACK || c->kind == RELAY_MQTT_FAIL) {
      on_publish_result(p, c, now);
   } else {
      on_connection(p, c, now);
   }
}

/* The oldest publish in flight (@oldest) had no acknowledgement within the publish timeout:
 * the connection is no good (RabbitMQ answers nothing more on a connection once it failed a
 * message over its max_message_size, and keeps it open). It is dropped and made anew, and the
 * oldest publish takes a strike as if the broker had dropped it (publish/suspect.c). */
static void
timed_out(relay_publisher_t *p, slot_t *oldest, int64_t now)
{
   relay_entity_t *e = oldest->entity;
   const char *id = p->cfg->qos > 0 ? e->inflight->ev.id : NULL;

   relay_log(RELAY_LOG_WARNING, "mqtt",
             "no acknowledgement of event %s within %d ms (publish-timeout-ms): dropping the "
             "connection and reconnecting with a clean session",
             e->inflight->ev.id, p->cfg->publish_timeout_ms);
   relay_metrics_add(p->metrics, RELAY_M_PUBLISH_FAILURES, 1);
   if (relay_suspect_on_timeout(&p->suspect, id, p->cfg->publish_timeout_ms, now)) {
      release(p, oldest);
      relay_table_poisoned(p->table, e, relay_suspect_verdict(&p->suspect, e->inflight->ev.id));
   }
   renew(p, now);
}

void
relay_publisher_check_timeouts(relay_publisher_t *p, int64_t now)
{
   slot_t *oldest;

   relay_suspect_tick(&p->suspect, p->connected, now);
   oldest = oldest_inflight(p);
   if (oldest && now - oldest->sent_ms > p->cfg->publish_timeout_ms) {
      timed_out(p, oldest, now);
   }
}
