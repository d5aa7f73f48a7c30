/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Writes back to MongoDB: clearing acknowledged events, moving poison events to the dead
 * letters, and handing the checkpoint to the lease thread (group/lease.h), which saves it in
 * the partitions' leases.
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
 * Clears of many entities go out as one unordered bulk write per collection, run by the
 * clearer thread (clearer.h) while the main thread goes on publishing.
 *
 * Failed writes are retried with backoff and logged once per run of failures (repeats at
 * debug level, the recovery at info). When MongoDB refuses them (13 Unauthorized: the user
 * may read but not write; or the password stopped working) the relay stops publishing: what
 * it published already stays pending in MongoDB and is published again once clears work or
 * after a restart (at least once), and nothing new goes out that could not be cleared.
 * outbox_relay_mongodb_writes_refused shows 1 and /healthz fails meanwhile (relay.c sets it
 * from the writer's and the lease thread's refusals: one owner).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "util/error.h"
#include "util/log.h"
#include "relay-private.h"

static void
write_failed(relay_t *r, const char *what, const bson_error_t *error)
{
   bool refused = relay_error_is_refusal(error);
   if (refused && !r->writes_refused) {
      relay_log(RELAY_LOG_ERROR, "writer",
                "MongoDB refuses the relay's writes (%s: %s): its user needs readWrite on "
                "database %s. Publishing is paused until a write succeeds; events already "
                "published stay pending and will be published again (retrying with backoff "
                "up to %d ms)",
                what, error->message, r->cfg->database, r->cfg->reconnect_max_ms);
   } else if (!r->writes_failing) {
      relay_log(RELAY_LOG_WARNING, "writer", "%s failed (retrying with backoff): %s", what,
                error->message);
   } else {
      relay_log(RELAY_LOG_DEBUG, "writer", "%s failed again: %s", what, error->message);
   }
   r->writes_failing = true;
   r->writes_refused = r->writes_refused || refused;
}

static void
write_succeeded(relay_t *r)
{
   if (r->writes_failing) {
      relay_log(RELAY_LOG_INFO, "writer", "MongoDB accepts the relay's writes again%s",
                r->writes_refused ? ": publishing resumes" : "");
   }
   r->writes_failing = false;
   r->writes_refused = false;
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
   *moved =
       ok && bson_iter_init_find(&iter, &reply, "modifiedCount") && bson_iter_as_int64(&iter) > 0;
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
            char what[300];
            snprintf(what, sizeof what, "dead-lettering an event of %s", e->rendered);
            write_failed(r, what, &error);
            return false;
         }
         write_succeeded(r);
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

/* Adds @e's acknowledged events to @job and marks them as being cleared. */
static void
add_clear(relay_clear_job_t *job, relay_entity_t *e)
{
   relay_clear_stmt_t *s = relay_clear_job_begin(job, e->coll, &e->id, e);

   /* Acknowledged items sit at the front: stop once all of them are found. */
   uint32_t left = e->n_state[RELAY_ITEM_ACKED];
   for (relay_item_t *it = e->head; it && left > 0; it = it->next) {
      if (it->state == RELAY_ITEM_ACKED) {
         left--;
         relay_clear_job_add_id(job, s, it->ev.id);
         relay_table_set_state(e, it, RELAY_ITEM_CLEARING);
      }
   }
}

/* Applies a finished clear batch: cleared events leave the table, failed ones wait for the
 * next batch. Returns false if any failed. */
static bool
apply_job(relay_t *r, relay_clear_job_t *job)
{
   bool ok = true;
   for (size_t i = 0; i < job->n; i++) {
      relay_entity_t *e = job->stmts[i].entity;
      if (job->stmts[i].failed) {
         relay_table_restate(e, RELAY_ITEM_CLEARING, RELAY_ITEM_ACKED);
         relay_table_mark_dirty(&r->table, e);
         ok = false;
      } else {
         size_t n = relay_table_remove_state(&r->table, e, RELAY_ITEM_CLEARING);
         relay_metrics_add(r->metrics, RELAY_M_CLEARED, n);
      }
   }
   for (size_t i = 0; i < job->n; i++) {
      relay_table_forget_if_idle(&r->table, job->stmts[i].entity);
   }
   return ok;
}

