/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading an entity, hard deletion and index creation (outbox/collection.h). No state of its
 * own: each call pops a client from the handle's pool, reads the handle's fixed options and may
 * update its cache (which locks itself); thread-safe.
 */
#include <string.h>

#include "check-private.h"
#include "collection-private.h"
#include "error-private.h"

/* Finds the document with _id `id`. Returns 1 and fills `doc` (initialized by the caller)
 * when found, 0 when not, -1 on error. */
static int
find_by_id(_outbox_conn_t *conn, const bson_value_t *id, bson_t *doc, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER;
   bson_t *opts = BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
   const bson_t *found = NULL;
   mongoc_cursor_t *cursor;
   int ret = 0;

   BSON_APPEND_VALUE(&filter, "_id", id);
   cursor = mongoc_collection_find_with_opts(conn->coll, &filter, opts, NULL);
   if (mongoc_cursor_next(cursor, &found)) {
      bson_reinit(doc);
      bson_concat(doc, found);
      ret = 1;
   } else if (mongoc_cursor_error(cursor, error)) {
      ret = -1;
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   bson_destroy(&filter);
   return ret;
}

bool
_outbox_read_state(outbox_collection_t *collection, _outbox_conn_t *conn, const bson_value_t *id,
                   bson_t *doc, _outbox_doc_state_t *state, bson_error_t *error)
{
   bson_t local = BSON_INITIALIZER;
   bson_t *target = doc ? doc : &local;
   bool ok = false;
   int found;

   found = find_by_id(conn, id, target, error);
   if (found < 0) {
      goto done;
   }
   if (found == 0) {
      _outbox_cache_remove(collection->cache, id);
      _outbox_set_error(error, OUTBOX_ERROR_NOT_FOUND, "no entity with that _id in %s.%s",
                        collection->db, collection->coll);
      goto done;
   }
   if (!_outbox_doc_state_parse(target, &collection->names, state, error)) {
      goto done;
   }
   _outbox_cache_put(collection->cache, id, state);
   ok = true;
done:
   bson_destroy(&local);
   return ok;
}

bool
outbox_collection_read(outbox_collection_t *collection, const bson_value_t *id, bson_t *doc,
                       int64_t *version, bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   _outbox_doc_state_t state;
   bool ok = false;

   if (doc) {
      bson_init(doc);
   }
   if (version) {
      *version = 0;
   }
   if (!collection) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection is NULL");
      return false;
   }
   if (!_outbox_id_check(id, error)) {
      return false;
   }
   _outbox_conn_open(collection, &conn);
   ok = _outbox_read_state(collection, &conn, id, doc, &state, error);
   _outbox_conn_close(collection, &conn);
   if (!ok) {
      if (doc) {
         bson_reinit(doc);
      }
      return false;
   }
   if (version) {
      *version = state.version;
   }
   return true;
}

/* One delete attempt. Returns 1 if deleted, 0 if the filter did not match, -1 on error. */
static int
delete_once(outbox_collection_t *collection, _outbox_conn_t *conn, const bson_value_t *id,
            int64_t expected_version, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER;
   bson_t reply;
   char first_event[256];
   int ret = -1;

   BSON_APPEND_VALUE(&filter, "_id", id);
   if (expected_version != OUTBOX_ANY_VERSION) {
      BSON_APPEND_INT64(&filter, collection->names.version, expected_version);
   }
   /* Pending events would be lost with the document: delete only when there are none. */
   bson_snprintf(first_event, sizeof first_event, "%s.0", collection->names.events);
   BCON_APPEND(&filter, first_event, "{", "$exists", BCON_BOOL(false), "}");
   if (mongoc_collection_delete_one(conn->coll, &filter, &collection->write_opts, &reply, error)) {
      bson_iter_t it;

      ret = bson_iter_init_find(&it, &reply, "deletedCount") && bson_iter_as_int64(&it) > 0;
   }
   bson_destroy(&reply);
   bson_destroy(&filter);
   return ret;
}

