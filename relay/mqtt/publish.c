/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Turning the in-flight event of an entity into one MQTT message (through the renderer it
 * shares with outbox-admin replay, mqtt/message.h) and handing it to paho: the
 * publisher's link (publish/publisher.h) calls it through relay.c. A message that can never
 * be sent is reported as poison, not sent. Its own state is the percent-encoded database and
 * collection names. It also writes one field of the table's entity: e->encoded, the id
 * percent-encoded, made on the entity's first message and kept with it; the table frees it
 * with the entity (stream/table.c). Main thread only.
 */
#include "mqtt/publish.h"

#include <string.h>

#include <MQTTAsync.h>

#include "mqtt/message.h"
#include "util/log.h"
#include "util/util.h"

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
 * never holding it up: counted, and logged with each reason (the contract's rules) and how
 * many headers it left out. */
static void
note_dropped_headers(relay_sender_t *s, const relay_entity_t *e, const relay_headers_t *h)
{
   bson_string_t *why;

   if (!h->dropped) {
      return;
   }
   relay_metrics_add(s->metrics, RELAY_M_HEADERS_DROPPED, h->dropped);
   why = bson_string_new(NULL);
   for (size_t i = 0; i < h->n_reasons; i++) {
      relay_metrics_add_left_out(s->metrics, h->reasons[i].reason, h->reasons[i].n);
      bson_string_append_printf(why, "%s%zu: %s", i ? "; " : "", h->reasons[i].n,
                                h->reasons[i].reason);
   }
   relay_log(RELAY_LOG_WARNING, "mqtt", "event %s (seq %lld) of %s: %zu header(s) left out (%s)",
             e->inflight->ev.id, (long long)e->inflight->ev.seq, e->rendered, h->dropped, why->str);
   bson_string_free(why, true);
}

/* Builds (mqtt/message.h, the renderer outbox-admin replay shares) and sends the in-flight
 * event of @e. Returns the paho code; a message that can never be sent (the contract's
 * MESSAGE rules: too large, data JSON cannot carry; or the broker's limits) is reported as
 * poison through *@poison instead. */
static int
send_event(relay_sender_t *s, relay_entity_t *e, uint64_t tag, const char **poison)
{
   const relay_event_t *ev = &e->inflight->ev;
   const char *coll = s->encoded_colls[e->coll];
   char part[24];
   relay_message_in_t in = {
      .vars = {.db = {s->encoded_db, strlen(s->encoded_db)},
               .collection = {coll, strlen(coll)},
               .id = encoded_id(e),
               .partition = {part, relay_format_int64(e->part, part)}},
      .subject = {e->rendered, e->rendered_len},
      .replay = false,
      .now_ms = relay_wall_ms(),
   };
   relay_message_t m;
   int rc = 0;

   relay_message_render(s->cfg, ev, &in, &m);
   note_dropped_headers(s, e, &m.headers);
   if ((*poison = m.poison)) {
      /* Never sendable: the caller dead-letters it with this reason. */
   } else if ((*poison = relay_mqtt_check_size(s->mqtt, &m.msg))) {
      /* The broker would drop the connection on it, every time. */
   } else {
      rc = relay_mqtt_publish(s->mqtt, &m.msg, tag);
   }
   relay_message_cleanup(&m);
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
