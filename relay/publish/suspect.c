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
 * A publish that is not acknowledged within the publish timeout is a loss too: the publisher
 * drops that connection and reconnects, and the oldest unacknowledged publish takes the strike
 * whatever its age. RabbitMQ's MQTT plugin neither acknowledges a message over its
 * max_message_size nor closes the connection, and acknowledges nothing sent on it afterwards:
 * without this the same message went out again on the same connection, forever.
 *
 * The connection's health: RELAY_SUSPECT_STRIKES connections in a row that were lost within
 * RELAY_STABLE_MS of connecting make /healthz fail ("keeps dropping"), until one stays up that
 * long.
 *
 * Main thread only: the state is the publisher's (relay_suspect_t).
 */
#include <string.h>

#include <bson/bson.h>

#include "mqtt/mqtt.h"
#include "publish/suspect.h"
#include "util/log.h"

/* A loss later than this after the send is not blamed on the message (a broker that cannot
 * take a packet drops the connection as soon as it has read it). */
#define BLAME_WINDOW_MS 10000

/* Keeps @text (taken) for as long as the relay runs, once per distinct text: a dead letter's
 * reason is a static string to the table and the writer. */
static const char *
keep(relay_suspect_t *s, char *text)
{
   for (size_t i = 0; i < s->n_kept; i++) {
      if (!strcmp(s->kept[i], text)) {
         bson_free(text);
         return s->kept[i];
      }
   }
   s->kept = bson_realloc(s->kept, (s->n_kept + 1) * sizeof *s->kept);
   s->kept[s->n_kept++] = text;
   return text;
}

/* What is known of why, for the dead letter: that no acknowledgement came in time when every
 * strike was a publish timeout (@timed_out); the broker's MQTT 5 DISCONNECT reason when it
 * gave one (issue 29: a '$' topic was dead-lettered as "larger than it accepts?"); otherwise
 * only that it closed the connection, and what commonly makes a broker do that. */
static const char *
convicted_reason(relay_suspect_t *s, bool timed_out)
{
   int code = s->last_reason;
   if (timed_out) {
      return keep(s, bson_strdup_printf("no acknowledgement of this message came within the "
                                        "publish timeout (%d ms), %d times in a row (the relay "
                                        "reconnected each time): a broker that drops a message "
                                        "larger than it accepts without a word does this "
                                        "(RabbitMQ over its max_message_size; then set "
                                        "max-message-bytes to its limit), and so does a topic, "
                                        "payload or permission it refuses (see the broker's log)",
                                        s->timeout_ms, RELAY_SUSPECT_STRIKES));
   }
   if (code >= 0) {
      const char *text = relay_mqtt_disconnect_text(code);
      return keep(s, bson_strdup_printf("the broker closed the connection each time this message "
                                        "was sent (%d times in a row), the last time with MQTT 5 "
                                        "DISCONNECT reason 0x%02X (%s)",
                                        RELAY_SUSPECT_STRIKES, code, text ? text : "unknown code"));
   }
   return keep(s, bson_strdup_printf(
                     "the broker closed the connection each time this message was "
                     "sent (%d times in a row) without giving a reason%s: a message "
                     "larger than it accepts does this (then set max-message-bytes "
                     "to its limit), and so does a topic, payload or permission it "
                     "refuses (see the broker's log)",
                     RELAY_SUSPECT_STRIKES, s->mqtt_version == 5 ? "" : " (MQTT 3.1.1 has none)"));
}

static void
forget(relay_suspect_t *s)
{
   bson_free(s->id);
   s->id = NULL;
   s->strikes = 0;
   s->timeouts = 0;
}

static bool
convicted(const relay_suspect_t *s)
{
   return s->id && s->strikes >= RELAY_SUSPECT_STRIKES;
}

/* One strike: against @id (the oldest unacknowledged publish, NULL if none is to blame) or,
 * when nothing is to blame, against a suspect waiting to be sent again. Returns true when @id
 * is convicted now. */
static bool
strike(relay_suspect_t *s, const char *id, bool timed_out, int64_t now)
{
   if (now - s->up_since_ms < RELAY_STABLE_MS) {
      s->short_connections++;
   } else {
      s->short_connections = 0;
   }
   relay_metrics_set(s->metrics, RELAY_G_MQTT_SHORT_CONNECTIONS, s->short_connections);
   if (id && s->id && !strcmp(id, s->id)) {
      s->strikes++;
   } else if (id) {
      forget(s);
      s->id = bson_strdup(id);
      s->strikes = 1;
   } else if (s->id) {
      s->strikes++; /* not sent again yet: paho resent its own copy */
   }
   if (s->id) {
      s->timeouts += timed_out;
      relay_log(RELAY_LOG_DEBUG, "mqtt", "connection %s with event %s unacknowledged (%d)",
                timed_out ? "dropped for a publish timeout" : "lost", s->id, s->strikes);
   }
   return convicted(s) && id && !strcmp(id, s->id);
}

bool
relay_suspect_on_lost(relay_suspect_t *s, const char *oldest_id, int64_t sent_ms,
                      int disconnect_reason, int64_t now)
{
   s->last_reason = disconnect_reason;
   return strike(s, oldest_id && now - sent_ms <= BLAME_WINDOW_MS ? oldest_id : NULL, false, now);
}

bool
relay_suspect_on_timeout(relay_suspect_t *s, const char *oldest_id, int timeout_ms, int64_t now)
{
   s->last_reason = -1;
   s->timeout_ms = timeout_ms;
   return strike(s, oldest_id, true, now);
}

const char *
relay_suspect_verdict(relay_suspect_t *s, const char *id)
{
   if (!convicted(s) || strcmp(id, s->id) != 0) {
      return NULL;
   }
   bool timed_out = s->timeouts == s->strikes;
   forget(s);
   return convicted_reason(s, timed_out);
}

void
relay_suspect_acked(relay_suspect_t *s, const char *id)
{
   if (s->id && !strcmp(id, s->id)) {
      forget(s);
   }
}

void
relay_suspect_on_connected(relay_suspect_t *s, int64_t now)
{
   s->up_since_ms = now;
}

void
relay_suspect_tick(relay_suspect_t *s, bool connected, int64_t now)
{
   if (connected && s->short_connections > 0 && now - s->up_since_ms >= RELAY_STABLE_MS) {
      s->short_connections = 0;
      relay_metrics_set(s->metrics, RELAY_G_MQTT_SHORT_CONNECTIONS, 0);
   }
}

void
relay_suspect_cleanup(relay_suspect_t *s)
{
   forget(s);
   for (size_t i = 0; i < s->n_kept; i++) {
      bson_free(s->kept[i]);
   }
   bson_free(s->kept);
   s->kept = NULL;
   s->n_kept = 0;
}
