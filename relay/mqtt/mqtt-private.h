/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The MQTT client's state (mqtt.h), shared by the files of relay/mqtt/ that make up the client
 * (mqtt.c, callbacks.c, completions.c, delivery.c, limits.c) and nothing else. paho's
 * callbacks touch only the queue and the context list (under lock) and the atomics; the main
 * thread owns everything else.
 */
#ifndef RELAY_MQTT_PRIVATE_H
#define RELAY_MQTT_PRIVATE_H

#include "mqtt/mqtt.h"

#include <pthread.h>
#include <stdatomic.h>

#include <MQTTAsync.h>

struct relay_mqtt_t {
   const relay_config_t *cfg;
   MQTTAsync client;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   relay_mqtt_completion_t *queue; /* ring */
   size_t qcap, qhead, qlen;
   bool woken;
   struct pub_ctx_t *ctxs; /* delivery.c */
   atomic_int receive_max; /* the broker's Receive Maximum (MQTT 5), 0 if not told */
   atomic_uint max_packet; /* the broker's Maximum Packet Size (MQTT 5), 0 if not told */
   /* Dead-letter reasons made from what the broker said (a Maximum Packet Size, a DISCONNECT
    * reason), one per text; items in the table point at them, so they live as long as the
    * client. Guarded by lock. */
   char **limit_reasons;
   size_t n_limit_reasons;
   char *client_id; /* as given to paho: what the broker knows this relay as */
   bool clean_next; /* connect with a clean session (after relay_mqtt_clean_session()) */
   /* The reason code of the broker's DISCONNECT (MQTT 5) for the connection being lost, -1
    * if none came; paho's connection-lost callback does not carry it. */
   atomic_int last_disconnect_reason;
   atomic_bool lost_reported; /* LOST queued for the current connection */
   /* --topic-aliases: the broker's Topic Alias Maximum from the last CONNACK, and a counter
    * of connections made and lost (aliases belong to one connection). The table is the main
    * thread's (delivery.c). */
   atomic_uint alias_max;
   atomic_uint conn_gen;
   struct relay_aliases_t *aliases;
};

/* completions.c */
/* Queues one completion and wakes relay_mqtt_wait(); never drops one. Any thread. */
void relay_mqtt_push(relay_mqtt_t *m, relay_mqtt_kind_t kind, uint64_t tag, int code, int reason);

/* delivery.c */
/* Frees the contexts of publishes whose callbacks will never come (relay_mqtt_destroy()). */
void relay_mqtt_free_contexts(relay_mqtt_t *m);

/* callbacks.c: paho's connection callbacks (@context is the relay_mqtt_t). */
void relay_mqtt_on_connected(void *context, char *cause);
void relay_mqtt_on_lost(void *context, char *cause);
int relay_mqtt_on_message(void *context, char *topic, int len, MQTTAsync_message *msg);
void relay_mqtt_on_disconnect_packet(void *context, MQTTProperties *props,
                                     enum MQTTReasonCodes reason);
void relay_mqtt_on_connect_failure5(void *context, MQTTAsync_failureData5 *resp);
void relay_mqtt_on_connect_failure(void *context, MQTTAsync_failureData *resp);
void relay_mqtt_on_disconnected5(void *context, MQTTAsync_successData5 *resp);
void relay_mqtt_on_disconnected(void *context, MQTTAsync_successData *resp);

/* limits.c: the MQTT 5 connect callback, which records the broker's limits. */
void relay_mqtt_on_connect_success5(void *context, MQTTAsync_successData5 *resp);

#endif /* RELAY_MQTT_PRIVATE_H */
