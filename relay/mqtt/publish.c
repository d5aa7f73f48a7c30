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
   relay_namespaces_t *ns;   /* the watched set: names by an entity's coll */
   /* Each namespace's database and collection names percent-encoded for templates, by
    * namespace index, made on first use (two short strings per namespace met). */
   char **encoded_db;
   char **encoded_coll;
   int n_encoded;
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
relay_sender_new(const relay_config_t *cfg, relay_namespaces_t *ns, relay_mqtt_t *mqtt,
                 relay_metrics_t *metrics)
{
   relay_sender_t *s = bson_malloc0(sizeof *s);
   s->cfg = cfg;
   s->ns = ns;
   s->mqtt = mqtt;
   s->metrics = metrics;
   return s;
}

/* The encoded names of namespace @i: {db} and {collection} carry the event's own. */
static void
encoded_names(relay_sender_t *s, int i, const char **db, const char **coll)
{
   if (i >= s->n_encoded) {
      int n = s->n_encoded ? s->n_encoded : 16;
      while (n <= i) {
         n *= 2;
      }
      s->encoded_db = bson_realloc(s->encoded_db, (size_t)n * sizeof(char *));
      s->encoded_coll = bson_realloc(s->encoded_coll, (size_t)n * sizeof(char *));
      memset(s->encoded_db + s->n_encoded, 0, (size_t)(n - s->n_encoded) * sizeof(char *));
      memset(s->encoded_coll + s->n_encoded, 0, (size_t)(n - s->n_encoded) * sizeof(char *));
      s->n_encoded = n;
   }
   if (!s->encoded_db[i]) {
      relay_ns_t ns = {"?", "?", "?", 0, false};
      relay_namespaces_get(s->ns, i, &ns);
      s->encoded_db[i] = encode(ns.db, strlen(ns.db));
      s->encoded_coll[i] = encode(ns.coll, strlen(ns.coll));
   }
   *db = s->encoded_db[i];
   *coll = s->encoded_coll[i];
}

void
relay_sender_destroy(relay_sender_t *s)
{
   if (!s) {
      return;
   }
   for (int i = 0; i < s->n_encoded; i++) {
      bson_free(s->encoded_db[i]);
      bson_free(s->encoded_coll[i]);
   }
   bson_free(s->encoded_db);
   bson_free(s->encoded_coll);
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
   const char *db, *coll;
   encoded_names(s, e->coll, &db, &coll); /* {db} and {collection}: the event's own */
   char part[24];
   relay_message_in_t in = {
      .vars = {.db = {db, strlen(db)},
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
