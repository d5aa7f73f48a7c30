/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's MQTT side: one paho MQTTAsync client. paho's callbacks run on paho's threads;
 * they never touch relay state, they only append a completion to a queue that the relay's
 * main thread drains (relay_mqtt_wait()). Every publish carries a caller-chosen 64-bit tag
 * that comes back in its completion, so late completions of abandoned publishes can be
 * recognised and ignored.
 *
 * Thread safety: all functions are for the relay's main thread, except relay_mqtt_wake().
 */
#ifndef RELAY_MQTT_H
#define RELAY_MQTT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"

typedef struct relay_mqtt_t relay_mqtt_t;

typedef enum {
   RELAY_MQTT_ACK = 0,        /* a publish was acknowledged (QoS 0: written) */
   RELAY_MQTT_FAIL,           /* a publish failed; code/reason say why */
   RELAY_MQTT_CONNECTED,      /* (re)connected */
   RELAY_MQTT_LOST,           /* connection lost; paho reconnects by itself */
   RELAY_MQTT_CONNECT_FAILED, /* a connect attempt failed; the relay retries */
   RELAY_MQTT_DISCONNECTED,   /* our disconnect completed */
} relay_mqtt_kind_t;

/* paho's code (MQTTASYNC_OPERATION_INCOMPLETE) for a publish that ended with its connection's
 * session: paho may report it before the loss itself. */
#define RELAY_MQTT_CODE_INCOMPLETE (-11)

typedef struct {
   relay_mqtt_kind_t kind;
   uint64_t tag;
   int code;   /* paho return code (e.g. -11 "incomplete" when a session was cleaned) */
   int reason; /* MQTT 5 reason code, 0 if none */
} relay_mqtt_completion_t;

/* Most user properties one message may carry: the relay's own (four, and six CloudEvents
 * attributes in binary mode) and the event's headers (mqtt/headers.h: 16 at most). */
#define RELAY_MQTT_MAX_USER_PROPS 32

/* MQTT 5's Payload Format Indicator (3.3.2.3.2): absent, 0 (bytes) or 1 (UTF-8 text). */
typedef enum {
   RELAY_PAYLOAD_FORMAT_NONE = 0, /* not sent */
   RELAY_PAYLOAD_FORMAT_BYTES,    /* indicator 0: unspecified bytes (binary data) */
   RELAY_PAYLOAD_FORMAT_UTF8,     /* indicator 1: UTF-8 (JSON) */
} relay_payload_format_t;

/* One message: everything is borrowed for the duration of relay_mqtt_publish(). */
typedef struct {
   const char *topic;
   const void *payload;
   size_t payload_len;
   const char *content_type;              /* MQTT 5 only; NULL = none */
   uint32_t expiry_s;                     /* Message Expiry Interval, MQTT 5 only; 0 = none */
   relay_payload_format_t payload_format; /* MQTT 5 only */
   const char *const *user_props;         /* name, value, name, value ...; MQTT 5 only */
   size_t n_user_props;                   /* number of pairs, RELAY_MQTT_MAX_USER_PROPS at most */
} relay_mqtt_message_t;

/* Creates the client (not connected yet) with client identifier @client_id (copied by paho).
 * Returns NULL and fills @error on a bad URI or options. @cfg is borrowed for the lifetime of
 * the client. */
relay_mqtt_t *relay_mqtt_new(const relay_config_t *cfg, const char *client_id, bson_error_t *error);

/* Starts a connect attempt; its outcome arrives as CONNECTED or CONNECT_FAILED. Afterwards
 * paho reconnects by itself when the connection is lost. */
bool relay_mqtt_connect(relay_mqtt_t *m, bson_error_t *error);

/* Sends one message at the configured QoS. Returns 0 if it was handed to paho (exactly one
 * ACK or FAIL completion with @tag follows, unless the client is destroyed first), or the
 * paho error code (no completion follows). */
