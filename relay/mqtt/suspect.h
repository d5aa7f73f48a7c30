/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Finding the message a broker drops the connection on, and whether the connection keeps
 * dropping (suspect.c explains the rule). Main thread only.
 */
#ifndef RELAY_MQTT_SUSPECT_H
#define RELAY_MQTT_SUSPECT_H

#include "relay-private.h"

/* Losses in a row with the same oldest unacknowledged message before it is dead-lettered;
 * also short-lived connections in a row before /healthz fails. */
#define RELAY_SUSPECT_STRIKES 3
/* A connection that stays up this long is stable again. */
#define RELAY_STABLE_MS 30000

/* The connection was lost (call before abandoning what is in flight). Returns the slot of a
 * message to dead-letter now (take its reason with relay_suspect_verdict()), or NULL. */
relay_slot_t *relay_suspect_on_lost(relay_t *r, int64_t now);

/* The dead-letter reason if the in-flight event of @e is the convicted suspect (it is
 * forgotten then), else NULL. */
const char *relay_suspect_verdict(relay_t *r, const relay_entity_t *e);

/* The in-flight event of @e was acknowledged: not a suspect any more. */
void relay_suspect_acked(relay_t *r, const relay_entity_t *e);

void relay_suspect_on_connected(relay_t *r, int64_t now);

/* Once per loop turn: a connection up for RELAY_STABLE_MS is healthy again. */
void relay_suspect_tick(relay_t *r, int64_t now);

void relay_suspect_cleanup(relay_t *r);

#endif /* RELAY_MQTT_SUSPECT_H */
