/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Events: the in-memory object, its stored form, and validation of stored events (also used
 * by the relay to dead-letter malformed events with a reason). event.c and stored-event.c alone
 * touch the struct; an event belongs to its caller's thread.
 */
#ifndef OUTBOX_EVENT_PRIVATE_H
#define OUTBOX_EVENT_PRIVATE_H

#include "outbox/event.h"
#include "uuid-private.h"

#define _OUTBOX_EVENT_TYPE_MAX 128
#define _OUTBOX_HEADER_KEY_MAX 128

/* A commit attempt whose outcome is unknown (OUTBOX_ERROR_UNKNOWN_OUTCOME), remembered in each
 * of its events so that a retry with the same events can find out whether it was stored
 * (outcome.c). */
typedef struct {
   bool in_doubt;
   int64_t version;   /* the version the attempt's filter required (0 for a create) */
   int64_t event_seq; /* the eventSeq it required; its events were to get event_seq + 1 ... */
   int64_t time;      /* the time stamped on its events */
   size_t n;          /* how many events it carried */
} _outbox_attempt_t;

struct _outbox_event_t {
   char id[_OUTBOX_UUID_LEN + 1];
   char *type;
   bson_t data;
   bson_t headers;     /* key -> string value, in the order the keys were first set */
   int64_t seq;        /* 0 until committed */
   int64_t time;       /* ms since the epoch, 0 until committed */
   int64_t expires_at; /* ms since the epoch; stored as "expiresAt" when has_expires */
   bool has_expires;
   /* outbox_event_new_binary(): the data is these bytes (stored as binary data, subtype 0)
    * and `data` stays empty; content_type is stored as "contentType". */
   uint8_t *bin;
   uint32_t bin_len;
   bool binary;
   char *content_type;
   _outbox_attempt_t attempt;
};

/* True if type[0..len) is 1..128 characters of [A-Za-z0-9._-]. */
bool _outbox_event_type_is_valid(const char *type, size_t len);

/* Validates events[0..n) for a commit: each valid (outbox_event_validate()), not committed
 * before, and no event given twice. The message names the failing event's index. */
bool _outbox_events_check(outbox_event_t *const *events, size_t n, bson_error_t *error);

/* Appends the stored form of events[0..n) to the BSON array `array` (keys "0", "1", ...),
 * numbering them first_seq, first_seq + 1, ... and stamping `time` (ms since the epoch).
 * The events themselves are not modified. */
void _outbox_events_append_stored(bson_t *array, outbox_event_t *const *events, size_t n,
                                  int64_t first_seq, int64_t time);

/* The exact size in bytes of the BSON array _outbox_events_append_stored() would build for
 * events[0..n), computed without building it (the size does not depend on seq or time). */
int64_t _outbox_events_stored_size(outbox_event_t *const *events, size_t n);

/* Records a successful commit in the events: seq first_seq, first_seq + 1, ... and time (and
 * forgets any attempt in doubt). */
void _outbox_events_mark_committed(outbox_event_t *const *events, size_t n, int64_t first_seq,
                                   int64_t time);

/* Checks one stored event document against the stored contract: id a 36-character lowercase
 * UUID string, seq an Int64 > 0, type a valid type string, time a Date, data a document,
 * headers (optional) a document of UTF-8 strings. Extra fields are allowed (forward
 * compatibility). On failure returns false with OUTBOX_ERROR_INVALID_EVENT and a precise
 * reason in error->message (e.g. "seq: expected Int64, got int32"). Thread-safe. */
bool _outbox_stored_event_validate(const bson_t *event, bson_error_t *error);

/* The current time in ms since the Unix epoch (UTC), as stored in events' "time". */
int64_t _outbox_now_ms(void);

#endif /* OUTBOX_EVENT_PRIVATE_H */
