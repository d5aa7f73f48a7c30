/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The MQTT side of the main loop: turns ready events into messages within the in-flight
 * window and applies the broker's answers to the table.
 */
#include <string.h>

#include <MQTTAsync.h>

#include "group/gate.h"
#include "util/log.h"
#include "relay-private.h"
#include "mqtt/render.h"
#include "mqtt/suspect.h"

/* An in-flight publish with no answer for this long is presumed lost and sent again. paho
 * normally answers every publish (with -11 when a session is dropped); this only guards
 * against a stall. */
#define PUBLISH_TIMEOUT_MS 30000

/* Percent-encodes @s once, for every message after. */
static char *
encode(const char *s, size_t len)
{
   bson_string_t *out = bson_string_new(NULL);
   relay_percent_encode(out, s, len);
   return bson_string_free(out, false);
}

static void renew(relay_t *r, int64_t now);

bool
relay_publish_init(relay_t *r, bson_error_t *error)
{
   size_t n = (size_t)r->cfg->inflight_window;

   r->mqtt = relay_mqtt_new(r->cfg, r->group.client_id, error);
   if (!r->mqtt) {
      return false;
   }
   r->slots = bson_malloc0(n * sizeof *r->slots);
   r->free_slots = bson_malloc(n * sizeof *r->free_slots);
   for (size_t i = 0; i < n; i++) {
      r->free_slots[i] = (uint32_t)(n - 1 - i);
   }
   r->n_free = n;
   r->encoded_db = encode(r->cfg->database, strlen(r->cfg->database));
   r->encoded_colls = bson_malloc0(r->cfg->n_collections * sizeof *r->encoded_colls);
   for (size_t i = 0; i < r->cfg->n_collections; i++) {
      r->encoded_colls[i] = encode(r->cfg->collections[i], strlen(r->cfg->collections[i]));
   }
   return true;
}

void
relay_publish_cleanup(relay_t *r)
{
   relay_mqtt_destroy(r->mqtt);
   r->mqtt = NULL;
   relay_suspect_cleanup(r);
   bson_free(r->slots);
   bson_free(r->free_slots);
   r->slots = NULL;
   r->free_slots = NULL;
   for (size_t i = 0; r->encoded_colls && i < r->cfg->n_collections; i++) {
      bson_free(r->encoded_colls[i]);
   }
   bson_free(r->encoded_colls);
   bson_free(r->encoded_db);
   r->encoded_colls = NULL;
   r->encoded_db = NULL;
}

void
relay_publish_connect(relay_t *r, int64_t now)
{
   bson_error_t error;

   if (r->mqtt_connected || r->mqtt_connecting || now < r->mqtt_retry_at_ms) {
      return;
   }
   if (relay_mqtt_connect(r->mqtt, &error)) {
      r->mqtt_connecting = true;
      return;
   }
   relay_log(RELAY_LOG_WARNING, "mqtt", "%s", error.message);
   r->mqtt_retry_at_ms = now + relay_backoff_next(r->cfg, &r->mqtt_backoff_ms);
}

/* MQTT strings (topic, user property names and values) carry a 16-bit length: a longer one
 * is written with a truncated length, and the broker drops the connection (malformed
 * packet) on every attempt. */
#define MQTT_STRING_MAX 65535

static bool
props_fit(const char *const *props, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      if (strlen(props[i]) > MQTT_STRING_MAX) {
         return false;
      }
   }
   return true;
}

/* Builds and sends the in-flight event of @e. Returns the paho code; a message that can
 * never be sent (too large, a string MQTT cannot carry, data JSON cannot carry) is reported
 * as poison through *@poison instead. */
/* The entity id percent-encoded like the topic, made on its first message and kept with the
 * entity: topics, the entity-id property and binary mode's subject use it. */
static relay_str_t
encoded_id(relay_entity_t *e)
{
   if (!e->encoded) {
      e->encoded = encode(e->rendered, e->rendered_len);
      e->encoded_len = strlen(e->encoded); /* encoding leaves no NUL */
   }
   return (relay_str_t){e->encoded, e->encoded_len};
}

