/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Writes back to MongoDB: clearing acknowledged events, moving poison events to the dead
 * letters, and saving the checkpoint.
 *
 * The clear of one entity is
 *    update({_id: X}, {$pull: {<events>: {id: {$in: [acknowledged ids]}}}})
 * Why this is safe:
 *  - It removes exactly the events this relay saw acknowledged: event ids are unique (UUIDs),
 *    so no other event can match, and an event appended meanwhile is never touched.
 *  - It never touches version, eventSeq or business fields, so it neither conflicts with the
 *    application's optimistic concurrency nor shows up in the relay's own change stream
 *    (the stream only passes updates that set eventSeq).
 *  - The id itself is the optimistic check: a stale or duplicate relay (two relays started
 *    with the same name) can only pull an event it published itself; if the other relay
 *    already pulled it, the statement matches nothing and changes nothing. Two such relays
 *    deliver events twice (at-least-once), they never lose or wrongly remove one.
 * Clears of many entities go out as one unordered bulk write per collection.
 */
#include <inttypes.h>
#include <string.h>

#include "log.h"
#include "relay-private.h"

typedef struct {
   mongoc_bulk_operation_t *bulk;
   relay_entity_t **entities; /* statement index -> entity */
   size_t n;
} coll_batch_t;

static bool
add_clear(relay_t *r, coll_batch_t *b, relay_entity_t *e, size_t cap)
{
   bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, pull, cond, in, ids;
   bson_error_t error;
   size_t n = 0;
   char key[16];
   bool ok;

   if (!b->bulk) {
      bson_t opts = BSON_INITIALIZER;
      BSON_APPEND_BOOL(&opts, "ordered", false);
      b->bulk = mongoc_collection_create_bulk_operation_with_opts(r->colls[e->coll], &opts);
      bson_destroy(&opts);
      b->entities = bson_malloc(cap * sizeof *b->entities);
   }
   bson_append_value(&q, "_id", 3, &e->id);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$pull", &pull);
   BSON_APPEND_DOCUMENT_BEGIN(&pull, r->cfg->events_field, &cond);
   BSON_APPEND_DOCUMENT_BEGIN(&cond, "id", &in);
   BSON_APPEND_ARRAY_BEGIN(&in, "$in", &ids);
   for (relay_item_t *it = e->head; it; it = it->next) {
      if (it->state == RELAY_ITEM_ACKED) {
         const char *k;
         bson_uint32_to_string((uint32_t) n++, &k, key, sizeof key);
         bson_append_utf8(&ids, k, -1, it->ev.id, -1);
      }
   }
   bson_append_array_end(&in, &ids);
   bson_append_document_end(&cond, &in);
   bson_append_document_end(&pull, &cond);
   bson_append_document_end(&u, &pull);
   ok = mongoc_bulk_operation_update_one_with_opts(b->bulk, &q, &u, NULL, &error);
   if (ok) {
      b->entities[b->n++] = e;
   } else {
      relay_log(RELAY_LOG_ERROR, "writer", "cannot build a clear: %s", error.message);
   }
   bson_destroy(&q);
   bson_destroy(&u);
   return ok;
}

/* Moves one poison event to the dead letters, in one update so it is never in both places
 * or in neither: the filter requires the event to still be pending (exactly this value),
 * $pull removes it and $push records it with the reason. Dead letters are rare, so one
 * round-trip each is fine, and it tells us whether the event was still there. */
