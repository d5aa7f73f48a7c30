/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's events: an outbox_event_t is one event to commit with a change (its type, data,
 * headers and its id), built by the caller and borrowed by the functions of
 * outbox/collection.h, which record its seq and time when the commit succeeds.
 *
 * THREADS. An outbox_event_t is not thread-safe: use one from one thread at a time. Only the
 * caller and a successful commit change it.
 */
#ifndef OUTBOX_EVENT_H
#define OUTBOX_EVENT_H

#include <bson/bson.h>

#include "outbox/error.h"
#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* An event to commit with a change. Functions that commit events borrow them for the call
 * only. An event can be committed once: on success it records its seq and time, and giving it
 * to another commit is OUTBOX_ERROR_INVALID_ARGUMENT. After OUTBOX_ERROR_UNKNOWN_OUTCOME it
 * remembers the attempt (not its seq): a retry with the same objects keeps their ids and is
 * recognized, so the events are stored once (see outbox_collection_update()). */
typedef struct _outbox_event_t outbox_event_t;

/* Creates an event of the given type with a fresh random id (UUID v4 from getrandom()).
 * `type` and `data` are copied; `data` NULL means an empty document. Never returns NULL
 * (aborts on out-of-memory, like libbson). The type, data and headers are validated when the
 * event is committed (or by outbox_event_validate()), so an invalid type is reported there
 * with OUTBOX_ERROR_INVALID_EVENT. `type` NULL is treated as "" and therefore invalid.
 * Free with outbox_event_destroy(). */
OUTBOX_API outbox_event_t *outbox_event_new(const char *type, const bson_t *data);

/* Creates an event whose data is `len` bytes (copied): stored as BSON binary data (subtype 0)
 * with `content_type` (copied; NULL: none, consumers then see application/octet-stream) as
 * "contentType". outbox-relay publishes the bytes as they are in binary payload mode (MQTT 5
 * content type `content_type`, payload format indicator 0) and as CloudEvents "data_base64"
 * in structured mode. outbox_event_get_data() returns an empty document for it. The content
 * type (1..255 bytes of MQTT text) and the size (16 MiB at most) are checked at commit
 * (OUTBOX_ERROR_INVALID_EVENT). Never returns NULL; free with outbox_event_destroy(). */
OUTBOX_API outbox_event_t *outbox_event_new_binary(const char *type, const uint8_t *bytes,
                                                   size_t len, const char *content_type);

/* Frees the event. NULL is allowed. */
OUTBOX_API void outbox_event_destroy(outbox_event_t *event);

/* Sets header `key` to `value` (both copied; a second call with the same key replaces the
 * value). The event contract's header rules (outbox/contract.h) apply: a key of 1..128 bytes
 * and a value of at most 4096 bytes of MQTT text (valid UTF-8 without NUL, control
 * characters or non-characters such as U+FFFE: MQTT 5 section 1.5.4), a key not starting
 * with '$' and not reserved (event-id, id, type, replay ... compared without case), a
 * traceparent or tracestate that is W3C Trace Context, at most 16 headers and 8192 bytes of
 * keys and values in all. Returns false with OUTBOX_ERROR_INVALID_EVENT naming the rule and
 * leaves the event unchanged otherwise. (Before issue 33 such headers were stored and the relay
 * left them out of the message.) Stored as the event's "headers" document; the relay
 * publishes each header as an MQTT 5 user property, names of 1..20 characters of [a-z0-9]
 * also as CloudEvents attributes ("Headers" in relay/README.md). For W3C trace context use
 * outbox_event_set_trace_context(). */
OUTBOX_API bool outbox_event_set_header(outbox_event_t *event, const char *key, const char *value,
                                        bson_error_t *error);

/* Sets the event's expiry: @ms milliseconds since the Unix epoch (UTC), stored as the Date
 * "expiresAt". outbox-relay sends the time left as the MQTT 5 Message Expiry Interval (a
 * broker then drops the message for subscribers that have not taken it by then), and an event
 * whose expiry passed before its turn is cleared without publishing (or dead-lettered, or
 * published anyway: outbox-relay --expired-events). Returns false with
 * OUTBOX_ERROR_INVALID_EVENT for a time outside years 0001-9999. */
OUTBOX_API bool outbox_event_set_expires_at(outbox_event_t *event, int64_t ms, bson_error_t *error);

/* Checks the event as a commit would: type 1..128 characters of [A-Za-z0-9._-]; data valid
 * UTF-8 throughout and without keys that are empty or start with '$' at any depth (consumers
 * read events as Extended JSON, where {"$date": ...} would change meaning). Returns false with
 * OUTBOX_ERROR_INVALID_EVENT and the reason. */
OUTBOX_API bool outbox_event_validate(const outbox_event_t *event, bson_error_t *error);

/* The event id: 36 lowercase characters, e.g. "0f8fad5b-d9cb-469f-a165-70867728950e".
 * Owned by the event; valid until it is destroyed. */
OUTBOX_API const char *outbox_event_get_id(const outbox_event_t *event);

/* The event type as given to outbox_event_new(). Owned by the event; valid until it is
 * destroyed. */
OUTBOX_API const char *outbox_event_get_type(const outbox_event_t *event);

/* The event data. Owned by the event; valid until it is destroyed. */
OUTBOX_API const bson_t *outbox_event_get_data(const outbox_event_t *event);

/* The seq the entity gave the event, 0 until a commit containing it succeeds. */
OUTBOX_API int64_t outbox_event_get_seq(const outbox_event_t *event);

/* The stored "time" (milliseconds since the Unix epoch, UTC), 0 until committed. */
OUTBOX_API int64_t outbox_event_get_time(const outbox_event_t *event);

OUTBOX_END_DECLS

#endif /* OUTBOX_EVENT_H */