int relay_mqtt_publish(relay_mqtt_t *m, const relay_mqtt_message_t *msg, uint64_t tag);

/* The in-flight window in effect, for the relay and outbox-admin replay alike: the
 * configured one (--inflight-window), kept at or below the broker's Receive Maximum
 * (@receive_max, 0: unknown), since paho 1.3.12's send thread sleeps up to 1 s at a time above
 * it. QoS 0 needs no acknowledgement from the broker, so only the configured window applies.
 * Pure. */
size_t relay_mqtt_window(int configured, int qos, int receive_max);

/* The broker's Receive Maximum from the last MQTT 5 CONNACK, or 0 if unknown. Thread-safe. */
int relay_mqtt_receive_max(relay_mqtt_t *m);

/* The broker's Maximum Packet Size from the last MQTT 5 CONNACK, or 0 if it set none.
 * Thread-safe. */
unsigned relay_mqtt_max_packet(relay_mqtt_t *m);

/* The size in bytes of the PUBLISH packet @msg makes at @qos with protocol @mqtt_version
 * (4 or 5): fixed header, topic, packet id, properties, payload. Pure. */
size_t relay_mqtt_packet_size(int mqtt_version, int qos, const relay_mqtt_message_t *msg);

/* NULL if @msg fits the Maximum Packet Size the broker announced; otherwise a sentence for
 * the dead letter naming the limit, valid until relay_mqtt_destroy(). Main thread. */
const char *relay_mqtt_check_size(relay_mqtt_t *m, const relay_mqtt_message_t *msg);

/* Moves up to @max completions into @out; waits up to @wait_ms for the first one if none is
 * queued. Returns how many were moved. */
size_t relay_mqtt_wait(relay_mqtt_t *m, relay_mqtt_completion_t *out, size_t max, int wait_ms);

/* Wakes a relay_mqtt_wait() early. Thread-safe; not async-signal-safe. */
void relay_mqtt_wake(relay_mqtt_t *m);

/* Disconnects, waiting up to @timeout_ms. */
void relay_mqtt_disconnect(relay_mqtt_t *m, int timeout_ms);

/* The broker's refusal of a connect in words ("not authorized", "bad user name or
 * password"), from paho's failure code and MQTT 5 reason code; NULL when @code/@reason is not
 * a CONNACK refusal (e.g. a network error). Pure; thread-safe. */
const char *relay_mqtt_connack_text(int mqtt_version, int code, int reason);

/* The reason code of an MQTT 5 DISCONNECT sent by the broker in words ("session taken over"
 * for 0x8E); NULL for a code MQTT 5 does not define for a server's DISCONNECT. Pure;
 * thread-safe. */
const char *relay_mqtt_disconnect_text(int reason);

/* Keeps @text (bson_malloc'ed; taken) as a dead-letter reason and returns it, or the same
 * text kept before (then @text is freed): valid until relay_mqtt_destroy(). Thread-safe. */
const char *relay_mqtt_keep_reason(relay_mqtt_t *m, char *text);

/* The reason code of the DISCONNECT the broker sent before the connection was last lost
 * (MQTT 5), or -1 when it sent none (it closed the socket, or MQTT 3.1.1). Thread-safe. */
int relay_mqtt_last_disconnect_reason(relay_mqtt_t *m);

/* Drops the connection (if any) and stops paho's automatic reconnect; the next
 * relay_mqtt_connect() and every later one start a clean session. paho resends the publishes
 * of a kept session by itself after a reconnect: this is how the relay stops it sending a
 * message it has dead-lettered. Publishes in flight complete as usual (stale ones are the
 * caller's to ignore). */
void relay_mqtt_clean_session(relay_mqtt_t *m);

/* Destroys the client; NULL-safe. No completion arrives afterwards. */
void relay_mqtt_destroy(relay_mqtt_t *m);

#endif /* RELAY_MQTT_H */
