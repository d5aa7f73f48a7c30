/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * An event's stored headers as the relay publishes them: which headers become MQTT 5 user
 * properties, which of those are also CloudEvents extension attributes, and which are left
 * out and why. Pure functions over the event's own bytes (no copies, no allocation): safe
 * from any thread, unit-tested in tests/relay/mqtt/test-headers.c.
 *
 * The rules are the event contract's HEADER rows (liboutbox's outbox/contract.h, which
 * liboutbox's outbox_event_set_header() applies too); in short (relay/README.md, outbox-relay(1)):
 * - every header whose value is a string is published as a user property of the same name,
 *   in both payload modes, whatever --user-properties says (that option chooses among the
 *   relay's own four only);
 * - a header is left out when its name is reserved: the relay's own user properties
 *   (event-id, event-type, entity-id, seq), the CloudEvents context attributes (specversion,
 *   id, source, type, subject, time, datacontenttype, dataschema, data, data_base64) and the
 *   replay marker (replay), compared without case, so no header can pose as something the
 *   relay (or outbox-admin replay) vouches for;
 * - and when MQTT cannot carry it or it is too large: not a string, not valid UTF-8, a
 *   control character, a non-character or NUL (MQTT 5 section 1.5.4), a name over 128 bytes
 * (liboutbox's limit), a value over RELAY_HEADER_VALUE_MAX bytes, more than RELAY_HEADERS_MAX
 * headers, more than RELAY_HEADERS_BYTES_MAX bytes in all, a second header of one name, a
 * "traceparent" or "tracestate" that is not W3C Trace Context;
 * - a header whose name is a valid CloudEvents attribute name (1..20 of [a-z0-9]) is also an
 *   extension attribute of the structured-mode payload: traceparent and tracestate are then
 *   the distributed-tracing extension. In binary mode user properties are the attributes.
 */
#ifndef RELAY_HEADERS_H
#define RELAY_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include <outbox/contract.h>

#include "stream/event.h"

/* The contract's limits (outbox/contract.h), under the names this file's users know. */
#define RELAY_HEADERS_MAX OUTBOX_CONTRACT_HEADERS_MAX
#define RELAY_HEADER_NAME_MAX OUTBOX_CONTRACT_HEADER_NAME_MAX
#define RELAY_HEADER_VALUE_MAX OUTBOX_CONTRACT_HEADER_VALUE_MAX
#define RELAY_HEADERS_BYTES_MAX OUTBOX_CONTRACT_HEADERS_BYTES_MAX
#define RELAY_HEADERS_REASONS_MAX 8    /* distinct reasons kept per event for the log */
#define RELAY_CE_ATTRIBUTE_NAME_MAX 20 /* CloudEvents: names SHOULD NOT exceed 20 characters */

typedef struct {
   const char *name;  /* NUL-terminated, inside the event's stored bytes */
   const char *value; /* likewise */
   bool attribute;    /* also a CloudEvents extension attribute (structured mode) */
} relay_header_t;

typedef struct {
   relay_header_t items[RELAY_HEADERS_MAX];
   size_t n;
   size_t dropped;     /* headers left out */
   const char *reason; /* why the first of them was (a static sentence); NULL if none was */
   /* Each distinct reason (the contract's rule reasons, static) with how many headers it
    * left out, in the order first met; reasons past RELAY_HEADERS_REASONS_MAX count in
    * dropped only. */
   struct {
      const char *reason;
      size_t n;
   } reasons[RELAY_HEADERS_REASONS_MAX];
   size_t n_reasons;
} relay_headers_t;

/* Reads @ev's headers into @out (always initialised). The pointers in @out live as long as
 * @ev's stored bytes. */
void relay_headers_read(const relay_event_t *ev, relay_headers_t *out);

/* True if @name is a valid CloudEvents attribute name that is no context attribute and not
 * the relay's own "seq": 1..20 characters of [a-z0-9]. */
bool relay_header_is_ce_attribute(const char *name);

/* Appends the headers of @h to @props (name, value, name, value ...) after the @n strings
 * already there; returns the new count of strings. @props must have room for
 * 2 * RELAY_HEADERS_MAX more. */
size_t relay_headers_append_props(const relay_headers_t *h, const char **props, size_t n);

#endif /* RELAY_HEADERS_H */
