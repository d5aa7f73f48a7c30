/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * W3C Trace Context on events: a validated way to store a trace context ("traceparent",
 * "tracestate") as headers of the events a change raises, so that consumers continue the
 * trace the change belonged to. The relay publishes both headers as MQTT 5 user properties
 * (the W3C MQTT binding) and as the CloudEvents distributed-tracing extension attributes.
 *
 * Example (error handling shortened): a service that got `incoming` (the request's
 * traceparent header, or NULL) continues the trace with a span of its own for the change:
 *
 *    char traceparent[OUTBOX_TRACEPARENT_LEN + 1];
 *    if (!outbox_traceparent_continue (incoming, traceparent))
 *       tracestate = NULL;   // no valid parent: a new trace, the tracestate belongs to none
 *    outbox_event_t *changed = outbox_event_new ("contact.email-changed", NULL);
 *    outbox_event_set_trace_context (changed, traceparent, tracestate, &error);
 *    outbox_collection_update (contacts, &id, version, upd, &changed, 1, &res, &error);
 *
 * liboutbox records nothing itself (no spans, no exporter): it only propagates. A service
 * that records spans with a tracing library puts its own span's traceparent on the events.
 *
 * This header is included by outbox/outbox.h; it may be included on its own.
 */
#ifndef OUTBOX_TRACE_H
#define OUTBOX_TRACE_H

#include <stdbool.h>

#include <bson/bson.h>

#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* outbox_event_t of outbox/outbox.h, named by its struct tag so that this header neither
 * needs outbox.h nor repeats its typedef (C99 refuses a second one). */
struct _outbox_event_t;

/* Length of a version-00 traceparent: "00-" 32 hex digits "-" 16 hex digits "-" 2 hex
 * digits, e.g. "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01". */
#define OUTBOX_TRACEPARENT_LEN 55

/* True if `traceparent` is a W3C traceparent header value: two lowercase hex digits of
 * version (not "ff"), a 32-digit trace id and a 16-digit parent id (neither all zeros) and two
 * digits of flags, joined by '-'. Version 00 is exactly 55 characters; a later version may
 * carry more after a '-' (as W3C asks, the first 55 characters are read as version 00).
 * NULL is not valid. Pure; thread-safe. */
OUTBOX_API bool outbox_traceparent_is_valid(const char *traceparent);

/* True if `tracestate` is a W3C tracestate header value: at most 512 characters and 32
 * comma-separated list members of the form key=value (keys lowercase, from
 * [a-z0-9_*-/] with an optional "@vendor" part, values printable ASCII without ',' and
 * '='; spaces around members are allowed, empty members too). NULL is not valid. Pure;
 * thread-safe. */
OUTBOX_API bool outbox_tracestate_is_valid(const char *tracestate);

/* Writes a version-00 traceparent for a new span of the trace `incoming` belongs to into
 * `out` (OUTBOX_TRACEPARENT_LEN + 1 bytes, NUL-terminated): the same trace id and flags, a new
 * random parent id. Returns true when it continued `incoming`. When `incoming` is NULL or not
 * valid (outbox_traceparent_is_valid()) it starts a new trace instead (random trace id, flags
 * 00: nothing was sampled) and returns false: the caller must then drop the incoming
 * tracestate too. Random bytes come from getrandom(). Thread-safe. */
OUTBOX_API bool outbox_traceparent_continue(const char *incoming,
                                            char out[OUTBOX_TRACEPARENT_LEN + 1]);

/* Stores the trace context on `event` as its headers "traceparent" and, when `tracestate` is
 * neither NULL nor empty, "tracestate" (both copied; an earlier call's values are replaced and
 * a tracestate it set is removed when `tracestate` is NULL or empty). Returns false with
 * OUTBOX_ERROR_INVALID_EVENT and leaves the event unchanged when either value is not valid
 * (outbox_traceparent_is_valid(), outbox_tracestate_is_valid()); OUTBOX_ERROR_INVALID_ARGUMENT
 * when `event` or `traceparent` is NULL. Call it on each event of a commit before the commit.
 * Same thread-safety as the event. */
OUTBOX_API bool outbox_event_set_trace_context(struct _outbox_event_t *event,
                                               const char *traceparent, const char *tracestate,
                                               bson_error_t *error);

OUTBOX_END_DECLS

#endif /* OUTBOX_TRACE_H */
