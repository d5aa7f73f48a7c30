/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * An event's MQTT 5 Message Expiry Interval: the time its own expiresAt leaves, or
 * --message-expiry; and whether it expired before it could be published (--expired-events
 * decides what then). One rule for the relay's sender, its publisher and outbox-admin replay.
 * Pure: any thread.
 */
#ifndef RELAY_MQTT_EXPIRY_H
#define RELAY_MQTT_EXPIRY_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "stream/event.h"

/* The Message Expiry Interval in seconds for @ev sent at @now_ms (wall clock, ms since the
 * epoch): the time left until its expiresAt, rounded up (a message never outlives it by
 * more than a second's rounding, never dies before it), or cfg->message_expiry_s without an
 * expiresAt; 0: none. Over MQTT 3.1.1, always 0. */
uint32_t relay_expiry_interval(const relay_config_t *cfg, const relay_event_t *ev, int64_t now_ms);

/* Whether @ev's expiresAt is at or before @now_ms. */
bool relay_expiry_passed(const relay_event_t *ev, int64_t now_ms);

#endif /* RELAY_MQTT_EXPIRY_H */
