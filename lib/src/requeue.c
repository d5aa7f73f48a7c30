/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Requeuing a dead letter (see REQUEUE in outbox/dead-letters.h): one update, filtered on the
 * _id, the eventSeq as read and the exact dead letter, that $pull-s the dead letter, $push-es
 * the event (with its requeued marker) among the pending ones in seq order, and $inc-s the
 * requeues counter so the relay's change stream passes it. No state: each call pops a client.
 */
#include "outbox/dead-letters.h"

#include <string.h>

#include "dead-letters-private.h"
#include "error-private.h"
#include "event-private.h"

/* The event of @letter, checked against the stored contract, with a fresh requeued marker
 * (count one more than before) appended to @out (initialised by the caller). */
static bool
requeued_event(const bson_t *letter, const char *by, bson_t *out, bson_error_t *error)
{
   bson_iter_t it, sub;
   bson_t event, marker;
   const uint8_t *data;
   uint32_t len;
   int64_t count = 0;
   bson_error_t why;

   if (!bson_iter_init_find(&it, letter, "event") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "the dead letter holds no event document: discard it instead");
      return false;
   }
   bson_iter_document(&it, &len, &data);
   if (!bson_init_static(&event, data, len) || !_outbox_stored_event_validate(&event, &why)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "the event breaks the stored contract (%s): it would be dead-lettered "
                        "again; fix it or discard it",
                        why.message);
      return false;
   }
   if (bson_iter_init(&it, &event) && bson_iter_find_descendant(&it, "requeued.count", &sub) &&
       BSON_ITER_HOLDS_NUMBER(&sub)) {
      count = bson_iter_as_int64(&sub);
   }
   bson_copy_to_excluding_noinit(&event, out, "requeued", NULL);
   BSON_APPEND_DOCUMENT_BEGIN(out, "requeued", &marker);
   BSON_APPEND_DATE_TIME(&marker, "at", _outbox_now_ms());
   BSON_APPEND_UTF8(&marker, "by", by);
   BSON_APPEND_INT64(&marker, "count", count + 1);
   bson_append_document_end(out, &marker);
   return true;
}

static bool
requeue_once(outbox_collection_t *c, _outbox_conn_t *conn, const bson_value_t *entity_id,
             const bson_t *letter, int64_t event_seq, const void *ctx, bool *matched,
             bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, update = BSON_INITIALIZER, op, push, each, sort, reply;
   bson_t event = BSON_INITIALIZER;
   bson_iter_t it;
   bool ok;

   if (!requeued_event(letter, (const char *)ctx, &event, error)) {
      bson_destroy(&event);
      return false;
   }

   _outbox_append_id_eq(&filter, entity_id);
   BSON_APPEND_INT64(&filter, c->names.event_seq, event_seq);
   _outbox_append_exact(&filter, c->names.dead_letters, letter);
   BSON_APPEND_DOCUMENT_BEGIN(&update, "$pull", &op);
   _outbox_append_exact(&op, c->names.dead_letters, letter);
   bson_append_document_end(&update, &op);
   BSON_APPEND_DOCUMENT_BEGIN(&update, "$push", &op);
   BSON_APPEND_DOCUMENT_BEGIN(&op, c->names.events, &push);
   BSON_APPEND_ARRAY_BEGIN(&push, "$each", &each);
   BSON_APPEND_DOCUMENT(&each, "0", &event);
   bson_append_array_end(&push, &each);
   /* Pending events stay oldest first: the requeued one goes before later seqs. */
   BSON_APPEND_DOCUMENT_BEGIN(&push, "$sort", &sort);
   BSON_APPEND_INT32(&sort, "seq", 1);
   bson_append_document_end(&push, &sort);
   bson_append_document_end(&op, &push);
   bson_append_document_end(&update, &op);
   BSON_APPEND_DOCUMENT_BEGIN(&update, "$inc", &op);
   BSON_APPEND_INT64(&op, c->names.requeues, 1);
   bson_append_document_end(&update, &op);
   ok = mongoc_collection_update_one(conn->coll, &filter, &update, &c->write_opts, &reply, error);
   *matched = ok && bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) > 0;
   bson_destroy(&reply);
   bson_destroy(&filter);
   bson_destroy(&update);
   bson_destroy(&event);
   return ok;
}

bool
outbox_collection_requeue_dead_letter(outbox_collection_t *collection,
                                      const bson_value_t *entity_id, const char *event_id,
                                      const char *by, bson_error_t *error)
{
   if (!_outbox_dead_letter_args_ok(collection, entity_id, event_id, by, error)) {
      return false;
   }
   return _outbox_dead_letter_move(collection, entity_id, event_id, requeue_once, by, error);
}
