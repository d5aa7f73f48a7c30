/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Shared by the event cursor (stored-events.c) and the dead-letter operations
 * (dead-letters.c): the filters of outbox_collection_find_events() and reading one stored
 * element (a pending event, a dead letter or a discarded one) into outbox_stored_event_t
 * (event-filter.c). A filter belongs to the one cursor or call that parsed it.
 */
#ifndef OUTBOX_STORED_EVENTS_PRIVATE_H
#define OUTBOX_STORED_EVENTS_PRIVATE_H

#include "outbox/dead-letters.h"

typedef struct {
   bool has_entity;
   bson_value_t entity; /* owned */
   char *event_id, *type, *reason;
   bool has_before;
   int64_t before_ms;
   int64_t limit;
} _outbox_event_filter_t;

/* Parses the options of outbox_collection_find_events() (NULL: no filter). */
bool _outbox_event_filter_parse(const bson_t *opts, _outbox_event_filter_t *filter,
                                bson_error_t *error);

void _outbox_event_filter_cleanup(_outbox_event_filter_t *filter);

/* The find filter narrowing documents: "<field>.0" exists, the _id, and an $elemMatch of the
 * event id, type and time bound. Appended to @query. */
void _outbox_event_filter_query(const _outbox_event_filter_t *filter, outbox_place_t place,
                                const char *field, bson_t *query);

/* Whether one element read by _outbox_stored_event_read() passes every filter. */
bool _outbox_event_filter_match(const _outbox_event_filter_t *filter,
                                const outbox_stored_event_t *event);

/* Reads the element at @element (of the array of @place) into @out, pointing into the
 * document; @event and @entry receive static views (no need to destroy them). entity_id is
 * left NULL. */
void _outbox_stored_event_read(const bson_iter_t *element, outbox_place_t place, bson_t *event,
                               bson_t *entry, outbox_stored_event_t *out);

/* The partial index of @place ("outbox_pending", "outbox_dead_letters"), or NULL. */
const char *_outbox_place_index(outbox_place_t place);

/* Whether the collection has index @name (a hint on a missing index is an error, so the
 * partial indexes are hinted only when they exist). */
bool _outbox_has_index(mongoc_collection_t *coll, const char *name);

#endif /* OUTBOX_STORED_EVENTS_PRIVATE_H */
