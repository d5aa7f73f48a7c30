/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Sweeps: reading the pending events of whole partitions from their documents, through the
 * partial index outbox_pending (pending events stay in their documents until cleared, so
 * the index is the exact to-do list). Ingest's sweep half (ingest.h), on the state it shares
 * with changes.c and documents.c (relay_ingest_t); main thread only.
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

#include "stream/ingest-private.h"
#include "util/log.h"
#include "util/util.h"

void
relay_sweep_request(relay_ingest_t *in, int part)
{
   relay_partset_add(&in->sweep_wanted, part);
}

void
relay_sweep_request_full(relay_ingest_t *in)
{
   in->sweep_full_wanted = true;
}

void
relay_sweep_abort(relay_ingest_t *in)
{
   if (in->sweep_cursor) {
      in->ops->sweep_close(in->ctx, in->sweep_cursor);
      in->sweep_cursor = NULL;
   }
   if (in->sweep_pos) {
      relay_table_pos_release(in->table, in->sweep_pos);
      in->sweep_pos = NULL;
   }
   in->sweeping = false;
   in->sweep_full_wanted = false;
   relay_partset_clear(&in->sweep_wanted);
   relay_table_release_holds(in->table, false);
}

static void
log_start(relay_ingest_t *in, bool full)
{
   bson_string_t *list;
   if (full) {
      relay_log(RELAY_LOG_INFO, "sweep", "sweeping for pending events (no usable resume token)");
      return;
   }
   list = bson_string_new(NULL);
   relay_partset_format(&in->sweep_set, in->owner->partitions(in->owner_ctx), list);
   relay_log(RELAY_LOG_INFO, "sweep", "sweeping partitions %s for pending events", list->str);
   bson_string_free(list, true);
}

#define SWEEP_OPENS_PER_STEP 4

/* Creates the partial index on the namespace being swept, the first time its hinted query
 * failed in this sweep. False when it was tried already (or could not be made). */
static bool
create_index(relay_ingest_t *in)
{
   bson_error_t error;
   relay_ns_t ns = {"?", "?", "?", 0, false};

   if (in->sweep_indexed == (int)in->sweep_coll) {
      return false;
   }
   in->sweep_indexed = (int)in->sweep_coll;
   relay_namespaces_get(in->ns, (int)in->sweep_coll, &ns);
   if (!in->ops->ensure_index(in->ctx, (int)in->sweep_coll, &error)) {
      relay_log(RELAY_LOG_WARNING, "sweep", "creating index outbox_pending on %s.%s: %s", ns.db,
                ns.coll, error.message);
      return false;
   }
   return true;
}

/* Moves the sweep past namespaces that are gone (dropped: nothing to read). */
static void
skip_gone(relay_ingest_t *in)
{
   relay_ns_t ns;
   while (relay_namespaces_get(in->ns, (int)in->sweep_coll, &ns) && ns.gone) {
      in->sweep_coll++;
   }
}

