/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What paho's threads say about the connection: connected, lost (with the broker's
 * DISCONNECT reason when it sent one), a connect attempt failed (logged in words), our
 * disconnect completed. Each callback logs and queues a completion; the only state it
 * touches besides the queue is relay_mqtt_t's atomics lost_reported and
 * last_disconnect_reason, which only this file writes. Registered by mqtt.c.
 */
#include "mqtt/mqtt-private.h"

#include <string.h>

#include "mqtt/tls.h"
#include "util/log.h"

void
relay_mqtt_on_connected(void *context, char *cause)
{
   relay_mqtt_t *m = context;
   if (relay_tls_uri(m->cfg->mqtt_uri)) {
      relay_tls_watch(false);
   }
   atomic_store(&m->lost_reported, false);
   atomic_fetch_add(&m->conn_gen, 1);
   relay_mqtt_push(context, RELAY_MQTT_CONNECTED, 0, 0, 0);
}

/* The connection is gone: said once per connection (see relay_mqtt_on_disconnect_packet()). */
static void
report_lost(relay_mqtt_t *m)
{
   if (atomic_exchange(&m->lost_reported, true)) {
      return;
   }
   atomic_fetch_add(&m->conn_gen, 1); /* its topic aliases are gone with it */
   if (relay_tls_uri(m->cfg->mqtt_uri)) {
      relay_tls_watch_reconnects(); /* paho reconnects by itself: explain its failures */
   }
   relay_mqtt_push(m, RELAY_MQTT_LOST, 0, 0, 0);
}

/* paho 1.3.12 calls this (MQTT 5 only) when the broker sends DISCONNECT, and then reconnects
 * without calling relay_mqtt_on_lost(): this is both the only account of why (0x8E: another client
 * connected with this client id) and the only news that the connection is gone. */
void
relay_mqtt_on_disconnect_packet(void *context, MQTTProperties *props, enum MQTTReasonCodes reason)
{
   relay_mqtt_t *m = context;
   const char *text = relay_mqtt_disconnect_text((int)reason);
   atomic_store(&m->last_disconnect_reason, (int)reason);
   relay_log(RELAY_LOG_WARNING, "mqtt",
             "connection lost: the broker disconnected with reason 0x%02X (%s)%s%s%s", (int)reason,
             text ? text : "not a reason MQTT 5 defines",
             reason == 0x8E ? ": another client connected with client id '" : "",
             reason == 0x8E ? m->client_id : "", reason == 0x8E ? "'" : "");
   report_lost(m);
}

void
relay_mqtt_on_lost(void *context, char *cause)
{
   relay_mqtt_t *m = context;
   if (atomic_load(&m->lost_reported)) {
      return; /* a DISCONNECT said it already */
   }
   atomic_store(&m->last_disconnect_reason, -1);
   /* Without a reason: mosquitto 2.0, for one, closes the connection of a client whose id
    * another client connects with, and MQTT 3.1.1 has no way to say why. */
   relay_log(RELAY_LOG_WARNING, "mqtt",
             "connection lost%s%s (the broker gave no reason; it closes the connection this way "
             "too when another client connects with client id '%s')",
             cause ? ": " : "", cause ? cause : "", m->client_id);
   report_lost(m);
}

int
relay_mqtt_last_disconnect_reason(relay_mqtt_t *m)
{
   return atomic_load(&m->last_disconnect_reason);
}

int
relay_mqtt_on_message(void *context, char *topic, int len, MQTTAsync_message *msg)
{
   /* The relay subscribes to nothing; free whatever arrives anyway. */
   MQTTAsync_freeMessage(&msg);
   MQTTAsync_free(topic);
   return 1;
}

/* What to try when an MQTT 5 connect failed the way a broker without MQTT 5 makes it fail,
 * else "". Such a broker answers with MQTT 3.1.1's CONNACK return code 1 ("unacceptable
 * protocol version": aedes 1.x), which paho 1.3.12 reports as code 1, or closes the connection
 * without a CONNACK (RabbitMQ before 3.13), which paho reports as code -1 with "TCP connect
 * completion failure" (a refused TCP connect says "TCP/TLS connect failure" instead). */
static const char *
mqtt5_hint(const relay_mqtt_t *m, int code, const char *message)
{
   if (m->cfg->mqtt_version != 5) {
      return "";
   }
   if (code == 1) {
      return " (MQTT 3.1.1's \"unacceptable protocol version\"): the broker does not support "
             "MQTT 5; try --mqtt-version 4";
   }
   if (code == MQTTASYNC_FAILURE && message && strstr(message, "completion failure")) {
      return " (the broker closed the connection without answering the MQTT 5 CONNECT): the "
             "broker may not support MQTT 5; try --mqtt-version 4";
   }
   return "";
}

/* The broker's refusal in words ("not authorized"), so an operator does not have to look up
 * CONNACK codes; other failures (network, TLS) keep paho's code and message, with a hint when
 * they look like a broker without MQTT 5. */
static void
log_connect_failure(const relay_mqtt_t *m, int code, int reason, const char *message)
{
   const char *refusal = relay_mqtt_connack_text(m->cfg->mqtt_version, code, reason);
   char *tls = relay_tls_take_reason();
   if (refusal && m->cfg->mqtt_version == 5) {
      /* paho 1.3.12 reports an MQTT 5 CONNACK refusal in code (see connack_text). */
      relay_log(RELAY_LOG_WARNING, "mqtt",
                "connect as client id '%s' refused by the broker: %s (reason code 0x%02X)",
                m->client_id, refusal, reason >= 0x80 ? reason : code);
   } else if (refusal) {
      relay_log(RELAY_LOG_WARNING, "mqtt",
                "connect as client id '%s' refused by the broker: %s (return code %d)",
                m->client_id, refusal, code);
   } else {
      relay_log(RELAY_LOG_WARNING, "mqtt", "connect failed: code %d, reason %d%s%s%s%s%s", code,
                reason, message ? ": " : "", message ? message : "", tls ? ": " : "",
                tls ? tls : "", tls ? "" : mqtt5_hint(m, code, message));
   }
   bson_free(tls);
}

void
relay_mqtt_on_connect_failure5(void *context, MQTTAsync_failureData5 *resp)
{
   log_connect_failure(context, resp ? resp->code : -1, resp ? (int)resp->reasonCode : 0,
                       resp ? resp->message : NULL);
   relay_mqtt_push(context, RELAY_MQTT_CONNECT_FAILED, 0, resp ? resp->code : -1, 0);
}

void
relay_mqtt_on_connect_failure(void *context, MQTTAsync_failureData *resp)
{
   log_connect_failure(context, resp ? resp->code : -1, 0, resp ? resp->message : NULL);
   relay_mqtt_push(context, RELAY_MQTT_CONNECT_FAILED, 0, resp ? resp->code : -1, 0);
}

void
relay_mqtt_on_disconnected5(void *context, MQTTAsync_successData5 *resp)
{
   relay_mqtt_push(context, RELAY_MQTT_DISCONNECTED, 0, 0, 0);
}

void
relay_mqtt_on_disconnected(void *context, MQTTAsync_successData *resp)
{
   relay_mqtt_push(context, RELAY_MQTT_DISCONNECTED, 0, 0, 0);
}
