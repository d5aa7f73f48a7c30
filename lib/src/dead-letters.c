/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Counting pending events and dead letters, and discarding a dead letter. Every write here is
 * one update of one document whose filter requires the exact dead letter element to still be
 * there, so it can neither lose an element nor record one twice; a concurrent change makes it
 * match nothing, and the element is then read again. No state: each call pops a client.
 */
#include <string.h>

#include "collection-private.h"
#include "dead-letters-private.h"
#include "error-private.h"
#include "event-private.h"
#include "stored-events-private.h"

/* One $group over the documents that have "<field>.0", through the partial index if any. */
static bool
aggregate_counts(_outbox_conn_t *conn, const char *field, const char *index, const bson_t *group,
                 bson_t *out, bson_error_t *error)
{
   char *first = bson_strdup_printf("%s.0", field);
   bson_t *pipeline =
      BCON_NEW("pipeline", "[", "{", "$match", "{", first, "{", "$exists", BCON_BOOL(true), "}",
               "}", "}", "{", "$group", BCON_DOCUMENT(group), "}", "]");
   bson_t opts = BSON_INITIALIZER;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool ok;

   if (_outbox_has_index(conn->coll, index)) {
      BSON_APPEND_UTF8(&opts, "hint", index);
   }
   cursor = mongoc_collection_aggregate(conn->coll, MONGOC_QUERY_NONE, pipeline, &opts, NULL);
   bson_init(out);
   if (mongoc_cursor_next(cursor, &doc)) {
      bson_copy_to_excluding_noinit(doc, out, "_id", NULL);
   }
   ok = !mongoc_cursor_error(cursor, error);
   mongoc_cursor_destroy(cursor);
   bson_destroy(&opts);
   bson_destroy(pipeline);
   bson_free(first);
   return ok;
}

static int64_t
get_int(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, key)) {
      return 0;
   }
   return BSON_ITER_HOLDS_DATE_TIME(&it) ? bson_iter_date_time(&it) : bson_iter_as_int64(&it);
}

bool
outbox_collection_count_events(outbox_collection_t *collection, outbox_counts_t *counts,
                               bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   bson_t pending, letters;
   bool ok;

   if (!collection || !counts) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "collection or counts is NULL");
      return false;
   }
   memset(counts, 0, sizeof *counts);
   char *events = bson_strdup_printf("$%s", collection->names.events);
   char *times = bson_strdup_printf("$%s.time", collection->names.events);
   char *dead = bson_strdup_printf("$%s", collection->names.dead_letters);
   char *ats = bson_strdup_printf("$%s.at", collection->names.dead_letters);
   /* A field that is not an array (what $set: {"events.0": ...} makes of a document without
    * one; it matches the partial index) would fail $size for the whole collection, for good:
    * such documents are counted apart instead ($cond is lazy: $size never sees them). */
   bson_t *g_pending = BCON_NEW(
      "_id", BCON_NULL, "docs", "{", "$sum", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(events),
      "}", BCON_INT32(1), BCON_INT32(0), "]", "}", "}", "events", "{", "$sum", "{", "$cond", "[",
      "{", "$isArray", BCON_UTF8(events), "}", "{", "$size", BCON_UTF8(events), "}", BCON_INT32(0),
      "]", "}", "}", "oldest", "{", "$min", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(events),
      "}", "{", "$arrayElemAt", "[", BCON_UTF8(times), BCON_INT32(0), "]", "}", BCON_NULL, "]", "}",
      "}", "malformed", "{", "$sum", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(events), "}",
      BCON_INT32(0), BCON_INT32(1), "]", "}", "}");
   bson_t *g_dead = BCON_NEW(
      "_id", BCON_NULL, "docs", "{", "$sum", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(dead),
      "}", BCON_INT32(1), BCON_INT32(0), "]", "}", "}", "letters", "{", "$sum", "{", "$cond", "[",
      "{", "$isArray", BCON_UTF8(dead), "}", "{", "$size", BCON_UTF8(dead), "}", BCON_INT32(0), "]",
      "}", "}", "newest", "{", "$max", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(dead), "}",
      "{", "$arrayElemAt", "[", BCON_UTF8(ats), BCON_INT32(-1), "]", "}", BCON_NULL, "]", "}", "}",
      "malformed", "{", "$sum", "{", "$cond", "[", "{", "$isArray", BCON_UTF8(dead), "}",
      BCON_INT32(0), BCON_INT32(1), "]", "}", "}");

   _outbox_conn_open(collection, &conn);
   ok = aggregate_counts(&conn, collection->names.events, "outbox_pending", g_pending, &pending,
                         error);
   if (ok) {
      counts->pending_documents = get_int(&pending, "docs");
      counts->pending_events = get_int(&pending, "events");
      counts->oldest_pending_ms = get_int(&pending, "oldest");
      counts->malformed_documents = get_int(&pending, "malformed");
      bson_destroy(&pending);
      ok = aggregate_counts(&conn, collection->names.dead_letters, "outbox_dead_letters", g_dead,
                            &letters, error);
   }
   if (ok) {
      counts->dead_letter_documents = get_int(&letters, "docs");
      counts->dead_letters = get_int(&letters, "letters");
      counts->newest_dead_letter_ms = get_int(&letters, "newest");
      counts->malformed_documents += get_int(&letters, "malformed");
      bson_destroy(&letters);
   }
   _outbox_conn_close(collection, &conn);
   bson_destroy(g_pending);
   bson_destroy(g_dead);
   bson_free(events);
   bson_free(times);
   bson_free(dead);
   bson_free(ats);
   return ok;
}

