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
   char *id;         /* NULL if missing or invalid */
   int64_t seq;      /* 0 if missing or invalid (valid seqs start at 1) */
   char *type;
   bool has_time;
   int64_t time_ms;
   bson_t *data;       /* NULL when missing or invalid */
   int64_t requeued;   /* requeued.count: how often an operator requeued it, 0 = never */
   const char *reason; /* NULL when valid, else a static sentence for the dead letter */
} relay_event_t;

/* Longest event id accepted (ids are 36-char UUIDs; other producers get some slack). */
#define RELAY_EVENT_ID_MAX 256

/* Parses @elem into @ev (always initialised; free with relay_event_cleanup()). Returns true
 * when the event follows the contract; otherwise false with @ev->reason set, and @ev->seq
 * still filled if the seq alone was readable. */
bool relay_event_parse(const bson_value_t *elem, relay_event_t *ev);

/* Frees what @ev owns; safe on a zeroed or already-cleaned event. */
void relay_event_cleanup(relay_event_t *ev);

/* True if @type is 1..128 chars of [A-Za-z0-9._-] (the contract's event type). */
bool relay_event_type_valid(const char *type, size_t len);

#endif /* RELAY_EVENT_H */