/* Collects the results of the running batch, if it is done. */
static void
collect(relay_t *r, int64_t now)
{
   relay_clear_job_t *job = relay_clearer_take(r->clearer);
   if (!job) {
      return;
   }
   if (apply_job(r, job)) {
      r->write_backoff_ms = 0;
      write_succeeded(r);
   } else {
      char what[64];
      snprintf(what, sizeof what, "clearing %zu entities", job->n_failed);
      if (job->error.code == 0) {
         bson_set_error(&job->error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CLEAR, "a clear could not be built");
      }
      write_failed(r, what, &job->error);
      r->write_retry_at_ms = now + relay_backoff_next(r->cfg, &r->write_backoff_ms);
   }
   relay_clear_job_free(job);
   relay_table_pos_settle(&r->table);
}

bool
relay_writer_idle(relay_t *r)
{
   return !r->table.dirty_head && !relay_clearer_busy(r->clearer);
}

void
relay_writer_flush(relay_t *r, int64_t now, bool force)
{
   size_t cap = (size_t)r->cfg->clear_batch_size;
   uint32_t limit =
      relay_table_gather_limit(r->cfg->max_buffered_events, r->cfg->inflight_window);
   relay_clear_job_t *job = NULL;
   relay_entity_t *first_waiting = NULL;

   collect(r, now);
   /* The interval gathers acknowledgements into fewer, larger writes while events trickle
    * in. Under a backlog the batches fill up on their own, and waiting between them would
    * cap clearing at clear_batch_size per interval (25k events/s by default) whatever
    * MongoDB and the broker could do. */
   if (!r->table.dirty_head || relay_clearer_busy(r->clearer) || now < r->write_retry_at_ms ||
       (!force && !r->clear_backlog && now - r->last_write_ms < r->cfg->clear_interval_ms)) {
      return;
   }
   r->last_write_ms = now;
   while (r->table.dirty_head && (!job || job->n_events < cap)) {
      relay_entity_t *e = relay_table_next_dirty(&r->table);
      if (!force && relay_table_may_gather(e, limit)) {
         /* Its clear waits for its next acknowledgement (fewer, fuller rewrites of its
          * document): back to the end of the list, and stop when the list comes round. */
         relay_table_mark_dirty(&r->table, e);
         if (first_waiting == e) {
            break;
         }
         first_waiting = first_waiting ? first_waiting : e;
         continue;
      }
      if (relay_table_count_state(e, RELAY_ITEM_POISON) > 0 && !flush_poison(r, e)) {
         relay_table_mark_dirty(&r->table, e);
         r->write_retry_at_ms = now + relay_backoff_next(r->cfg, &r->write_backoff_ms);
         break;
      }
      if (relay_table_count_state(e, RELAY_ITEM_ACKED) > 0) {
         if (!job) {
            job = relay_clear_job_new();
         }
         add_clear(job, e);
      } else {
         relay_table_forget_if_idle(&r->table, e);
      }
   }
   r->clear_backlog = job && job->n_events >= cap && r->table.dirty_head;
   if (job) {
      relay_clearer_submit(r->clearer, job);
   }
   relay_table_pos_settle(&r->table);
}

void
relay_writer_checkpoint(relay_t *r, int64_t now, bool force)
{
   bson_t *token;

   if (!force && (now - r->last_checkpoint_ms < r->cfg->checkpoint_interval_ms ||
                  (r->writes_failing && now < r->write_retry_at_ms))) {
      return;
   }
   r->last_checkpoint_ms = now;
   token = relay_table_take_checkpoint(&r->table);
   if (!token) {
      return;
   }
   /* The lease thread stores it in the leases it is valid for (fenced by their epochs). */
   relay_group_checkpoint(r, token);
   bson_destroy(token);
}
