/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * --topic-aliases: MQTT 5 Topic Aliases for the relay's publishes. A topic's first publish on
 * a connection carries the topic and an alias number; later ones carry the alias and an empty
 * topic, saving the topic's bytes. The broker's Topic Alias Maximum (CONNACK) bounds the
 * numbers; when they are all in use, the least recently used is given to the new topic (its
 * publish carries the topic again, redefining it). Aliases belong to one connection: the
 * table forgets them whenever the connection generation changes. Main thread only (the
 * client's publishes); pure apart from its own memory.
 */
#ifndef RELAY_MQTT_ALIASES_H
#define RELAY_MQTT_ALIASES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct relay_aliases_t relay_aliases_t;

/* Most aliases used, whatever the broker allows: a linear search stays cheap. */
#define RELAY_ALIASES_MAX 64

relay_aliases_t *relay_aliases_new(void);

/* NULL-safe. */
void relay_aliases_destroy(relay_aliases_t *a);

/* The alias for @topic on connection generation @gen whose broker allows @broker_max aliases
 * (0: none, then 0 is returned). *@known: the broker knows it already (send an empty topic);
 * otherwise the publish must carry @topic with the alias. */
uint16_t relay_aliases_use(relay_aliases_t *a, unsigned gen, unsigned broker_max, const char *topic,
                           bool *known);

#endif /* RELAY_MQTT_ALIASES_H */