static int
send_event(relay_t *r, relay_entity_t *e, uint64_t tag, const char **poison)
{
   const relay_config_t *cfg = r->cfg;
   const relay_event_t *ev = &e->inflight->ev;
   const char *coll = r->encoded_colls[e->coll];
   relay_str_t entity = encoded_id(e);
   /* Every value is encoded already (the type needs none: [A-Za-z0-9._-]). */
   relay_template_vars_t vars = {{r->encoded_db, strlen(r->encoded_db)},
                                 {coll, strlen(coll)},
                                 entity,
                                 {ev->type, strlen(ev->type)}};
   size_t topic_len, source_len;
   char *topic = relay_template_render_encoded(cfg->topic_template, &vars, &topic_len);
   char *source = relay_template_render_encoded(cfg->source_template, &vars, &source_len);
   relay_str_t subject = {e->rendered, e->rendered_len};
   bool binary = cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version == 5;
   size_t len = 0;
   char *payload =
       binary ? relay_data_json(ev, &len) : relay_cloudevent_json(ev, source, subject, &len);
   char seq[24], tbuf[40];
   const char *props[2 * 12];
   size_t n = 0;
   relay_mqtt_message_t msg = {topic, payload, len, NULL, props, 0};
   int rc = 0;

   relay_format_int64(ev->seq, seq);
   if (cfg->user_properties & RELAY_PROP_EVENT_ID) {
      props[n++] = "event-id", props[n++] = ev->id;
   }
   if (cfg->user_properties & RELAY_PROP_EVENT_TYPE) {
      props[n++] = "event-type", props[n++] = ev->type;
   }
   if (cfg->user_properties & RELAY_PROP_ENTITY_ID) {
      /* Percent-encoded like the topic: user properties are UTF-8 strings and an id may
       * hold anything. */
      props[n++] = "entity-id", props[n++] = entity.str;
   }
   /* In binary mode seq is also the CloudEvents extension attribute: always sent there. */
   if ((cfg->user_properties & RELAY_PROP_SEQ) || binary) {
      props[n++] = "seq", props[n++] = seq;
   }
   if (binary) {
      /* CloudEvents MQTT binding, binary mode: attributes as user properties. */
      props[n++] = "specversion", props[n++] = "1.0";
      props[n++] = "id", props[n++] = ev->id;
      props[n++] = "source", props[n++] = source;
      props[n++] = "type", props[n++] = ev->type;
      props[n++] = "subject", props[n++] = entity.str;
      if (ev->has_time) {
         relay_format_time(ev->time_ms, tbuf, sizeof tbuf);
         props[n++] = "time", props[n++] = tbuf;
      }
      msg.content_type = "application/json";
   } else {
      msg.content_type = "application/cloudevents+json";
   }
   msg.n_user_props = n / 2;
   if (!payload) {
      /* libbson's JSON writer refuses invalid UTF-8 (in the entity id, the subject, or the
       * data): sending would publish an empty payload and then clear the event. */
      *poison = "event cannot be written as JSON (invalid UTF-8 in the entity id or data)";
   } else if (topic_len > MQTT_STRING_MAX) {
      *poison = "topic longer than MQTT allows (65535 bytes)";
   } else if (cfg->mqtt_version == 5 && !props_fit(props, n)) {
      *poison = "user property longer than MQTT allows (65535 bytes)";
   } else if (len + topic_len > cfg->max_message_bytes) {
      *poison = "message larger than max-message-bytes";
   } else if ((*poison = relay_mqtt_check_size(r->mqtt, &msg))) {
      /* The broker would drop the connection on it, every time. */
   } else {
      rc = relay_mqtt_publish(r->mqtt, &msg, tag);
   }
   bson_free(payload);
   bson_free(topic);
   bson_free(source);
   return rc;
}

/* Queues the in-flight event of @e again, to be sent at @retry_at, unless its partition went
 * to another member meanwhile (then it is left pending for that one). */
static void
retry_later(relay_t *r, relay_entity_t *e, int64_t retry_at)
{
   if (relay_gate_keep_failed(r, e)) {
      relay_table_failed(&r->table, e, retry_at);
   }
}

static void
publish_failed(relay_t *r, relay_entity_t *e, int64_t now)
{
   int delay = relay_backoff_next(r->cfg, &r->publish_backoff_ms);
   retry_later(r, e, now + delay);
   relay_metrics_add(r->metrics, RELAY_M_PUBLISH_FAILURES, 1);
}

