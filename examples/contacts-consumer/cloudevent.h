/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Decoding the messages outbox-relay publishes: a CloudEvents 1.0 JSON event (structured
 * mode) with the per-entity `seq` extension, or, in binary mode, the MQTT 5 user properties
 * event-id, event-type, entity-id and seq with the event's data as the payload. Either way
 * the W3C trace context the event was stored with comes as "traceparent" (the CloudEvents
 * distributed-tracing extension attribute, or a user property).
 */
#ifndef CONSUMER_CLOUDEVENT_H
#define CONSUMER_CLOUDEVENT_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
   char *id;          /* the event id (unique) */
   char *type;        /* e.g. "ContactNameUpdated" */
   char *subject;     /* the entity id as rendered by the relay */
   int64_t seq;       /* per-entity sequence number, 0 if absent */
   bson_t data;       /* the event's data (empty if none) */
   char trace_id[33]; /* the W3C trace id of its traceparent; "" if none or not valid */
} cloudevent_t;

/* Attributes carried as MQTT 5 user properties (any may be NULL). */
typedef struct {
   const char *event_id;
   const char *event_type;
   const char *entity_id;
   const char *seq;
   const char *traceparent;
   /* The payload is the event's binary data, not JSON (mqtt.h's bytes): it is not parsed; the
    * event is recorded with empty data, its attributes from the user properties. */
   bool bytes;
} cloudevent_props_t;

/* Decodes a message. The structured JSON form wins; the properties fill in what it lacks (and
 * make up the whole event in binary mode, with the payload as data). Returns false with a
 * reason in `err` if id, type or subject cannot be found or the payload is not JSON. On
 * success free with cloudevent_clear(). */
bool cloudevent_decode(const char *payload, size_t len, const cloudevent_props_t *props,
                       cloudevent_t *ev, char *err, size_t errlen);

void cloudevent_clear(cloudevent_t *ev);

#endif /* CONSUMER_CLOUDEVENT_H */
