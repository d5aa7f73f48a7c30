/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A message the broker drops the connection on, every time. A broker that refuses a packet as
 * too large (mosquitto's max_packet_size with MQTT 3.1.1, or any broker that does not announce
 * its limit in an MQTT 5 CONNACK) closes the connection without saying why; the relay would
 * reconnect and send the same message again, forever, and every other event behind it would
 * wait.
 *
 * The rule: a broker reads packets in order and acknowledges each before it reads the next,
 * so when the connection drops, the oldest publish still unacknowledged (and sent shortly
 * before) is the one it was reading: the suspect. A suspect that is the oldest unacknowledged
 * publish at RELAY_SUSPECT_STRIKES losses in a row (or still waiting to be sent again, when a
 * loss finds nothing in flight: paho resends a persistent session's publishes itself) is
 * dead-lettered with a reason. Its acknowledgement clears it. QoS 0 publishes are never
 * suspects: they count as done once written.
 *
 * The connection's health: RELAY_SUSPECT_STRIKES connections in a row that were lost within
 * RELAY_STABLE_MS of connecting make /healthz fail ("keeps dropping"), until one stays up that
 * long.
 *
 * Main thread only, like the rest of relay_t.
 */
#include <string.h>

#include "mqtt/suspect.h"
#include "util/log.h"

/* A loss later than this after the send is not blamed on the message (a broker that cannot
 * take a packet drops the connection as soon as it has read it). */
#define BLAME_WINDOW_MS 10000

/* What is known of why, for the dead letter: the broker's MQTT 5 DISCONNECT reason when it
 * gave one (issue 29: a '$' topic was dead-lettered as "larger than it accepts?"); otherwise
 * only that it closed the connection, and what commonly makes a broker do that. */
static const char *
convicted_reason(relay_t *r)
{
   int code = relay_mqtt_last_disconnect_reason(r->mqtt);
   const char *text = code >= 0 ? relay_mqtt_disconnect_text(code) : NULL;
   if (code >= 0) {
      return relay_mqtt_keep_reason(
         r->mqtt, bson_strdup_printf("the broker closed the connection each time this message "
                                     "was sent (%d times in a row), the last time with MQTT 5 "
                                     "DISCONNECT reason 0x%02X (%s)",
                                     RELAY_SUSPECT_STRIKES, code, text ? text : "unknown code"));
   }
   return relay_mqtt_keep_reason(
      r->mqtt, bson_strdup_printf("the broker closed the connection each time this message was "
                                  "sent (%d times in a row) without giving a reason%s: a message "
                                  "larger than it accepts does this (then set max-message-bytes "
                                  "to its limit), and so does a topic, payload or permission it "
                                  "refuses (see the broker's log)",
                                  RELAY_SUSPECT_STRIKES,
                                  r->cfg->mqtt_version == 5 ? "" : " (MQTT 3.1.1 has none)"));
}

static relay_slot_t *
oldest_inflight(relay_t *r)
{
   relay_slot_t *oldest = NULL;
   for (int i = 0; i < r->cfg->inflight_window; i++) {
      relay_slot_t *s = &r->slots[i];
      if (s->entity && (!oldest || s->sent_ms < oldest->sent_ms ||
                        (s->sent_ms == oldest->sent_ms && s->gen < oldest->gen))) {
         oldest = s;
      }
   }
   return oldest;
}

static void
forget(relay_t *r)
{
   bson_free(r->suspect_id);
   r->suspect_id = NULL;
   r->suspect_strikes = 0;
}

static bool
convicted(const relay_t *r)
{
   return r->suspect_id && r->suspect_strikes >= RELAY_SUSPECT_STRIKES;
}

/* Returns the slot to dead-letter now (the convicted suspect in flight), or NULL. */
relay_slot_t *
relay_suspect_on_lost(relay_t *r, int64_t now)
{
   relay_slot_t *s = r->cfg->qos > 0 ? oldest_inflight(r) : NULL;
   const char *id = s && now - s->sent_ms <= BLAME_WINDOW_MS ? s->entity->inflight->ev.id : NULL;

   if (now - r->mqtt_up_since_ms < RELAY_STABLE_MS) {
      r->mqtt_short_connections++;
   } else {
      r->mqtt_short_connections = 0;
   }
   relay_metrics_set(r->metrics, RELAY_G_MQTT_SHORT_CONNECTIONS, r->mqtt_short_connections);
   if (id && r->suspect_id && !strcmp(id, r->suspect_id)) {
      r->suspect_strikes++;
   } else if (id) {
      forget(r);
      r->suspect_id = bson_strdup(id);
      r->suspect_strikes = 1;
   } else if (r->suspect_id) {
      r->suspect_strikes++; /* not sent again yet: paho resent its own copy */
   }
   if (r->suspect_id) {
      relay_log(RELAY_LOG_DEBUG, "mqtt", "connection lost with event %s unacknowledged (%d)",
                r->suspect_id, r->suspect_strikes);
   }
   return convicted(r) && id && !strcmp(id, r->suspect_id) ? s : NULL;
}

const char *
relay_suspect_verdict(relay_t *r, const relay_entity_t *e)
{
   if (!convicted(r) || strcmp(e->inflight->ev.id, r->suspect_id) != 0) {
      return NULL;
   }
   forget(r);
   return convicted_reason(r);
}

void
relay_suspect_acked(relay_t *r, const relay_entity_t *e)
{
   if (r->suspect_id && !strcmp(e->inflight->ev.id, r->suspect_id)) {
      forget(r);
   }
}

void
relay_suspect_on_connected(relay_t *r, int64_t now)
{
   r->mqtt_up_since_ms = now;
}

void
relay_suspect_tick(relay_t *r, int64_t now)
{
   if (r->mqtt_connected && r->mqtt_short_connections > 0 &&
       now - r->mqtt_up_since_ms >= RELAY_STABLE_MS) {
      r->mqtt_short_connections = 0;
      relay_metrics_set(r->metrics, RELAY_G_MQTT_SHORT_CONNECTIONS, 0);
   }
}

void
relay_suspect_cleanup(relay_t *r)
{
   forget(r);
}