bool
_outbox_dead_letter_find(outbox_collection_t *c, _outbox_conn_t *conn,
                         const bson_value_t *entity_id, const char *event_id, bson_t *letter,
                         int64_t *event_seq, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, proj;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool found = false;
   bson_iter_t it, elems;

   _outbox_append_id_eq(&filter, entity_id);
   BSON_APPEND_DOCUMENT_BEGIN(&opts, "projection", &proj);
   BSON_APPEND_INT32(&proj, c->names.dead_letters, 1);
   BSON_APPEND_INT32(&proj, c->names.event_seq, 1);
   bson_append_document_end(&opts, &proj);
   cursor = mongoc_collection_find_with_opts(conn->coll, &filter, &opts, NULL);
   if (mongoc_cursor_next(cursor, &doc)) {
      *event_seq = bson_iter_init_find(&it, doc, c->names.event_seq) ? bson_iter_as_int64(&it) : 0;
      if (bson_iter_init_find(&it, doc, c->names.dead_letters) && BSON_ITER_HOLDS_ARRAY(&it) &&
          bson_iter_recurse(&it, &elems)) {
         while (!found && bson_iter_next(&elems)) {
            bson_t event, entry;
            outbox_stored_event_t e;
            _outbox_stored_event_read(&elems, OUTBOX_PLACE_DEAD_LETTER, &event, &entry, &e);
            if (e.event_id && !strcmp(e.event_id, event_id) && entry.len > 5) {
               bson_copy_to(&entry, letter);
               found = true;
            }
         }
      }
   }
   if (!mongoc_cursor_error(cursor, error) && !found) {
      _outbox_set_error(error, OUTBOX_ERROR_NOT_FOUND, "no dead letter with event id \"%.64s\"",
                        event_id);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(&filter);
   bson_destroy(&opts);
   return found;
}

/* {"<dead letters>": {$in: [letter]}}: the exact element (as the relay's own moves do). */
void
_outbox_append_exact(bson_t *doc, const char *field, const bson_t *letter)
{
   bson_t cond, arr;
   BSON_APPEND_DOCUMENT_BEGIN(doc, field, &cond);
   BSON_APPEND_ARRAY_BEGIN(&cond, "$in", &arr);
   BSON_APPEND_DOCUMENT(&arr, "0", letter);
   bson_append_array_end(&cond, &arr);
   bson_append_document_end(doc, &cond);
}

void
_outbox_append_id_eq(bson_t *filter, const bson_value_t *id)
{
   bson_t eq;
   BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &eq);
   BSON_APPEND_VALUE(&eq, "$eq", id);
   bson_append_document_end(filter, &eq);
}