/* The window in effect: the configured one, kept below the broker's Receive Maximum (QoS 0
 * needs no acknowledgement from the broker, so only our own window applies). */
static size_t
window(relay_t *r)
{
   size_t w = (size_t)r->cfg->inflight_window;
   int rm = relay_mqtt_receive_max(r->mqtt);
   if (r->cfg->qos > 0 && rm > 0 && (size_t)rm < w) {
      w = (size_t)rm;
   }
   return w;
}

void
relay_publish_dispatch(relay_t *r, int64_t now)
{
   size_t limit = window(r);

   /* Nothing new goes out while MongoDB refuses the clears (writer.c). */
   while (r->mqtt_connected && !relay_writer_refused(r->writer) && r->n_free > 0 &&
          r->table.inflight < limit && now >= r->publish_pause_until_ms) {
      relay_entity_t *e = relay_table_next_ready(&r->table, now);
      const char *poison = NULL;
      uint32_t slot;
      uint64_t tag;
      int rc;

      if (!e) {
         break;
      }
      if (!relay_gate_admit(r, e)) {
         continue; /* parked until its partition's lease allows it */
      }
      if ((poison = relay_suspect_verdict(r, e))) {
         relay_table_poisoned(&r->table, e, poison);
         renew(r, now);
         break;
      }
      slot = r->free_slots[--r->n_free];
      r->gen++;
      tag = ((uint64_t)r->gen << 32) | slot;
      rc = send_event(r, e, tag, &poison);
      if (poison || rc != MQTTASYNC_SUCCESS) {
         r->free_slots[r->n_free++] = slot;
         if (poison) {
            relay_table_poisoned(&r->table, e, poison);
            continue;
         }
         relay_log(RELAY_LOG_WARNING, "mqtt", "publish refused by the client: %s",
                   MQTTAsync_strerror(rc));
         publish_failed(r, e, now);
         r->publish_pause_until_ms = now + r->publish_backoff_ms;
         break;
      }
      r->slots[slot] = (relay_slot_t){e, r->gen, now, bson_get_monotonic_time()};
   }
}

/* Returns the slot the completion belongs to, or NULL if it is stale. */
static relay_slot_t *
slot_of(relay_t *r, uint64_t tag)
{
   uint32_t idx = (uint32_t)(tag & 0xffffffffu);
   relay_slot_t *s;
   if (idx >= (uint32_t)r->cfg->inflight_window) {
      return NULL;
   }
   s = &r->slots[idx];
   return s->entity && s->gen == (uint32_t)(tag >> 32) ? s : NULL;
}