static void
begin(relay_ingest_t *in, int64_t now)
{
   bson_error_t error;
   bool full = in->sweep_full_wanted;
   relay_partset_t set = *in->owner->active(in->owner_ctx);

   if (!full) {
      for (int p = 0; p < in->owner->partitions(in->owner_ctx); p++) {
         if (!relay_partset_has(&in->sweep_wanted, p)) {
            relay_partset_remove(&set, p);
         }
      }
   }
   if (relay_partset_count(&set, in->owner->partitions(in->owner_ctx)) == 0) {
      relay_partset_clear(&in->sweep_wanted);
      in->sweep_full_wanted = false;
      return;
   }
   /* The namespaces are listed after the sweep's start: one created later has all its
    * writes after the start, where the stream takes them. */
   if (!in->ops->operation_time(in->ctx, &in->sweep_start, &error) ||
       (in->ops->list_namespaces && !in->ops->list_namespaces(in->ctx, &error))) {
      relay_log(RELAY_LOG_WARNING, "sweep", "cannot start a sweep: %s", error.message);
      in->sweep_retry_at_ms =
         now + relay_backoff_next(in->cfg->reconnect_min_ms, in->cfg->reconnect_max_ms,
                                  &in->sweep_backoff_ms);
      return;
   }
   relay_partset_clear(&in->sweep_wanted);
   in->sweep_full_wanted = false;
   in->sweep_set = set;
   in->sweep_full = full;
   /* What the table holds now may be published and cleared before the sweep gets to its
    * document, whose copy then shows it still pending: keep these entities known, so that
    * the sweep reads them afresh (relay_docs_sync()). */
   relay_table_hold_parts(in->table, &set);
   log_start(in, full);
   relay_metrics_add(in->metrics, RELAY_M_SWEEPS, 1);
   if (full) {
      /* The old positions belong to a stream that cannot be resumed: forget them. Events
       * still buffered from it come before the new one: the marker adopts them. */
      relay_table_pos_reset(in->table);
      in->sweep_pos = relay_table_pos_marker(in->table);
      relay_table_pos_adopt(in->table, in->sweep_pos);
      relay_changes_set_verifying(in, false);
      /* The new stream starts after every read made so far: none of its changes replays one. */
      relay_table_release_holds(in->table, true);
      in->owner->sweep_began(in->owner_ctx, &set, in->sweep_pos);
      in->started = true;
      in->stream_gen = in->ops->start(in->ctx, NULL, &in->sweep_start);
   } else {
      in->sweep_pos = relay_table_pos_marker(in->table);
      in->owner->sweep_began(in->owner_ctx, &set, in->sweep_pos);
   }
   /* Its events are at least as old as the sweep: the pending-age gauge counts from its start
    * (it read 0 while swept events waited, so alerts missed them). */
   in->sweep_pos->wall_ms = relay_wall_ms();
   in->sweeping = true;
   in->sweep_coll = 0;
   in->sweep_hint = true;
   in->sweep_waited_db = NULL;
   in->sweep_indexed = -1;
   skip_gone(in);
}

static void
finish(relay_ingest_t *in)
{
   bson_error_t error;
   relay_ts_t end = {UINT32_MAX, UINT32_MAX}; /* unknown: fresh until the stream catches up */

   if (!in->ops->operation_time(in->ctx, &end, &error)) {
      end = (relay_ts_t){UINT32_MAX, UINT32_MAX};
   }
   relay_table_pos_release(in->table, in->sweep_pos);
   in->sweep_pos = NULL;
   in->sweeping = false;
   in->sweep_backoff_ms = 0;
   relay_table_release_holds(in->table, false);
   in->owner->sweep_ended(in->owner_ctx, &in->sweep_set, end);
   relay_log(RELAY_LOG_INFO, "sweep",
             "sweep done; %zu events pending in %zu entities; watching from before it",
             in->table->buffered, in->table->count);
}

/* The sweep's cursor on the current collection: with the server's partition filter when it
 * hashes like we do; every pending document otherwise (then relay_docs_sync() keeps
 * only ours). */
static void *
open_cursor(relay_ingest_t *in)
{
   const relay_partset_t *parts = in->owner->server_filters(in->owner_ctx) ? &in->sweep_set : NULL;
   return in->ops->sweep_open(in->ctx, (int)in->sweep_coll, in->sweep_hint, &in->sweep_start, parts,
                              in->owner->partitions(in->owner_ctx));
}

/* Before a cursor: waits (bounded) until the current collection's majority snapshot has
 * reached the sweep's start. The sweep reads that snapshot, never the member's own writes
 * a rollback may undo (FINDINGS.md F8), and from its start on, the stream (which starts
 * there, or runs already) delivers every change: nothing falls between. False when the
 * majority did not get there in time (a cut-off primary): tried again after a backoff, by
 * then on the new primary; nothing was read. */
