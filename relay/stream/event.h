/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One stored event (an element of a document's events array) as the relay sees it: parsed
 * and checked against the stored contract (issue 4). An event that breaks the contract is a
 * poison event: it is kept whole in @raw so it can be moved to the dead letters unchanged.
 */
#ifndef RELAY_EVENT_H
#define RELAY_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

typedef struct {
   bson_value_t raw; /* the array element exactly as stored (owned copy) */
   /* id, type and data point into raw (valid while the event lives; a copied struct takes
    * them along with raw's buffer). */
   const char *id; /* NULL if missing or invalid */
   int64_t seq;    /* 0 if missing or invalid (valid seqs start at 1) */
   const char *type;
   bool has_time;
   int64_t time_ms;
   /* expiresAt (a Date): the event is worthless after it; MQTT 5's Message Expiry Interval is
    * the time left when it is sent, and --expired-events decides about one already past. */
   bool has_expires;
   int64_t expires_ms;
   /* Binary data (BSON binData) instead of a document: its bytes (a view into raw; data is
    * then NULL) and the event's contentType (NULL: none). */
   const uint8_t *bin;
   uint32_t bin_len;
   const char *content_type;
   bson_t *data;       /* NULL when missing or invalid; a static bson_t over raw's bytes */
   void *block;        /* owns raw's bytes and data's bson_t when raw is a document */
   int64_t requeued;   /* requeued.count: how often an operator requeued it, 0 = never */
   const char *reason; /* NULL when valid, else a static sentence for the dead letter */
   /* The stored headers document, a view into raw (NULL when absent). Headers never make an
    * event poison: mqtt/headers.c checks each one when the event is sent and leaves out the
    * ones MQTT or CloudEvents cannot carry. headers_bad is set when the field is there but
    * is not a document. */
   const uint8_t *headers;
   uint32_t headers_len;
   bool headers_bad;
} relay_event_t;

/* Longest event id accepted (ids are 36-char UUIDs; other producers get some slack). */
#define RELAY_EVENT_ID_MAX 256

/* Parses @elem into @ev (always initialised; free with relay_event_cleanup()). Returns true
 * when the event follows the contract; otherwise false with @ev->reason set, and @ev->seq
 * still filled if the seq alone was readable. */
bool relay_event_parse(const bson_value_t *elem, relay_event_t *ev);

/* The seq relay_event_parse() would read from @elem, without parsing the rest: 0 when it is
 * not a document or has no valid seq. Cheap: for skipping events already seen. */
int64_t relay_event_peek_seq(const bson_value_t *elem);

/* Frees what @ev owns; safe on a zeroed or already-cleaned event. */
void relay_event_cleanup(relay_event_t *ev);

/* True if @type is 1..128 chars of [A-Za-z0-9._-] (the contract's event type). */
bool relay_event_type_valid(const char *type, size_t len);

#endif /* RELAY_EVENT_H */
