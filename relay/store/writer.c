/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The writer (writer.h): clearing acknowledged events, moving poison events to the dead
 * letters, and saying when a checkpoint is due (relay.c hands it to the partition owner, whose
 * lease thread saves it in the partitions' leases). Its state is its own (struct relay_writer_t);
 * main thread only.
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

#include "store/writer.h"
#include "util/error.h"
#include "util/log.h"
#include "util/util.h"

struct relay_writer_t {
   relay_namespaces_t *ns; /* names for the log (may be NULL) */
   const relay_config_t *cfg;
   relay_metrics_t *metrics;
   relay_table_t *table;
   const relay_writer_ops_t *ops;
   void *ctx;
   int64_t last_write_ms, write_retry_at_ms, last_checkpoint_ms;
   /* The last clear batch was full and left acknowledged events behind: the next one goes
    * out as soon as the clearer is free, without waiting for clear_interval_ms. */
   bool clear_backlog;
   int write_backoff_ms;
   bool writes_failing;  /* the last write failed: further failures are logged at debug */
   bool writes_refused;  /* ... with 13 Unauthorized or an authentication failure */
   uint64_t archived_ok; /* statements archived and cleared: proof the archive takes entries */
};

relay_writer_t *
relay_writer_new(const relay_config_t *cfg, relay_namespaces_t *ns, relay_metrics_t *metrics,
                 relay_table_t *table, const relay_writer_ops_t *ops, void *ctx)
{
   relay_writer_t *w = bson_malloc0(sizeof *w);
   w->cfg = cfg;
   w->ns = ns;
   w->metrics = metrics;
   w->table = table;
   w->ops = ops;
   w->ctx = ctx;
   return w;
}

void
relay_writer_destroy(relay_writer_t *w)
{
   bson_free(w);
}

static void
write_failed(relay_writer_t *w, const char *what, const bson_error_t *error)
{
   bool refused = relay_error_is_refusal(error);
   if (refused && !w->writes_refused) {
      relay_log(RELAY_LOG_ERROR, "writer",
                "MongoDB refuses the relay's writes (%s: %s): its user needs readWrite on "
                "database %s. Publishing is paused until a write succeeds; events already "
                "published stay pending and will be published again (retrying with backoff "
                "up to %d ms)",
                what, error->message, w->cfg->state_database, w->cfg->reconnect_max_ms);
   } else if (!w->writes_failing) {
      relay_log(RELAY_LOG_WARNING, "writer", "%s failed (retrying with backoff): %s", what,
                error->message);
   } else {
      relay_log(RELAY_LOG_DEBUG, "writer", "%s failed again: %s", what, error->message);
   }
   w->writes_failing = true;
   w->writes_refused = w->writes_refused || refused;
}

static void
write_succeeded(relay_writer_t *w)
{
   if (w->writes_failing) {
      relay_log(RELAY_LOG_INFO, "writer", "MongoDB accepts the relay's writes again%s",
                w->writes_refused ? ": publishing resumes" : "");
   }
   w->writes_failing = false;
   w->writes_refused = false;
}

/* Moves one poison event to the dead letters, in one update so it is never in both places
 * or in neither: the filter requires the event to still be pending (exactly this value),
 * $pull removes it and $push records it with the reason. Dead letters are rare, so one
 * round-trip each is fine, and it tells us whether the event was still there. */
static bool
dead_letter(relay_writer_t *w, relay_entity_t *e, relay_item_t *it, bool *moved,
            bson_error_t *error)
{
   const char *ev = w->cfg->events_field;
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
   BSON_APPEND_DOCUMENT_BEGIN(&doc, w->cfg->dead_letters_field, &entry);
   bson_append_value(&entry, "event", 5, &it->ev.raw);
   BSON_APPEND_UTF8(&entry, "reason", it->reason ? it->reason : "invalid event");
   bson_append_now_utc(&entry, "at", 2);
   BSON_APPEND_UTF8(&entry, "relay", w->cfg->name);
   bson_append_document_end(&doc, &entry);
   bson_append_document_end(&u, &doc);

   ok = w->ops->update_one(w->ctx, e->coll, &q, &u, &reply, error);
   *moved =
      ok && bson_iter_init_find(&iter, &reply, "modifiedCount") && bson_iter_as_int64(&iter) > 0;
   bson_destroy(&reply);
   bson_destroy(&q);
   bson_destroy(&u);
   return ok;
}

/* Returns false if a write failed (the entity stays dirty). */
static bool
flush_poison(relay_writer_t *w, relay_entity_t *e)
{
   relay_item_t *it = e->head;

   while (it) {
      relay_item_t *next = it->next;
      bson_error_t error;
      bool moved;
      if (it->state == RELAY_ITEM_POISON) {
         if (!dead_letter(w, e, it, &moved, &error)) {
            char what[300];
            snprintf(what, sizeof what, "dead-lettering an event of %s", e->rendered);
            write_failed(w, what, &error);
            return false;
         }
         write_succeeded(w);
         if (moved) {
            relay_log(RELAY_LOG_WARNING, "writer",
                      "dead-lettered an event of %s/%s (seq %" PRId64 "): %s",
                      relay_namespaces_name(w->ns, e->coll), e->rendered, it->ev.seq, it->reason);
            relay_metrics_add(w->metrics, RELAY_M_DEAD_LETTERED, 1);
         }
         relay_table_remove_item(w->table, e, it);
      }
      it = next;
   }
   return true;
}

/* Adds @e's acknowledged events to @job and marks them as being cleared. */
static void
add_clear(relay_clear_job_t *job, relay_entity_t *e)
{
   relay_clear_stmt_t *s = relay_clear_job_begin(job, e->coll, &e->id, e->part, e);

   /* Acknowledged items sit at the front: stop once all of them are found. */
   uint32_t left = e->n_state[RELAY_ITEM_ACKED];
   for (relay_item_t *it = e->head; it && left > 0; it = it->next) {
      if (it->state == RELAY_ITEM_ACKED) {
         left--;
         relay_clear_job_add_event(job, s, &it->ev);
         relay_table_set_state(e, it, RELAY_ITEM_CLEARING);
      }
   }
}

/* How often the archive's validator may refuse one event, while it takes others, before the
 * event is dead-lettered: a refusal that persists is the event's, not the archive's. */
#define ARCHIVE_REFUSALS_MAX 3

/* Whether @it, refused by the archive with @why, becomes poison now. Refusals the archive
 * always repeats (another entity's event under its id, too large) do at once; a validator's
 * refusal only once it persisted ARCHIVE_REFUSALS_MAX times while other statements were
 * archived, so a validator that refuses everything keeps every event pending until it is
 * fixed (outbox-admin ensure-schema). */
static bool
refusal_persists(relay_writer_t *w, relay_item_t *it, const char *why)
{
   if (why != relay_clear_refused_by_validator) {
      return true;
   }
   if (it->archive_refusals == 0) {
      it->archive_ok_mark = w->archived_ok;
   }
   if (it->archive_refusals < UINT8_MAX) {
      it->archive_refusals++;
   }
   return it->archive_refusals >= ARCHIVE_REFUSALS_MAX && w->archived_ok > it->archive_ok_mark;
}

/* A failed statement's events go back to acknowledged (their clear is retried), except those
 * the archive refuses for good (s->refused: store/archive.c, refusal_persists()), which
 * become poison with the reason, to be dead-lettered by the next flush instead of holding the
 * entity for good. The k-th clearing item is the statement's k-th event (add_clear()). */
static void
restate_failed(relay_writer_t *w, const relay_clear_stmt_t *s, relay_entity_t *e)
{
   uint32_t k = 0;
   for (relay_item_t *it = e->head; it; it = it->next) {
      if (it->state != RELAY_ITEM_CLEARING) {
         continue;
      }
      const char *why = s->refused && k < s->n_ids ? s->refused[k] : NULL;
      if (why && refusal_persists(w, it, why)) {
         relay_log(RELAY_LOG_WARNING, "writer", "event %s (seq %" PRId64 ") of %s/%s: %s",
                   it->ev.id, it->ev.seq, relay_namespaces_name(w->ns, e->coll), e->rendered, why);
         it->reason = why;
         relay_table_set_state(e, it, RELAY_ITEM_POISON);
      } else {
         relay_table_set_state(e, it, RELAY_ITEM_ACKED);
      }
      k++;
   }
   relay_table_mark_dirty(w->table, e);
}

/* Applies a finished clear batch: cleared events leave the table, failed ones wait for the
 * next batch. Returns false if any failed. */
static bool
apply_job(relay_writer_t *w, relay_clear_job_t *job)
{
   bool ok = true;
   for (size_t i = 0; job->archive && i < job->n; i++) {
      w->archived_ok += !job->stmts[i].failed;
   }
   for (size_t i = 0; i < job->n; i++) {
      relay_entity_t *e = job->stmts[i].entity;
      if (job->stmts[i].failed) {
         restate_failed(w, &job->stmts[i], e);
         ok = false;
      } else {
         size_t n = relay_table_remove_state(w->table, e, RELAY_ITEM_CLEARING);
         relay_metrics_add(w->metrics, RELAY_M_CLEARED, n);
      }
   }
   for (size_t i = 0; i < job->n; i++) {
      relay_table_forget_if_idle(w->table, job->stmts[i].entity);
   }
   return ok;
}

/* Collects the results of the running batch, if it is done. */
static void
collect(relay_writer_t *w, int64_t now)
{
   relay_clear_job_t *job = w->ops->take(w->ctx);
   if (!job) {
      return;
   }
   if (apply_job(w, job)) {
      w->write_backoff_ms = 0;
      write_succeeded(w);
   } else {
      char what[64];
      snprintf(what, sizeof what, "clearing %zu entities", job->n_failed);
      if (job->error.code == 0) {
         bson_set_error(&job->error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CLEAR,
                        "a clear could not be built");
      }
      write_failed(w, what, &job->error);
      w->write_retry_at_ms =
         now + relay_backoff_next(w->cfg->reconnect_min_ms, w->cfg->reconnect_max_ms,
                                  &w->write_backoff_ms);
   }
   relay_clear_job_free(job);
   relay_table_pos_settle(w->table);
}

bool
relay_writer_idle(const relay_writer_t *w)
{
   return !w->table->dirty_head && !w->ops->busy(w->ctx);
}

void
relay_writer_flush(relay_writer_t *w, int64_t now, bool force)
{
   size_t cap = (size_t)w->cfg->clear_batch_size;
   uint32_t limit = relay_table_gather_limit(w->cfg->max_buffered_events, w->cfg->inflight_window);
   relay_clear_job_t *job = NULL;
   relay_entity_t *first_waiting = NULL;

   collect(w, now);
   /* The interval gathers acknowledgements into fewer, larger writes while events trickle
    * in. Under a backlog the batches fill up on their own, and waiting between them would
    * cap clearing at clear_batch_size per interval (25k events/s by default) whatever
    * MongoDB and the broker could do. */
   if (!w->table->dirty_head || w->ops->busy(w->ctx) || now < w->write_retry_at_ms ||
       (!force && !w->clear_backlog && now - w->last_write_ms < w->cfg->clear_interval_ms)) {
      return;
   }
   w->last_write_ms = now;
   while (w->table->dirty_head && (!job || job->n_events < cap)) {
      relay_entity_t *e = relay_table_next_dirty(w->table);
      if (!force && relay_table_may_gather(e, limit)) {
         /* Its clear waits for its next acknowledgement (fewer, fuller rewrites of its
          * document): back to the end of the list, and stop when the list comes round. */
         relay_table_mark_dirty(w->table, e);
         if (first_waiting == e) {
            break;
         }
         first_waiting = first_waiting ? first_waiting : e;
         continue;
      }
      if (relay_table_count_state(e, RELAY_ITEM_POISON) > 0 && !flush_poison(w, e)) {
         relay_table_mark_dirty(w->table, e);
         w->write_retry_at_ms =
            now + relay_backoff_next(w->cfg->reconnect_min_ms, w->cfg->reconnect_max_ms,
                                     &w->write_backoff_ms);
         break;
      }
      if (relay_table_count_state(e, RELAY_ITEM_ACKED) > 0) {
         if (!job) {
            job = relay_clear_job_new(w->cfg->archive_collection != NULL);
         }
         add_clear(job, e);
      } else {
         relay_table_forget_if_idle(w->table, e);
      }
   }
   w->clear_backlog = job && job->n_events >= cap && w->table->dirty_head;
   if (job) {
      w->ops->submit(w->ctx, job);
   }
   relay_table_pos_settle(w->table);
}

bson_t *
relay_writer_checkpoint_due(relay_writer_t *w, int64_t now, bool force)
{
   if (!force && (now - w->last_checkpoint_ms < w->cfg->checkpoint_interval_ms ||
                  (w->writes_failing && now < w->write_retry_at_ms))) {
      return NULL;
   }
   w->last_checkpoint_ms = now;
   return relay_table_take_checkpoint(w->table);
}

bool
relay_writer_refused(const relay_writer_t *w)
{
   return w->writes_refused;
}
