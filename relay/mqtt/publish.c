/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Turning the in-flight event of an entity into one MQTT message (topic, payload, user
 * properties, by the configured templates and payload mode) and handing it to paho: the
 * publisher's link (publish/publisher.h) calls it through relay.c. A message that can never
 * be sent is reported as poison, not sent. Its own state is the percent-encoded database and
 * collection names. It also writes one field of the table's entity: e->encoded, the id
 * percent-encoded, made on the entity's first message and kept with it; the table frees it
 * with the entity (stream/table.c). Main thread only.
 */
#include "mqtt/publish.h"

#include <string.h>

#include <MQTTAsync.h>

#include "mqtt/render.h"
#include "util/log.h"

struct relay_sender_t {
   const relay_config_t *cfg;
   relay_mqtt_t *mqtt;
   relay_metrics_t *metrics; /* may be NULL */
   char *encoded_db;         /* the database name percent-encoded for templates */
   char **encoded_colls;     /* the same for each collection */
};

/* Percent-encodes @s once, for every message after. */
static char *
encode(const char *s, size_t len)
{
   bson_string_t *out = bson_string_new(NULL);
   relay_percent_encode(out, s, len);
   return bson_string_free(out, false);
}

relay_sender_t *
relay_sender_new(const relay_config_t *cfg, relay_mqtt_t *mqtt, relay_metrics_t *metrics)
{
   relay_sender_t *s = bson_malloc0(sizeof *s);
   s->cfg = cfg;
   s->mqtt = mqtt;
   s->metrics = metrics;
   s->encoded_db = encode(cfg->database, strlen(cfg->database));
   s->encoded_colls = bson_malloc0(cfg->n_collections * sizeof *s->encoded_colls);
   for (size_t i = 0; i < cfg->n_collections; i++) {
      s->encoded_colls[i] = encode(cfg->collections[i], strlen(cfg->collections[i]));
   }
   return s;
}

void
relay_sender_destroy(relay_sender_t *s)
{
   if (!s) {
      return;
   }
   for (size_t i = 0; i < s->cfg->n_collections; i++) {
      bson_free(s->encoded_colls[i]);
   }
   bson_free(s->encoded_colls);
   bson_free(s->encoded_db);
   bson_free(s);
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

/* Headers MQTT or CloudEvents cannot carry (mqtt/headers.h) are left out of the message,
 * never holding it up: counted, and logged with the first reason. */
static void
note_dropped_headers(relay_sender_t *s, const relay_entity_t *e, const relay_headers_t *h)
{
   if (h->dropped) {
      relay_metrics_add(s->metrics, RELAY_M_HEADERS_DROPPED, h->dropped);
      relay_log(RELAY_LOG_WARNING, "mqtt", "event %s (seq %lld) of %s: %zu header(s) left out: %s",
                e->inflight->ev.id, (long long)e->inflight->ev.seq, e->rendered, h->dropped,
                h->reason);
   }
}

/* Builds and sends the in-flight event of @e. Returns the paho code; a message that can
 * never be sent (too large, a string MQTT cannot carry, data JSON cannot carry) is reported
 * as poison through *@poison instead. */
static int
send_event(relay_sender_t *s, relay_entity_t *e, uint64_t tag, const char **poison)
{
   const relay_config_t *cfg = s->cfg;
   const relay_event_t *ev = &e->inflight->ev;
   const char *coll = s->encoded_colls[e->coll];
   relay_str_t entity = encoded_id(e);
   /* Every value is encoded already (the type needs none: [A-Za-z0-9._-]). */
   char part[24];
   relay_template_vars_t vars = {{s->encoded_db, strlen(s->encoded_db)},
                                 {coll, strlen(coll)},
                                 entity,
                                 {ev->type, strlen(ev->type)},
                                 {part, relay_format_int64(e->part, part)}};
   size_t topic_len, source_len;
   char *topic = relay_template_render_encoded(cfg->topic_template, &vars, &topic_len);
   char *source = relay_template_render_encoded(cfg->source_template, &vars, &source_len);
   relay_str_t subject = {e->rendered, e->rendered_len};
   bool binary = cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version == 5;
   size_t len = 0;
   relay_headers_t headers;
   relay_headers_read(ev, &headers);
   char *payload = binary ? relay_data_json(ev, &len)
                          : relay_cloudevent_json(ev, source, subject, &headers, &len);
   char seq[24], tbuf[40];
   const char *props[2 * RELAY_MQTT_MAX_USER_PROPS];
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
   n = relay_headers_append_props(&headers, props, n);
   note_dropped_headers(s, e, &headers);
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
   } else if ((*poison = relay_mqtt_check_size(s->mqtt, &msg))) {
      /* The broker would drop the connection on it, every time. */
   } else {
      rc = relay_mqtt_publish(s->mqtt, &msg, tag);
   }
   bson_free(payload);
   bson_free(topic);
   bson_free(source);
   return rc;
}

int
relay_sender_send(relay_sender_t *s, relay_entity_t *e, uint64_t tag, const char **poison)
{
   int rc = send_event(s, e, tag, poison);
   if (!*poison && rc != MQTTASYNC_SUCCESS) {
      relay_log(RELAY_LOG_WARNING, "mqtt", "publish refused by the client: %s",
                MQTTAsync_strerror(rc));
   }
   return rc;
}