typedef struct {
   const char *by, *reason;
} discard_args_t;

static bool
discard_once(outbox_collection_t *c, _outbox_conn_t *conn, const bson_value_t *entity_id,
             const bson_t *letter, int64_t event_seq, const void *ctx, bool *matched,
             bson_error_t *error)
{
   const char *by = ((const discard_args_t *)ctx)->by;
   const char *reason = ((const discard_args_t *)ctx)->reason;
   bson_t filter = BSON_INITIALIZER, update = BSON_INITIALIZER, op, entry, discarded, reply;
   bson_iter_t it;
   bool ok;

   _outbox_append_id_eq(&filter, entity_id);
   _outbox_append_exact(&filter, c->names.dead_letters, letter);
   BSON_APPEND_DOCUMENT_BEGIN(&update, "$pull", &op);
   _outbox_append_exact(&op, c->names.dead_letters, letter);
   bson_append_document_end(&update, &op);
   BSON_APPEND_DOCUMENT_BEGIN(&update, "$push", &op);
   BSON_APPEND_DOCUMENT_BEGIN(&op, c->names.discarded, &entry);
   bson_concat(&entry, letter);
   BSON_APPEND_DOCUMENT_BEGIN(&entry, "discarded", &discarded);
   BSON_APPEND_DATE_TIME(&discarded, "at", _outbox_now_ms());
   BSON_APPEND_UTF8(&discarded, "by", by);
   BSON_APPEND_UTF8(&discarded, "reason", reason);
   bson_append_document_end(&entry, &discarded);
   bson_append_document_end(&op, &entry);
   bson_append_document_end(&update, &op);
   ok = mongoc_collection_update_one(conn->coll, &filter, &update, &c->write_opts, &reply, error);
   *matched = ok && bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) > 0;
   bson_destroy(&reply);
   bson_destroy(&filter);
   bson_destroy(&update);
   return ok;
}

bool
_outbox_dead_letter_args_ok(outbox_collection_t *c, const bson_value_t *entity_id,
                            const char *event_id, const char *by, bson_error_t *error)
{
   if (!c || !entity_id || !event_id || !*event_id || !by || !*by) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "collection, entity id, event id and who (by) are required");
      return false;
   }
   if (!bson_utf8_validate(by, strlen(by), false)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "by is not valid UTF-8");
      return false;
   }
   return true;
}

bool
outbox_collection_discard_dead_letter(outbox_collection_t *collection,
                                      const bson_value_t *entity_id, const char *event_id,
                                      const char *by, const char *reason, bson_error_t *error)
{
   discard_args_t args = {by, reason};

   if (!_outbox_dead_letter_args_ok(collection, entity_id, event_id, by, error)) {
      return false;
   }
   if (!reason || !*reason || !bson_utf8_validate(reason, strlen(reason), false)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "a reason (valid UTF-8, not empty) is required to discard");
      return false;
   }
   return _outbox_dead_letter_move(collection, entity_id, event_id, discard_once, &args, error);
}

bool
_outbox_dead_letter_move(outbox_collection_t *c, const bson_value_t *entity_id,
                         const char *event_id, _outbox_move_fn move, const void *ctx,
                         bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   bool ok = false, matched = false;

   _outbox_conn_open(c, &conn);
   for (int64_t attempt = 0; attempt < c->retries && !matched; attempt++) {
      bson_t letter = BSON_INITIALIZER;
      int64_t seq = 0;
      ok = _outbox_dead_letter_find(c, &conn, entity_id, event_id, &letter, &seq, error) &&
           move(c, &conn, entity_id, &letter, seq, ctx, &matched, error);
      bson_destroy(&letter);
      if (!ok) {
         break;
      }
   }
   if (ok && !matched) {
      _outbox_set_error(error, OUTBOX_ERROR_RETRIES_EXHAUSTED,
                        "the entity kept changing; try again");
      ok = false;
   }
   _outbox_conn_close(c, &conn);
   return ok;
}
