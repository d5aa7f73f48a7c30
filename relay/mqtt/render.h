/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Pure functions that turn an event into an MQTT message: entity id rendering, topic and
 * source templates with percent-encoding, and the CloudEvents 1.0 payload. No I/O, no
 * global state: safe from any thread, unit-tested in tests/relay/mqtt/test-render.c.
 */
#ifndef RELAY_RENDER_H
#define RELAY_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <bson/bson.h>

#include "base/render-id.h"
#include "mqtt/headers.h"
#include "stream/event.h"

/* A string that may contain NUL bytes (entity ids can). */
typedef struct {
   const char *str;
   size_t len;
} relay_str_t;

/* What a template may refer to. Any member may be {NULL, 0} (renders as nothing). */
typedef struct {
   relay_str_t db;
   relay_str_t collection;
   relay_str_t id;   /* the rendered entity id (relay_render_id) */
   relay_str_t type; /* the event type */
   /* The entity's partition in decimal (0 .. --partitions - 1, as relay groups number
    * them): with {partition} in the topic, consumer instances split the entities between
    * them with plain wildcard subscriptions, each entity's events staying in one. */
   relay_str_t partition;
} relay_template_vars_t;

/* Entity ids as text: relay_render_id() is in base/render-id.h. */

/* Appends @s to @out with MQTT's reserved characters ('/', '+', '#', NUL), '%' itself, a
 * leading '$' and every character the contract's MQTT text rule refuses (ASCII and C1
 * controls, DEL, non-characters such as U+FFFE, invalid UTF-8: MQTT 5 section 1.5.4) replaced
 * by %XX (uppercase hex) byte by byte, so the result is exactly one topic level of MQTT text
 * with no wildcard that never starts a broker's '$' topic. */
void relay_percent_encode(bson_string_t *out, const char *s, size_t len);

/* Checks a template: placeholders are {db}, {collection}, {id}, {type}, {partition}; it may
 * not be empty or hold an unknown or unclosed placeholder, and a @topic template's literal text
 * may not contain the MQTT wildcards '+' and '#' (other templates, e.g. the CloudEvents source,
 * may).
 * Returns false and fills @error (naming @what, e.g. "--topic") otherwise. */
bool relay_template_check(const char *tmpl, const char *what, bool topic, bson_error_t *error);

/* Renders a template already accepted by relay_template_check(), percent-encoding every
 * substituted value. Returns a bson_malloc'ed string. */
char *relay_template_render(const char *tmpl, const relay_template_vars_t *vars);

/* Renders a template already accepted by relay_template_check() with values that need no
 * percent-encoding: already encoded by relay_percent_encode(), or made only of characters it
 * leaves as they are (an event type always is). Returns a bson_malloc'ed string; *@len is its
 * length. The relay's per-message path: no encoding, one allocation. */
char *relay_template_render_encoded(const char *tmpl, const relay_template_vars_t *vars,
                                    size_t *len);

/* Writes @v in decimal and a NUL to @buf (at least 21 bytes); returns the length. */
size_t relay_format_int64(int64_t v, char *buf);

/* Formats @ms (milliseconds since the epoch, UTC) as RFC 3339 with milliseconds:
 * "2026-11-22T10:00:00.123Z". @buf must hold at least 32 bytes. */
void relay_format_time(int64_t ms, char *buf, size_t size);

/* Builds the structured-mode CloudEvents 1.0 JSON for @ev: specversion, id, source, type,
 * subject (@subject: the rendered entity id), time (if the event has one), datacontenttype
 * "application/json", the "seq" extension attribute, the headers of @headers (may be NULL)
 * that are extension attributes (relay_headers_read(); traceparent and tracestate among them)
 * and data as relaxed extended JSON. Returns a bson_malloc'ed string; *@len is its length. */
char *relay_cloudevent_json(const relay_event_t *ev, const char *source, relay_str_t subject,
                            const relay_headers_t *headers, size_t *len);

/* relay_cloudevent_json() with, when @replay, the replay marker "replay": true after "seq"
 * (outbox-admin replay; the name is reserved, so no header attribute can take it). */
char *relay_cloudevent_json_marked(const relay_event_t *ev, const char *source, relay_str_t subject,
                                   const relay_headers_t *headers, bool replay, size_t *len);

/* The same payload built through libbson's JSON writer (relay_cloudevent_json() writes the
 * same bytes faster and falls back to this for values it does not handle). For tests. */
char *relay_cloudevent_json_reference(const relay_event_t *ev, const char *source,
                                      relay_str_t subject, const relay_headers_t *headers,
                                      size_t *len);

/* The media type of @ev's data: application/json for a document, the event's contentType
 * (application/octet-stream without one) for binary data. */
const char *relay_event_content_type(const relay_event_t *ev);

/* The binary-mode payload: relaxed extended JSON of @ev's data (a document; message.c sends
 * binary data as its bytes). */
char *relay_data_json(const relay_event_t *ev, size_t *len);

#endif /* RELAY_RENDER_H */