static void
release(relay_t *r, relay_slot_t *s)
{
   s->entity = NULL;
   r->free_slots[r->n_free++] = (uint32_t)(s - r->slots);
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
observe_ack(relay_t *r, const relay_entity_t *e, int64_t sent_us)
{
   relay_series_t *series = relay_metrics_series(r->metrics);
   const relay_event_t *ev = &e->inflight->ev;
   if (!series) {
      return;
   }
   relay_series_observe(series, RELAY_H_PUBLISH_ROUND_TRIP, (size_t)e->coll,
                        (double)(bson_get_monotonic_time() - sent_us) / 1e6);
   if (ev->has_time) {
      relay_series_observe(series, RELAY_H_COMMIT_TO_ACK, (size_t)e->coll,
                           (double)(relay_wall_ms() - ev->time_ms) / 1e3);
   }
}

static void
on_publish_result(relay_t *r, const relay_mqtt_completion_t *c, int64_t now)
{
   relay_slot_t *s = slot_of(r, c->tag);
   relay_entity_t *e;
   int64_t sent_us;

   if (!s) {
      return;
   }
   e = s->entity;
   sent_us = s->sent_us;
   release(r, s);
   if (c->kind == RELAY_MQTT_ACK) {
      observe_ack(r, e, sent_us);
      relay_suspect_acked(r, e);
      relay_table_acked(&r->table, e);
      relay_metrics_add(r->metrics, RELAY_M_PUBLISHED, 1);
      r->publish_backoff_ms = 0;
   } else if (is_poison_reason(c->reason)) {
      relay_table_poisoned(&r->table, e, "refused by the broker");
   } else {
      relay_log(RELAY_LOG_DEBUG, "mqtt", "publish failed: code %d, reason 0x%02x", c->code,
                c->reason);
      publish_failed(r, e, now);
   }
}

/* Everything in flight is abandoned and queued again: after a reconnect it is sent anew, in
 * order. A late answer to an abandoned publish finds its slot reused and is ignored. */
static void
requeue_inflight(relay_t *r, int64_t now)
{
   for (int i = 0; i < r->cfg->inflight_window; i++) {
      relay_slot_t *s = &r->slots[i];
      if (s->entity) {
         relay_entity_t *e = s->entity;
         release(r, s);
         retry_later(r, e, now);
      }
   }
}

/* After a message was dead-lettered for killing the connection: paho must forget the copy
 * its session would send again on the next reconnect (see relay_mqtt_clean_session()). */
static void
renew(relay_t *r, int64_t now)
{
   relay_log(RELAY_LOG_INFO, "mqtt",
             "reconnecting with a clean session, so that the broker is not sent that message "
             "again");
   requeue_inflight(r, now);
   relay_mqtt_clean_session(r->mqtt);
   r->mqtt_connected = false;
   r->mqtt_connecting = false;
   r->mqtt_retry_at_ms = now;
}

static void
lost(relay_t *r, int64_t now)
{
   relay_slot_t *convicted = relay_suspect_on_lost(r, now);
   r->mqtt_connected = false;
   r->mqtt_connecting = true; /* paho reconnects by itself; a connect now is refused */
   if (convicted) {
      relay_entity_t *e = convicted->entity;
      release(r, convicted);
      relay_table_poisoned(&r->table, e, relay_suspect_verdict(r, e));
      renew(r, now);
   }
   requeue_inflight(r, now);
}

static void
on_connection(relay_t *r, const relay_mqtt_completion_t *c, int64_t now)
{
   switch (c->kind) {
   case RELAY_MQTT_CONNECTED:
      relay_log(RELAY_LOG_INFO, "mqtt", "connected to %s", r->cfg->mqtt_uri);
      if (r->mqtt_ever_connected) {
         relay_metrics_add(r->metrics, RELAY_M_MQTT_RECONNECTS, 1);
      }
      r->mqtt_ever_connected = true;
      r->mqtt_connected = true;
      relay_suspect_on_connected(r, now);
      r->mqtt_connecting = false;
      r->mqtt_backoff_ms = 0;
      r->publish_pause_until_ms = 0;
      break;
   case RELAY_MQTT_LOST:
      lost(r, now);
      break;
   case RELAY_MQTT_CONNECT_FAILED:
      /* paho retries by itself only after a connection was lost, not after a failed
       * first connect. */
      r->mqtt_connecting = false;
      r->mqtt_retry_at_ms = now + relay_backoff_next(r->cfg, &r->mqtt_backoff_ms);
      break;
   default:
      break;
   }
   relay_metrics_set(r->metrics, RELAY_G_MQTT_CONNECTED, r->mqtt_connected ? 1.0 : 0.0);
}

void
relay_publish_handle(relay_t *r, int wait_ms, int64_t now)
{
   relay_mqtt_completion_t cs[256];
   size_t n = relay_mqtt_wait(r->mqtt, cs, 256, wait_ms);

   for (size_t i = 0; i < n; i++) {
      if (cs[i].kind == RELAY_MQTT_ACK || cs[i].kind == RELAY_MQTT_FAIL) {
         on_publish_result(r, &cs[i], now);
      } else {
         on_connection(r, &cs[i], now);
      }
   }
}

void
relay_publish_check_timeouts(relay_t *r, int64_t now)
{
   relay_suspect_tick(r, now);
   for (int i = 0; i < r->cfg->inflight_window; i++) {
      relay_slot_t *s = &r->slots[i];
      if (s->entity && now - s->sent_ms > PUBLISH_TIMEOUT_MS) {
         relay_log(RELAY_LOG_WARNING, "mqtt", "no acknowledgement after %d ms: sending again",
                   PUBLISH_TIMEOUT_MS);
         publish_failed(r, s->entity, now);
         release(r, s);
      }
   }
}
