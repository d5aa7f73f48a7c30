/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The sender: one event into one MQTT message, handed to paho (publish.c). Main thread only.
 */
#ifndef RELAY_MQTT_PUBLISH_H
#define RELAY_MQTT_PUBLISH_H

#include <stdint.h>

#include "config/config.h"
#include "http/metrics.h"
#include "mqtt/mqtt.h"
#include "stream/namespaces.h"
#include "stream/table.h"

typedef struct relay_sender_t relay_sender_t;

/* A sender through @mqtt; @cfg, @ns (names by an entity's coll), @mqtt and @metrics (may be NULL:
 * headers left out are then only logged) are borrowed and must outlive it. */
relay_sender_t *relay_sender_new(const relay_config_t *cfg, relay_namespaces_t *ns,
                                 relay_mqtt_t *mqtt, relay_metrics_t *metrics);

/* NULL-safe. */
void relay_sender_destroy(relay_sender_t *s);

/* Builds the message of @e's in-flight event and sends it with @tag. Returns the paho code (0:
 * handed over; otherwise logged here); a message that can never be sent (too large, a string
 * MQTT cannot carry, data JSON cannot carry) sets *@poison instead (NULL otherwise). */
int relay_sender_send(relay_sender_t *s, relay_entity_t *e, uint64_t tag, const char **poison);

#endif /* RELAY_MQTT_PUBLISH_H */
