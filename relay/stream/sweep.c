/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Sweeps: reading the pending events of whole partitions from their documents, through the
 * partial index outbox_pending (pending events stay in their documents until cleared, so
 * the index is the exact to-do list). Main thread only.
 *
 * A full sweep covers every owned partition when there is no usable resume token (none
 * stored, or the stream's history is gone): the old positions are forgotten and the stream
 * starts again at the server's time taken before the sweep. A partial sweep covers
 * partitions acquired while the stream runs: it pushes a marker at the end of the position
 * FIFO that holds the checkpoint until the swept events are cleared, and the stream keeps
 * going. Either way the swept partitions are "fresh" (group.h) until the stream has passed
 * the time the sweep ended: an entity of theirs not in the table is read from its document,
 * never taken from a change that may be older than what was swept.
 */
#include <string.h>

#include "relay-private.h"
#include "util/log.h"

void
relay_sweep_request(relay_t *r, int part)
{
   relay_partset_add(&r->sweep_wanted, part);
}

void
relay_sweep_request_full(relay_t *r)
{
   r->sweep_full_wanted = true;
}

void
relay_sweep_abort(relay_t *r)
{
   if (r->sweep_cursor) {
      mongoc_cursor_destroy(r->sweep_cursor);
      r->sweep_cursor = NULL;
   }
   if (r->sweep_pos) {
      relay_table_pos_release(&r->table, r->sweep_pos);
      r->sweep_pos = NULL;
   }
   r->sweeping = false;
   r->sweep_full_wanted = false;
   relay_partset_clear(&r->sweep_wanted);
   relay_table_release_holds(&r->table, false);
}

static void
log_start(relay_t *r, bool full)
{
   bson_string_t *list;
   if (full) {
      relay_log(RELAY_LOG_INFO, "sweep", "sweeping for pending events (no usable resume token)");
      return;
   }
   list = bson_string_new(NULL);
   relay_partset_format(&r->sweep_set, r->group.n, list);
   relay_log(RELAY_LOG_INFO, "sweep", "sweeping partitions %s for pending events", list->str);
   bson_string_free(list, true);
}

static void
begin(relay_t *r, int64_t now)
{
   bson_error_t error;
   bool full = r->sweep_full_wanted;
   relay_partset_t set = r->group.active;

   if (!full) {
      for (int p = 0; p < r->group.n; p++) {
         if (!relay_partset_has(&r->sweep_wanted, p)) {
            relay_partset_remove(&set, p);
         }
      }
   }
   if (relay_partset_count(&set, r->group.n) == 0) {
      relay_partset_clear(&r->sweep_wanted);
      r->sweep_full_wanted = false;
      return;
   }
   if (!relay_store_operation_time(r->client, &r->sweep_start, &error)) {
      relay_log(RELAY_LOG_WARNING, "sweep", "cannot start a sweep: %s", error.message);
      r->sweep_retry_at_ms = now + relay_backoff_next(r->cfg, &r->sweep_backoff_ms);
      return;
   }
   relay_partset_clear(&r->sweep_wanted);
   r->sweep_full_wanted = false;
   r->sweep_set = set;
   r->sweep_full = full;
   /* What the table holds now may be published and cleared before the sweep gets to its
    * document, whose copy then shows it still pending: keep these entities known, so that
    * the sweep reads them afresh (relay_changes_sync_doc()). */
   relay_table_hold_parts(&r->table, &set);
   log_start(r, full);
   relay_metrics_add(r->metrics, RELAY_M_SWEEPS, 1);
   if (full) {
      /* The old positions belong to a stream that cannot be resumed: forget them. Events
       * still buffered from it come before the new one: the marker adopts them. */
      relay_table_pos_reset(&r->table);
      r->sweep_pos = relay_table_pos_marker(&r->table);
      relay_table_pos_adopt(&r->table, r->sweep_pos);
      relay_changes_set_verifying(r, false);
      /* The new stream starts after every read made so far: none of its changes replays one. */
      relay_table_release_holds(&r->table, true);
      relay_group_sweep_began(&r->group, &set, r->sweep_pos);
      r->started = true;
      r->stream_gen = relay_reader_start(r->reader, NULL, &r->sweep_start);
   } else {
      r->sweep_pos = relay_table_pos_marker(&r->table);
      relay_group_sweep_began(&r->group, &set, r->sweep_pos);
   }
   /* Its events are at least as old as the sweep: the pending-age gauge counts from its start
    * (it read 0 while swept events waited, so alerts missed them). */
   r->sweep_pos->wall_ms = relay_wall_ms();
   r->sweeping = true;
   r->sweep_coll = 0;
   r->sweep_hint = true;
}

static void
finish(relay_t *r)
{
   bson_error_t error;
   relay_ts_t end = {UINT32_MAX, UINT32_MAX}; /* unknown: fresh until the stream catches up */

   if (!relay_store_operation_time(r->client, &end, &error)) {
      end = (relay_ts_t){UINT32_MAX, UINT32_MAX};
   }
   relay_table_pos_release(&r->table, r->sweep_pos);
   r->sweep_pos = NULL;
   r->sweeping = false;
   r->sweep_backoff_ms = 0;
   relay_table_release_holds(&r->table, false);
   relay_group_sweep_ended(&r->group, &r->sweep_set, end);
   relay_log(RELAY_LOG_INFO, "sweep",
             "sweep done; %zu events pending in %zu entities; watching from before it",
             r->table.buffered, r->table.count);
}

/* The sweep's cursor on the current collection: with the server's partition filter when it
 * hashes like we do; every pending document otherwise (then relay_changes_sync_doc() keeps
 * only ours). */
static mongoc_cursor_t *
open_cursor(relay_t *r)
{
   const relay_partset_t *parts = r->group.probe > 0 ? &r->sweep_set : NULL;
   return relay_store_sweep_cursor_in(r->colls[r->sweep_coll], r->cfg, r->sweep_hint, parts,
                                      r->group.n);
}

void
relay_sweep_step(relay_t *r, int64_t now)
{
   const bson_t *doc;
   bson_error_t error;

   if (now < r->sweep_retry_at_ms) {
      return;
   }
   if (!r->sweeping) {
      if (r->sweep_full_wanted || relay_partset_count(&r->sweep_wanted, r->group.n) > 0) {
         begin(r, now);
      }
      return;
   }
   for (int n = 0; n < 200 && relay_changes_has_room(r); n++) {
      if (!r->sweep_cursor) {
         r->sweep_cursor = open_cursor(r);
      }
      if (mongoc_cursor_next(r->sweep_cursor, &doc)) {
         relay_store_sweep_pace(r->sweep_cursor, doc);
         relay_changes_sync_doc(r, (int)r->sweep_coll, &r->sweep_set, doc, r->sweep_pos);
         continue;
      }
      if (mongoc_cursor_error(r->sweep_cursor, &error)) {
         relay_log(r->sweep_hint ? RELAY_LOG_DEBUG : RELAY_LOG_WARNING, "sweep",
                   "sweep query failed%s: %s", r->sweep_hint ? " with the index hint" : "",
                   error.message);
         if (!r->sweep_hint) {
            r->sweep_retry_at_ms = now + relay_backoff_next(r->cfg, &r->sweep_backoff_ms);
         }
         r->sweep_hint = false; /* index missing or not usable: scan (correct, slower) */
         mongoc_cursor_destroy(r->sweep_cursor);
         r->sweep_cursor = NULL;
         return;
      }
      mongoc_cursor_destroy(r->sweep_cursor);
      r->sweep_cursor = NULL;
      if (++r->sweep_coll == r->cfg->n_collections) {
         finish(r);
         return;
      }
   }
}