static bool
dead_letter(relay_t *r, relay_entity_t *e, relay_item_t *it, bool *moved, bson_error_t *error)
{
   const char *ev = r->cfg->events_field;
   bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, reply, doc, arr, sub, entry;
   bson_iter_t iter;
   bool ok;

   bson_append_value(&q, "_id", 3, &e->id);
   BSON_APPEND_DOCUMENT_BEGIN(&q, ev, &doc);
   BSON_APPEND_ARRAY_BEGIN(&doc, "$in", &arr);
   bson_append_value(&arr, "0", 1, &it->ev.raw);
   bson_append_array_end(&doc, &arr);
   bson_append_document_end(&q, &doc);

   BSON_APPEND_DOCUMENT_BEGIN(&u, "$pull", &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&doc, ev, &sub);
   BSON_APPEND_ARRAY_BEGIN(&sub, "$in", &arr);
   bson_append_value(&arr, "0", 1, &it->ev.raw);
   bson_append_array_end(&sub, &arr);
   bson_append_document_end(&doc, &sub);
   bson_append_document_end(&u, &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$push", &doc);
   BSON_APPEND_DOCUMENT_BEGIN(&doc, r->cfg->dead_letters_field, &entry);
   bson_append_value(&entry, "event", 5, &it->ev.raw);
   BSON_APPEND_UTF8(&entry, "reason", it->reason ? it->reason : "invalid event");
   bson_append_now_utc(&entry, "at", 2);
   BSON_APPEND_UTF8(&entry, "relay", r->cfg->name);
   bson_append_document_end(&doc, &entry);
   bson_append_document_end(&u, &doc);

   ok = mongoc_collection_update_one(r->colls[e->coll], &q, &u, NULL, &reply, error);
   *moved = ok && bson_iter_init_find(&iter, &reply, "modifiedCount") &&
            bson_iter_as_int64(&iter) > 0;
   bson_destroy(&reply);
   bson_destroy(&q);
   bson_destroy(&u);
   return ok;
}

/* Returns false if a write failed (the entity stays dirty). */
static bool
flush_poison(relay_t *r, relay_entity_t *e)
{
   relay_item_t *it = e->head;

   while (it) {
      relay_item_t *next = it->next;
      bson_error_t error;
      bool moved;
      if (it->state == RELAY_ITEM_POISON) {
         if (!dead_letter(r, e, it, &moved, &error)) {
            relay_log(RELAY_LOG_WARNING, "writer", "dead-lettering an event of %s failed: %s",
                      e->rendered, error.message);
            return false;
         }
         if (moved) {
            relay_log(RELAY_LOG_WARNING, "writer",
                      "dead-lettered an event of %s/%s (seq %" PRId64 "): %s",
                      r->cfg->collections[e->coll], e->rendered, it->ev.seq, it->reason);
            relay_metrics_add(r->metrics, RELAY_M_DEAD_LETTERED, 1);
         }
         relay_table_remove_item(&r->table, e, it);
      }
      it = next;
   }
   return true;
}

/* Marks the statements listed in the reply's writeErrors as failed. */
static void
failed_indexes(const bson_t *reply, bool *failed, size_t n)
{
   bson_iter_t it, errs, idx;
   if (!bson_iter_init_find(&it, reply, "writeErrors") || !bson_iter_recurse(&it, &errs)) {
      for (size_t i = 0; i < n; i++) {
         failed[i] = true; /* no detail: the whole batch failed */
      }
      return;
   }
   while (bson_iter_next(&errs)) {
      bson_iter_t doc;
      if (bson_iter_recurse(&errs, &doc) && bson_iter_find(&doc, "index")) {
         idx = doc;
         int64_t i = bson_iter_as_int64(&idx);
         if (i >= 0 && (size_t) i < n) {
            failed[i] = true;
         }
      }
   }
}

/* Executes one collection's clears; returns false if any failed. */
static bool
execute(relay_t *r, coll_batch_t *b)
{
   bson_t reply;
   bson_error_t error;
   bool *failed = bson_malloc0(b->n * sizeof *failed);
   bool ok = mongoc_bulk_operation_execute(b->bulk, &reply, &error) != 0;

   if (!ok) {
      relay_log(RELAY_LOG_WARNING, "writer", "clearing %zu entities failed: %s", b->n,
                error.message);
      failed_indexes(&reply, failed, b->n);
   }
   for (size_t i = 0; i < b->n; i++) {
      relay_entity_t *e = b->entities[i];
      if (failed[i]) {
         relay_table_mark_dirty(&r->table, e);
      } else {
         size_t n = relay_table_remove_state(&r->table, e, RELAY_ITEM_ACKED);
         relay_metrics_add(r->metrics, RELAY_M_CLEARED, n);
      }
   }
   bson_destroy(&reply);
   bson_free(failed);
   return ok;
}

/* Entities that hold nothing any more are forgotten, except while replaying history, when
 * the table is what keeps a replayed change from triggering another read. */
static void
forget_idle(relay_t *r, relay_entity_t **list, size_t n)
{
   if (r->verifying) {
      return;
   }
   for (size_t i = 0; i < n; i++) {
      relay_table_evict(&r->table, list[i]);
   }
}

void
relay_writer_flush(relay_t *r, int64_t now, bool force)
{
   size_t ncoll = r->cfg->n_collections, cap = (size_t) r->cfg->clear_batch_size, n = 0;
   coll_batch_t *batches;
   relay_entity_t **seen;
   bool ok = true;

   if (!r->table.dirty_head || now < r->write_retry_at_ms ||
       (!force && now - r->last_write_ms < r->cfg->clear_interval_ms)) {
      return;
   }
   r->last_write_ms = now;
   batches = bson_malloc0(ncoll * sizeof *batches);
   seen = bson_malloc(cap * sizeof *seen);
   while (n < cap && r->table.dirty_head) {
      relay_entity_t *e = relay_table_next_dirty(&r->table);
      if (relay_table_count_state(e, RELAY_ITEM_POISON) > 0 && !flush_poison(r, e)) {
         relay_table_mark_dirty(&r->table, e);
         ok = false;
         break;
      }
      if (relay_table_count_state(e, RELAY_ITEM_ACKED) > 0 &&
          !add_clear(r, &batches[e->coll], e, cap)) {
         relay_table_mark_dirty(&r->table, e);
         ok = false;
         break;
      }
      seen[n++] = e;
   }
   for (size_t c = 0; c < ncoll; c++) {
      if (batches[c].bulk) {
         ok = execute(r, &batches[c]) && ok;
         mongoc_bulk_operation_destroy(batches[c].bulk);
         bson_free(batches[c].entities);
      }
   }
   forget_idle(r, seen, n);
   relay_table_pos_settle(&r->table);
   relay_metrics_set(r->metrics, RELAY_G_BUFFERED, (double) r->table.buffered);
   r->write_retry_at_ms = ok ? 0 : now + relay_backoff_next(r->cfg, &r->write_backoff_ms);
   if (ok) {
      r->write_backoff_ms = 0;
   }
   bson_free(batches);
   bson_free(seen);
}

void
relay_writer_checkpoint(relay_t *r, int64_t now, bool force)
{
   bson_error_t error;
   bson_t *token;

   if (!force && now - r->last_checkpoint_ms < r->cfg->checkpoint_interval_ms) {
      return;
   }
   r->last_checkpoint_ms = now;
   token = relay_table_take_checkpoint(&r->table);
   if (!token) {
      return;
   }
   if (!relay_store_save_checkpoint(r->state, r->cfg->name, token, &error)) {
      relay_log(RELAY_LOG_WARNING, "writer", "saving the checkpoint failed: %s",
                error.message);
      r->table.checkpoint_changed = true; /* try again next time */
   }
   bson_destroy(token);
}
