/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Listing stored events (pending, dead letters, discarded dead letters): the cursor of
 * outbox_collection_find_events(). The server narrows the documents (partial index plus an
 * $elemMatch of the filters); the cursor then checks every element itself, because $elemMatch
 * only says that some element of a document matches. A cursor belongs to one thread.
 */
#include <string.h>

#include "collection-private.h"
#include "error-private.h"
#include "stored-events-private.h"

struct _outbox_event_cursor_t {
   outbox_collection_t *collection;
   outbox_place_t place;
   const char *field; /* events, dead letters or discarded: the array walked */
   _outbox_event_filter_t filter;
   int64_t returned;
   _outbox_conn_t conn;
   mongoc_cursor_t *mcursor;
   bson_iter_t elements; /* inside the current document (owned by mcursor) */
   bool in_doc;
   bson_value_t entity_id;
   bson_t event, entry; /* static views into the current document */
   outbox_stored_event_t current;
   bson_error_t error;
   bool failed;
};

static const char *
place_field(const outbox_collection_t *c, outbox_place_t place)
{
   switch (place) {
   case OUTBOX_PLACE_PENDING:
      return c->names.events;
   case OUTBOX_PLACE_DEAD_LETTER:
      return c->names.dead_letters;
   case OUTBOX_PLACE_DISCARDED:
      return c->names.discarded;
   default:
      return NULL;
   }
}

outbox_event_cursor_t *
outbox_collection_find_events(outbox_collection_t *collection, outbox_place_t place,
                              const bson_t *opts, bson_error_t *error)
{
   outbox_event_cursor_t *cur;
   const char *field = collection ? place_field(collection, place) : NULL;

   if (!field) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "collection is NULL or place is not an outbox_place_t");
      return NULL;
   }
   cur = bson_malloc0(sizeof *cur);
   if (!_outbox_event_filter_parse(opts, &cur->filter, error)) {
      bson_free(cur);
      return NULL;
   }
   cur->collection = collection;
   cur->place = place;
   cur->field = field;
   return cur;
}

bool
_outbox_has_index(mongoc_collection_t *coll, const char *name)
{
   mongoc_cursor_t *c = mongoc_collection_find_indexes_with_opts(coll, NULL);
   const bson_t *doc;
   bson_iter_t it;
   bool found = false;

   while (!found && mongoc_cursor_next(c, &doc)) {
      found = bson_iter_init_find(&it, doc, "name") && BSON_ITER_HOLDS_UTF8(&it) &&
              strcmp(bson_iter_utf8(&it, NULL), name) == 0;
   }
   mongoc_cursor_destroy(c);
   return found;
}

const char *
_outbox_place_index(outbox_place_t place)
{
   return place == OUTBOX_PLACE_PENDING       ? "outbox_pending"
          : place == OUTBOX_PLACE_DEAD_LETTER ? "outbox_dead_letters"
                                              : NULL;
}

static void
open_cursor(outbox_event_cursor_t *cur)
{
   bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, proj;
   const char *index = _outbox_place_index(cur->place);

   _outbox_conn_open(cur->collection, &cur->conn);
   _outbox_event_filter_query(&cur->filter, cur->place, cur->field, &filter);
   BSON_APPEND_DOCUMENT_BEGIN(&opts, "projection", &proj);
   BSON_APPEND_INT32(&proj, cur->field, 1);
   bson_append_document_end(&opts, &proj);
   /* With an entity id the _id index answers better than the partial index. */
   if (index && !cur->filter.has_entity && _outbox_has_index(cur->conn.coll, index)) {
      BSON_APPEND_UTF8(&opts, "hint", index);
   }
   cur->mcursor = mongoc_collection_find_with_opts(cur->conn.coll, &filter, &opts, NULL);
   bson_destroy(&filter);
   bson_destroy(&opts);
}

/* Starts walking the array of the next document; false at the end or on an error. */
static bool
next_document(outbox_event_cursor_t *cur)
{
   const bson_t *doc;
   bson_iter_t it;

   if (!mongoc_cursor_next(cur->mcursor, &doc)) {
      cur->failed = mongoc_cursor_error(cur->mcursor, &cur->error);
      return false;
   }
   bson_value_destroy(&cur->entity_id);
   memset(&cur->entity_id, 0, sizeof cur->entity_id);
   if (bson_iter_init_find(&it, doc, "_id")) {
      bson_value_copy(bson_iter_value(&it), &cur->entity_id);
   }
   if (!bson_iter_init_find(&it, doc, cur->field) || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &cur->elements)) {
      _outbox_set_error(&cur->error, OUTBOX_ERROR_MALFORMED_DOCUMENT,
                        "a document's %s field is not an array", cur->field);
      cur->failed = true;
      return false;
   }
   cur->in_doc = true;
   return true;
}

bool
outbox_event_cursor_next(outbox_event_cursor_t *cursor, const outbox_stored_event_t **event)
{
   if (!cursor || cursor->failed ||
       (cursor->filter.limit > 0 && cursor->returned >= cursor->filter.limit)) {
      return false;
   }
   if (!cursor->mcursor) {
      open_cursor(cursor);
   }
   for (;;) {
      if (!cursor->in_doc && !next_document(cursor)) {
         return false;
      }
      if (!bson_iter_next(&cursor->elements)) {
         cursor->in_doc = false;
         continue;
      }
      _outbox_stored_event_read(&cursor->elements, cursor->place, &cursor->event, &cursor->entry,
                                &cursor->current);
      cursor->current.entity_id = &cursor->entity_id;
      if (_outbox_event_filter_match(&cursor->filter, &cursor->current)) {
         cursor->returned++;
         if (event) {
            *event = &cursor->current;
         }
         return true;
      }
   }
}

bool
outbox_event_cursor_error(const outbox_event_cursor_t *cursor, bson_error_t *error)
{
   if (cursor && cursor->failed && error) {
      memcpy(error, &cursor->error, sizeof *error);
   }
   return cursor && cursor->failed;
}

void
outbox_event_cursor_destroy(outbox_event_cursor_t *cursor)
{
   if (!cursor) {
      return;
   }
   mongoc_cursor_destroy(cursor->mcursor);
   if (cursor->conn.client) {
      _outbox_conn_close(cursor->collection, &cursor->conn);
   }
   bson_value_destroy(&cursor->entity_id);
   _outbox_event_filter_cleanup(&cursor->filter);
   bson_free(cursor);
}