/* After a delete matched nothing: says why, or returns true if another attempt may succeed. */
static bool
delete_classify(outbox_collection_t *collection, _outbox_conn_t *conn, const bson_value_t *id,
                int64_t expected_version, bson_error_t *error)
{
   _outbox_doc_state_t state;

   if (!_outbox_read_state(collection, conn, id, NULL, &state, error)) {
      return false;
   }
   if (expected_version != OUTBOX_ANY_VERSION && state.version != expected_version) {
      _outbox_set_error(error, OUTBOX_ERROR_CONFLICT,
                        "entity is at version %" PRId64 ", expected %" PRId64, state.version,
                        expected_version);
      return false;
   }
   if (state.pending > 0) {
      _outbox_set_error(error, OUTBOX_ERROR_PENDING_EVENTS,
                        "entity has %" PRId64 " unpublished event(s); delete it once the relay "
                        "has published them",
                        state.pending);
      return false;
   }
   return true;
}

bool
outbox_collection_delete(outbox_collection_t *collection, const bson_value_t *id,
                         int64_t expected_version, bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   bool ok = false;

   if (!collection || (expected_version < 1 && expected_version != OUTBOX_ANY_VERSION)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "collection is NULL or expected_version is not >= 1");
      return false;
   }
   if (!_outbox_id_check(id, error)) {
      return false;
   }
   _outbox_conn_open(collection, &conn);
   for (int64_t attempt = 0; attempt < collection->retries; attempt++) {
      int r = delete_once(collection, &conn, id, expected_version, error);

      if (r != 0) {
         ok = r > 0;
         if (ok) {
            _outbox_cache_remove(collection->cache, id);
         }
         goto done;
      }
      if (!delete_classify(collection, &conn, id, expected_version, error)) {
         goto done;
      }
   }
   _outbox_set_error(error, OUTBOX_ERROR_RETRIES_EXHAUSTED,
                     "entity kept changing during %" PRId64 " delete attempts",
                     collection->retries);
done:
   _outbox_conn_close(collection, &conn);
   return ok;
}

bool
outbox_collection_ensure_indexes(outbox_collection_t *collection, bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   char first_event[256], first_letter[256];
   bson_t *cmd;
   bool ok;

   if (!collection) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection is NULL");
      return false;
   }
   bson_snprintf(first_event, sizeof first_event, "%s.0", collection->names.events);
   bson_snprintf(first_letter, sizeof first_letter, "%s.0", collection->names.dead_letters);
   cmd =
      BCON_NEW("createIndexes", BCON_UTF8(collection->coll), "indexes", "[", "{", "name",
               BCON_UTF8("outbox_pending"), "key", "{", collection->names.event_seq, BCON_INT32(1),
               "}", "partialFilterExpression", "{", first_event, "{", "$exists", BCON_BOOL(true),
               "}", "}", "}", "{", "name", BCON_UTF8("outbox_dead_letters"), "key", "{",
               collection->names.event_seq, BCON_INT32(1), "}", "partialFilterExpression", "{",
               first_letter, "{", "$exists", BCON_BOOL(true), "}", "}", "}", "]");
   _outbox_conn_open(collection, &conn);
   ok = mongoc_collection_write_command_with_opts(conn.coll, cmd, &collection->write_opts, NULL,
                                                  error);
   _outbox_conn_close(collection, &conn);
   bson_destroy(cmd);
   return ok;
}

void
_outbox_map_size_error(bson_error_t *error)
{
   char msg[sizeof error->message];
   bool server, too_large;

   if (!error) {
      return;
   }
   server = error->domain == MONGOC_ERROR_SERVER || error->domain == MONGOC_ERROR_COLLECTION ||
            error->domain == MONGOC_ERROR_QUERY;
   too_large = strstr(error->message, "too large") != NULL;
   if ((server &&
        (error->code == 17419 || error->code == 10334 || (error->code == 2 && too_large))) ||
       (error->domain == MONGOC_ERROR_BSON && too_large)) {
      bson_strncpy(msg, error->message, sizeof msg);
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_SIZE, "document would be too large: %s", msg);
   }
}
