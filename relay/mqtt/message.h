/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The one renderer of an event into an MQTT message: topic, payload (structured or binary
 * CloudEvents), content type and user properties, and the event contract's MESSAGE rules
 * (outbox/contract.h: a message MQTT cannot carry is poison, with the rule's reason). The
 * relay's sender (mqtt/publish.c) and outbox-admin replay (admin/replay.c) both build their
 * messages here, so a replayed message differs from the live one only by the replay marker:
 * the attribute "replay": true after "seq" in a structured payload and, with MQTT 5, the
 * user property replay=true after all others. MQTT 5 also gets the Message Expiry Interval
 * (mqtt/expiry.h) and payload format indicator 1 (UTF-8: both payloads are JSON). Pure
 * functions: any thread.
 */
#ifndef RELAY_MQTT_MESSAGE_H
#define RELAY_MQTT_MESSAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"
#include "mqtt/expiry.h"
#include "mqtt/headers.h"
#include "mqtt/mqtt.h"
#include "mqtt/render.h"
#include "stream/event.h"

/* What the message is made of besides the event. */
typedef struct {
   /* The template values, each already percent-encoded (relay_percent_encode()); the event
    * type needs none. Its type member is filled from the event. */
   relay_template_vars_t vars;
   relay_str_t subject; /* the rendered entity id, not encoded: the structured "subject" */
   bool replay;         /* outbox-admin replay: add the replay marker */
   /* The wall clock (ms since the epoch) the message is sent at: the Message Expiry Interval
    * is the time the event's expiresAt leaves then (mqtt/expiry.h). */
   int64_t now_ms;
} relay_message_in_t;

/* A rendered message. Holds pointers into itself: do not copy it; free with
 * relay_message_cleanup(). */
typedef struct {
   relay_mqtt_message_t msg; /* ready for relay_mqtt_publish() unless poison is set */
   const char *poison;       /* NULL, or why the message can never be sent (a contract reason) */
   relay_headers_t headers;  /* the event's headers as published (dropped ones counted) */
   char *topic, *payload, *source;
   size_t topic_len, payload_len;
   const char *props[2 * RELAY_MQTT_MAX_USER_PROPS];
   char seq[24], time[40];
} relay_message_t;

/* Renders @ev by @cfg (templates, payload mode, MQTT version, --user-properties,
 * --max-message-bytes) into @m. The broker's own limits (relay_mqtt_check_size()) are the
 * caller's to check, since they need the connection. */
void relay_message_render(const relay_config_t *cfg, const relay_event_t *ev,
                          const relay_message_in_t *in, relay_message_t *m);

/* Frees what @m owns; safe on a zeroed message. */
void relay_message_cleanup(relay_message_t *m);

#endif /* RELAY_MQTT_MESSAGE_H */
