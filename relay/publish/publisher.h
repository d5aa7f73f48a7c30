/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The publisher: the scheduling policy between the event table and the MQTT connection. It
 * takes ready events from the table, asks for admission, sends them within the in-flight
 * window (a slot each), applies the broker's answers (acknowledged, failed, poison), finds
 * the message a broker keeps dropping the connection on (suspect.h) and keeps the
 * connection's state (connect, lost, reconnect with a clean session).
 *
 * It never calls a sibling by name: whether an event may go out is asked through the
 * admission ops it is handed (relay.c answers from the writer's refusals and the partition
 * owner's gate), and messages go out through the link ops (relay.c: mqtt/publish.c renders
 * them and hands them to paho). So a unit test runs it with fakes.
 *
 * Main thread only. Completions from paho's threads reach it through relay.c's wait.
 */
#ifndef RELAY_PUBLISH_PUBLISHER_H
#define RELAY_PUBLISH_PUBLISHER_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "config/config.h"
#include "http/metrics.h"
#include "mqtt/mqtt.h"
#include "stream/table.h"

/* Who decides what may be published (relay.c). */
typedef struct {
   /* Whether anything may be sent now (false while MongoDB refuses the writes: what went out
    * could not be cleared). */
   bool (*open)(void *ctx);
   /* Whether @e (its event in flight, e->inflight) may be sent now. False: the callee parked
    * @e (relay_table_park()) and offers it again when it may. */
   bool (*admit)(void *ctx, relay_entity_t *e);
   /* The in-flight event of @e ended without an acknowledgement. True: it may be queued
    * again. False: the callee dropped it (its partition went to another member). */
   bool (*keep_failed)(void *ctx, relay_entity_t *e);
} relay_admission_ops_t;

/* The MQTT connection (relay.c: mqtt/publish.c and mqtt/mqtt.h). */
typedef struct {
   /* Renders the in-flight event of @e and hands it to the client with @tag. Returns 0 when
    * handed over (one completion with @tag follows), a client error code otherwise (none
    * follows), or sets *@poison to why it can never be sent. */
   int (*send)(void *ctx, relay_entity_t *e, uint64_t tag, const char **poison);
   /* The broker's Receive Maximum, 0 if unknown. */
   int (*receive_max)(void *ctx);
   /* Starts a connect attempt; false with @error if it cannot start. */
   bool (*connect)(void *ctx, bson_error_t *error);
   /* The next reconnect starts a clean session (the client forgets what it would resend). */
   void (*clean_session)(void *ctx);
   /* The reason code of the MQTT 5 DISCONNECT the broker sent before the last loss, -1 if it
    * sent none. */
   int (*last_disconnect_reason)(void *ctx);
} relay_link_ops_t;

typedef struct relay_publisher_t relay_publisher_t;

/* A publisher of @table's events. Everything is borrowed and must outlive it; @metrics may be
 * NULL. */
relay_publisher_t *relay_publisher_new(const relay_config_t *cfg, relay_metrics_t *metrics,
                                       relay_table_t *table, const relay_admission_ops_t *admission,
                                       void *admission_ctx, const relay_link_ops_t *link,
                                       void *link_ctx);

/* NULL-safe. */
void relay_publisher_destroy(relay_publisher_t *p);

/* Starts a connect attempt unless connected, connecting, or backing off. */
void relay_publisher_connect(relay_publisher_t *p, int64_t now);

/* Sends ready events while the connection is up, the window has room and admission allows. */
void relay_publisher_dispatch(relay_publisher_t *p, int64_t now);

/* Applies one completion from the MQTT client (a publish's answer, or the connection's). */
void relay_publisher_complete(relay_publisher_t *p, const relay_mqtt_completion_t *c, int64_t now);

/* Once per loop turn: a publish unanswered for cfg->publish_timeout_ms drops the connection
 * (a strike against the oldest unacknowledged publish, as a loss is) and everything in flight
 * is sent again on a new one; the connection's health. */
void relay_publisher_check_timeouts(relay_publisher_t *p, int64_t now);

/* How long until --max-publish-rate lets the next ready event go, in ms; -1 when nothing is
 * held back (the loop then waits as it would). */
int relay_publisher_wait_ms(const relay_publisher_t *p);

/* Whether the connection to the broker is up. */
bool relay_publisher_connected(const relay_publisher_t *p);

#endif /* RELAY_PUBLISH_PUBLISHER_H */
