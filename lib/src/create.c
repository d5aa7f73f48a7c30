/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Creating an entity with its initial events: one insert. No state of its own: each call pops a
 * client and records the new entity in the handle's cache (which locks itself); the events are
 * the caller's, marked committed only on success. Thread-safe.
 */
#include <string.h>

#include "check-private.h"
#include "collection-private.h"
#include "error-private.h"
#include "event-private.h"
#include "outcome-private.h"

static void
build_document(const outbox_collection_t *c, const bson_value_t *id, const bson_t *fields,
               outbox_event_t *const *events, size_t n, int64_t time, bson_t *doc)
{
   bson_t arr;

   BSON_APPEND_VALUE(doc, "_id", id);
   if (fields) {
      bson_concat(doc, fields);
   }
   BSON_APPEND_INT64(doc, c->names.version, 1);
   BSON_APPEND_INT64(doc, c->names.event_seq, (int64_t)n);
   bson_append_array_begin(doc, c->names.events, -1, &arr);
   _outbox_events_append_stored(&arr, events, n, 1, time);
   bson_append_array_end(doc, &arr);
   _outbox_outcome_append_ring(c, events, n, doc);
}

/* A duplicate key on the _id index means the entity exists; a duplicate on another unique
 * index is the caller's business and passes through unchanged. */
static bool
is_duplicate_id(const bson_error_t *error)
{
   return (error->domain == MONGOC_ERROR_SERVER || error->domain == MONGOC_ERROR_COLLECTION) &&
          error->code == 11000 && strstr(error->message, "_id_") != NULL;
}

static bool
check_create(const outbox_collection_t *c, const bson_value_t *id, const bson_t *fields,
             outbox_event_t *const *events, size_t n, bson_error_t *error)
{
   if (!c) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection is NULL");
      return false;
   }
   if (!_outbox_id_check(id, error) || !_outbox_fields_check(fields, &c->names, error) ||
       !_outbox_events_check(events, n, error)) {
      return false;
   }
   if ((int64_t)n > c->max_pending) {
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_PENDING,
                        "%zu events exceed maxPendingEvents (%" PRId64 ")", n, c->max_pending);
      return false;
   }
   return true;
}

/* Says why the insert failed: the entity exists, the outcome is unknown (the events remember
 * the attempt, made at version 0 and eventSeq 0), or the server's error (size mapped). */
static void
insert_failed(outbox_collection_t *collection, const bson_value_t *id,
              outbox_event_t *const *events, size_t n, int64_t time, bson_error_t *error)
{
   if (is_duplicate_id(error)) {
      _outbox_set_error(error, OUTBOX_ERROR_ALREADY_EXISTS,
                        "an entity with that _id exists in %s.%s", collection->db,
                        collection->coll);
   } else if (_outbox_outcome_is_unknown(error)) {
      _outbox_cache_remove(collection->cache, id);
      _outbox_outcome_set_unknown(error, events, n, 0, 0, time);
   } else {
      _outbox_map_size_error(error);
   }
}

bool
outbox_collection_create(outbox_collection_t *collection, const bson_value_t *id,
                         const bson_t *fields, outbox_event_t *const *events, size_t n_events,
                         outbox_commit_t *result, bson_error_t *error)
{
   outbox_commit_t ignored;
   _outbox_conn_t conn = {0};
   bson_t doc = BSON_INITIALIZER;
   bson_error_t local;
   int64_t time = _outbox_now_ms();
   int resolved;
   bool ok = false;

   error = error ? error : &local;
   result = result ? result : &ignored;
   memset(result, 0, sizeof *result);
   if (!check_create(collection, id, fields, events, n_events, error)) {
      goto done;
   }
   build_document(collection, id, fields, events, n_events, time, &doc);
   if ((int64_t)doc.len > collection->max_doc_size) {
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_SIZE,
                        "document of %" PRIu32 " bytes is past maxDocumentSize (%" PRId64 ")",
                        doc.len, collection->max_doc_size);
      goto done;
   }
   _outbox_conn_open(collection, &conn);
   /* A retry of a create whose outcome was unknown first finds out whether it was stored. */
   resolved = _outbox_outcome_resolve(collection, &conn, id, events, n_events, result, error);
   ok = resolved > 0 ||
        (resolved == 0 &&
         mongoc_collection_insert_one(conn.coll, &doc, &collection->write_opts, NULL, error));
   _outbox_conn_close(collection, &conn);
   if (resolved != 0) {
      goto done;
   }
   if (!ok) {
      insert_failed(collection, id, events, n_events, time, error);
      goto done;
   }
   result->version = 1;
   if (n_events > 0) {
      result->first_seq = 1;
      result->last_seq = (int64_t)n_events;
      _outbox_events_mark_committed(events, n_events, 1, time);
   }
   _outbox_cache_put(collection->cache, id,
                     &(_outbox_doc_state_t){.version = 1,
                                            .event_seq = (int64_t)n_events,
                                            .pending = (int64_t)n_events,
                                            .size = (int64_t)doc.len});
done:
   bson_destroy(&doc);
   return ok;
}
