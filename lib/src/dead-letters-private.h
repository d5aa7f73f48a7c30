/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers shared by the dead-letter operations (dead-letters.c: discard; requeue.c). They keep
 * no state: each reads or writes one document with the client it is lent.
 */
#ifndef OUTBOX_DEAD_LETTERS_PRIVATE_H
#define OUTBOX_DEAD_LETTERS_PRIVATE_H

#include "collection-private.h"

/* Reads entity @entity_id and copies its dead letter of event @event_id into @letter
 * (initialised by the caller) and its eventSeq into *@event_seq. Returns false with
 * OUTBOX_ERROR_NOT_FOUND when the entity or that dead letter does not exist. */
bool _outbox_dead_letter_find(outbox_collection_t *c, _outbox_conn_t *conn,
                              const bson_value_t *entity_id, const char *event_id, bson_t *letter,
                              int64_t *event_seq, bson_error_t *error);

/* Appends {@field: {$in: [@letter]}}: matches (or $pull-s) exactly that element. */
void _outbox_append_exact(bson_t *doc, const char *field, const bson_t *letter);

/* {"_id": {$eq: id}}: exactly this id, even when it is a document that reads as a query
 * operator ({"$ne": null} would match every entity). */
void _outbox_append_id_eq(bson_t *filter, const bson_value_t *id);

/* Checks the arguments every dead-letter operation needs. */
bool _outbox_dead_letter_args_ok(outbox_collection_t *c, const bson_value_t *entity_id,
                                 const char *event_id, const char *by, bson_error_t *error);

/* One attempt at moving @letter (as read, with the entity's @event_seq) out of the dead
 * letters; sets *@matched when the update matched. */
typedef bool (*_outbox_move_fn)(outbox_collection_t *c, _outbox_conn_t *conn,
                                const bson_value_t *entity_id, const bson_t *letter,
                                int64_t event_seq, const void *ctx, bool *matched,
                                bson_error_t *error);

/* Reads the dead letter of @event_id and calls @move with it until an update matches (the
 * element was not changed meanwhile), at most appendRetries times. NOT_FOUND when it is gone,
 * RETRIES_EXHAUSTED when the entity kept changing. */
bool _outbox_dead_letter_move(outbox_collection_t *c, const bson_value_t *entity_id,
                              const char *event_id, _outbox_move_fn move, const void *ctx,
                              bson_error_t *error);

#endif /* OUTBOX_DEAD_LETTERS_PRIVATE_H */
