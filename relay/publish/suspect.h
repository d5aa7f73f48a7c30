/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Finding the message a broker drops the connection on, and whether the connection keeps
 * dropping (suspect.c explains the rule). The state is the publisher's (publisher.c), handed
 * in; main thread only.
 */
#ifndef RELAY_PUBLISH_SUSPECT_H
#define RELAY_PUBLISH_SUSPECT_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "http/metrics.h"

/* Losses in a row with the same oldest unacknowledged message before it is dead-lettered;
 * also short-lived connections in a row before /healthz fails. */
#define RELAY_SUSPECT_STRIKES 3
/* A connection that stays up this long is stable again. */
#define RELAY_STABLE_MS 30000

typedef struct {
   relay_metrics_t *metrics; /* borrowed; may be NULL */
   int mqtt_version;         /* 5 or 4 (3.1.1): what the broker can say when it drops us */
   char *id;                 /* the suspect's event id, or NULL */
   int strikes;
   int last_reason; /* the broker's MQTT 5 DISCONNECT reason at the last loss, -1 if none */
   int timeouts;    /* of the suspect's strikes, those that were publish timeouts */
   int timeout_ms;  /* the publish timeout of the last timeout strike */
   char **kept;     /* dead-letter reasons given out: they live as long as the relay */
   size_t n_kept;
   int64_t up_since_ms;
   int short_connections; /* lost within RELAY_STABLE_MS of connecting, in a row */
} relay_suspect_t;

/* The connection was lost (call before abandoning what is in flight). @oldest_id is the event
 * id of the oldest unacknowledged publish, sent at @sent_ms (NULL: nothing in flight, or QoS
 * 0); @disconnect_reason the broker's MQTT 5 DISCONNECT reason code, -1 if it gave none.
 * Returns true when that publish is convicted now: dead-letter it with
 * relay_suspect_verdict()'s reason. */
bool relay_suspect_on_lost(relay_suspect_t *s, const char *oldest_id, int64_t sent_ms,
                           int disconnect_reason, int64_t now);

/* The oldest unacknowledged publish, event @oldest_id (NULL: QoS 0), had no acknowledgement
 * within @timeout_ms, and the publisher drops the connection for it: a broker that fails a
 * message without closing the connection (RabbitMQ over its max_message_size) answers nothing
 * on that connection afterwards. A strike as relay_suspect_on_lost() counts one, whatever the
 * publish's age. Returns true when that publish is convicted now. */
bool relay_suspect_on_timeout(relay_suspect_t *s, const char *oldest_id, int timeout_ms,
                              int64_t now);

/* The dead-letter reason if event @id is the convicted suspect (it is forgotten then), else
 * NULL. The text says what is known: that the broker never acknowledged it in time, the
 * broker's DISCONNECT reason, or that it gave none and what commonly makes a broker do that; it
 * lives until relay_suspect_cleanup(). */
const char *relay_suspect_verdict(relay_suspect_t *s, const char *id);

/* Event @id was acknowledged: not a suspect any more. */
void relay_suspect_acked(relay_suspect_t *s, const char *id);

void relay_suspect_on_connected(relay_suspect_t *s, int64_t now);

/* Once per loop turn: a connection up for RELAY_STABLE_MS is healthy again. */
void relay_suspect_tick(relay_suspect_t *s, bool connected, int64_t now);

void relay_suspect_cleanup(relay_suspect_t *s);

#endif /* RELAY_PUBLISH_SUSPECT_H */