static bool
wait_for_start(relay_ingest_t *in, int64_t now)
{
   bson_error_t error;
   relay_ns_t ns = {NULL, NULL, NULL, 0, false};

   /* Once per database: its commit point is shared by its collections (and the cursor's own
    * afterClusterTime still holds each read to the start); per namespace it was a round trip
    * each, a thousand with a thousand tenants. */
   relay_namespaces_get(in->ns, (int)in->sweep_coll, &ns);
   if (ns.db && in->sweep_waited_db && !strcmp(ns.db, in->sweep_waited_db)) {
      return true;
   }
   if (in->ops->wait_majority(in->ctx, (int)in->sweep_coll, &in->sweep_start, &error)) {
      in->sweep_waited_db = ns.db;
      return true;
   }
   relay_log(RELAY_LOG_WARNING, "sweep",
             "the majority has not reached the sweep's start yet (trying again): %s",
             error.message);
   in->sweep_retry_at_ms =
      now + relay_backoff_next(in->cfg->reconnect_min_ms, in->cfg->reconnect_max_ms,
                               &in->sweep_backoff_ms);
   return false;
}

void
relay_sweep_step(relay_ingest_t *in, int64_t now)
{
   const bson_t *doc;
   bson_error_t error;

   if (now < in->sweep_retry_at_ms) {
      return;
   }
   if (!in->sweeping) {
      if (in->sweep_full_wanted ||
          relay_partset_count(&in->sweep_wanted, in->owner->partitions(in->owner_ctx)) > 0) {
         begin(in, now);
      }
      return;
   }
   /* A step reads up to 200 documents and opens up to 4 cursors: with many small namespaces
    * each open is a round trip, and the loop must get back to publishing and clearing in
    * between (a step that opened a hundred cursors left the in-flight window empty). */
   for (int n = 0, opened = 0; n < 200 && relay_changes_has_room(in); n++) {
      if (!in->sweep_cursor && opened++ == SWEEP_OPENS_PER_STEP) {
         return;
      }
      if (!in->sweep_cursor) {
         if (in->sweep_coll >= (size_t)relay_namespaces_count(in->ns)) {
            finish(in); /* nothing (more) to sweep: no namespace matches yet */
            return;
         }
         if (!wait_for_start(in, now)) {
            return;
         }
         in->sweep_cursor = open_cursor(in);
      }
      if (in->ops->sweep_next(in->ctx, in->sweep_cursor, &doc)) {
         relay_docs_sync(in, (int)in->sweep_coll, &in->sweep_set, doc, in->sweep_pos);
         continue;
      }
      if (in->ops->sweep_error(in->ctx, in->sweep_cursor, &error)) {
         relay_log(in->sweep_hint ? RELAY_LOG_DEBUG : RELAY_LOG_WARNING, "sweep",
                   "sweep query failed%s: %s", in->sweep_hint ? " with the index hint" : "",
                   error.message);
         if (!in->sweep_hint) {
            in->sweep_retry_at_ms =
               now + relay_backoff_next(in->cfg->reconnect_min_ms, in->cfg->reconnect_max_ms,
                                        &in->sweep_backoff_ms);
         }
         in->ops->sweep_close(in->ctx, in->sweep_cursor);
         in->sweep_cursor = NULL;
         /* The hinted query is the index check: a namespace met by pattern gets its index
          * created here, once, and is read again with the hint; one whose index cannot be
          * made or used is scanned (correct, slower). */
         if (in->sweep_hint && !create_index(in)) {
            in->sweep_hint = false;
         }
         return;
      }
      in->ops->sweep_close(in->ctx, in->sweep_cursor);
      in->sweep_cursor = NULL;
      in->sweep_coll++;
      in->sweep_hint = true;
      skip_gone(in);
      /* Namespaces met while sweeping are swept too (their indexes come after). */
      if (in->sweep_coll >= (size_t)relay_namespaces_count(in->ns)) {
         finish(in);
         return;
      }
   }
}
