/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * An MQTT 5 subscription (paho MQTTAsync) that hands each message to the consumer's main
 * thread and acknowledges it only once the main thread has processed it. paho's callback
 * thread waits meanwhile, so a message is never acknowledged before its effect is stored in
 * MongoDB (at-least-once end to end), and mongoc is never called from a paho thread.
 *
 * The session is persistent (clean start off, session expiry 1 hour, fixed client id): while
 * the consumer is down the broker keeps its QoS 1 messages, and after a restart they arrive.
 */
#ifndef CONSUMER_MQTT_H
#define CONSUMER_MQTT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
   char *topic;
   char *payload; /* NUL-terminated; len bytes */
   size_t len;
   /* MQTT 5 user properties set by outbox-relay, or NULL. */
   char *event_id;
   char *event_type;
   char *entity_id;
   char *seq;
   char *traceparent; /* the event's W3C trace context, when the event carries one */
   /* MQTT 5: the payload is bytes, not JSON: payload format indicator 0, or a content type
    * that is not JSON (an event whose data is binary, in the relay's binary mode). */
   bool bytes;
} mqtt_msg_t;

typedef struct _mqtt_sub_t mqtt_sub_t;

/* Connects to `uri` (tcp://HOST:PORT) as `client_id` and subscribes to the `n` filters of
 * `topics` (copied) with `qos` (1 by default); reconnects by itself. Returns NULL with a
 * message in `err` when the arguments are unusable; an unreachable broker is retried, not an
 * error. */
mqtt_sub_t *mqtt_sub_start(const char *uri, const char *client_id, char *const *topics, size_t n,
                           int qos, char *err, size_t errlen);

/* Waits up to `timeout_ms` until the broker has granted the subscription; false if it has
 * not (yet). Messages published from then on reach this consumer. */
bool mqtt_sub_wait_subscribed(mqtt_sub_t *sub, int timeout_ms);

/* Waits up to `timeout_ms` for a message. On true, *msg is borrowed until mqtt_sub_done(),
 * which must be called before the next mqtt_sub_next(). */
bool mqtt_sub_next(mqtt_sub_t *sub, int timeout_ms, mqtt_msg_t **msg);

/* Finishes the current message: `processed` acknowledges it; false has paho offer it again
 * (after a pause), e.g. because MongoDB was unreachable. */
void mqtt_sub_done(mqtt_sub_t *sub, bool processed);

/* Disconnects and frees. Messages not yet processed stay with the broker. NULL is allowed. */
void mqtt_sub_stop(mqtt_sub_t *sub);

#endif /* CONSUMER_MQTT_H */
