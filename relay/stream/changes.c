/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest's stream half (ingest.h): where the stream starts and stops (relay_ingest_open(),
 * relay_ingest_close(), applied by relay.c when the partition owner asks for it), and applying
 * the queued changes of owned partitions in order (relay_ingest_step(): the held change,
 * verifying, the stream's position in the table). What a change carries is read in
 * change-events.c, documents are taken in documents.c, the sweep is in sweep.c; the state they
 * share is relay_ingest_t (ingest-private.h), and the fields of "The stream" there are written
 * only here. Main thread only.
 *
 * Replays: after a restart from the checkpoint, or after a sweep, the stream first replays
 * changes whose events may already have been published and cleared (by this relay before it
 * was killed, or by the sweep). While replaying ("verifying", until the stream reaches the
 * server time taken just before it was opened), an entity seen for the first time is read
 * from its document instead: what is still in `events` is what is pending, everything else
 * up to its eventSeq is done. So a restart re-publishes only what was never cleared.
 */
#include <string.h>

#include "stream/ingest-private.h"
#include "util/log.h"
#include "util/util.h"

/* A watched collection dropped or renamed away, or a watched database dropped: the watched
 * set forgets it (sweeps, scans and index checks skip it; its index comes back if it is
 * created again). What the table holds of it drains as usual: its clears match nothing. A
 * database stream ends with an invalidate after a dropDatabase (the reader reports LOST and
 * the relay sweeps and starts again); a cluster stream goes on. */
static void
forget(relay_ingest_t *in, const char *op, const char *db, const char *coll)
{
   bool whole_db = !strcmp(op, "dropDatabase");
   if (!db || (!whole_db && !coll) ||
       (whole_db && !relay_nsset_match_db(relay_namespaces_patterns(in->ns), db))) {
      return;
   }
   int n = relay_namespaces_drop(in->ns, db, whole_db ? NULL : coll);
   if (n > 0 || whole_db) { /* a cluster stream shows each collection's drop first */
      relay_log(RELAY_LOG_INFO, "stream", "%s %s%s%s: %d watched namespace(s) forgotten", op, db,
                whole_db ? "" : ".", whole_db ? "" : coll, n);
   }
}

void
relay_changes_set_verifying(relay_ingest_t *in, bool verifying)
{
   in->verifying = verifying;
   relay_table_keep_idle(in->table, verifying);
}

static void
end_verify(relay_ingest_t *in)
{
   if (in->verifying) {
      relay_changes_set_verifying(in, false);
      relay_table_evict_idle(in->table);
   }
}

/* The stream has delivered every change up to @ts (NULL: the present): verifying ends past
 * the time it was opened, each partition's fresh window past its sweep's end. */
static void
stream_passed(relay_ingest_t *in, const relay_ts_t *ts)
{
   if (!ts || relay_ts_cmp(*ts, in->verify_until) > 0) {
      end_verify(in);
   }
   in->owner->stream_at(in->owner_ctx, ts);
}

/* The fields of a change event this code needs. */
typedef struct {
   bson_t token;
   const char *op;
   const char *db;
   const char *coll;
   const char *to_db, *to_coll; /* a rename's target */
   bson_value_t id;
   relay_ts_t ts;
   int64_t wall_ms;
} change_fields_t;

/* The value of the first key @name inside the document at @it, if any. */
static bool
sub_field(const bson_iter_t *it, const char *name, bson_iter_t *out)
{
   return BSON_ITER_HOLDS_DOCUMENT(it) && bson_iter_recurse(it, out) && bson_iter_find(out, name);
}

/* Once the stream has delivered the change that made the eventSeq a read of @e's document
 * showed, later changes are new: the entity may be forgotten when idle. */
static void
release_read_hold(relay_ingest_t *in, relay_entity_t *e, const char *op, const bson_t *doc)
{
   if (!e || e->read_seq == 0 || relay_change_events_seq(in, op, doc) < e->read_seq) {
      return;
   }
   relay_table_release_read(in->table, e);
   relay_table_forget_if_idle(in->table, e);
}

/* One pass over the change's top-level fields (five lookups from the start, and two paths,
 * walked it up to seven times). The first of each key counts, as bson_iter_find would. */
static bool
parse_change(const bson_t *doc, change_fields_t *f)
{
   bson_iter_t it, sub;
   const uint8_t *buf;
   uint32_t len;
   bool have_id = false, have_op = false, have_ts = false, have_wall = false, have_ns = false,
        have_key = false;

   memset(f, 0, sizeof *f);
   if (!bson_iter_init(&it, doc)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (!have_id && !strcmp(key, "_id")) {
         have_id = true;
         if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
            return false;
         }
         bson_iter_document(&it, &len, &buf);
         if (!bson_init_static(&f->token, buf, len)) {
            return false;
         }
      } else if (!have_op && !strcmp(key, "operationType")) {
         have_op = true;
         f->op = BSON_ITER_HOLDS_UTF8(&it) ? bson_iter_utf8(&it, NULL) : NULL;
      } else if (!have_ts && !strcmp(key, "clusterTime")) {
         have_ts = true;
         if (BSON_ITER_HOLDS_TIMESTAMP(&it)) {
            bson_iter_timestamp(&it, &f->ts.t, &f->ts.i);
         }
      } else if (!have_wall && !strcmp(key, "wallTime")) {
         have_wall = true;
         f->wall_ms = BSON_ITER_HOLDS_DATE_TIME(&it) ? bson_iter_date_time(&it) : 0;
      } else if (!have_ns && !strcmp(key, "ns")) {
         have_ns = true;
         if (sub_field(&it, "db", &sub) && BSON_ITER_HOLDS_UTF8(&sub)) {
            f->db = bson_iter_utf8(&sub, NULL);
         }
         if (sub_field(&it, "coll", &sub) && BSON_ITER_HOLDS_UTF8(&sub)) {
            f->coll = bson_iter_utf8(&sub, NULL);
         }
      } else if (!strcmp(key, "to")) {
         if (sub_field(&it, "db", &sub) && BSON_ITER_HOLDS_UTF8(&sub)) {
            f->to_db = bson_iter_utf8(&sub, NULL);
         }
         if (sub_field(&it, "coll", &sub) && BSON_ITER_HOLDS_UTF8(&sub)) {
            f->to_coll = bson_iter_utf8(&sub, NULL);
         }
      } else if (!have_key && !strcmp(key, "documentKey")) {
         have_key = true;
         if (sub_field(&it, "_id", &sub)) {
            f->id = *bson_iter_value(&sub);
         }
      }
   }
   return have_id && f->op != NULL;
}

/* Applies one change event. Returns false if it must be retried (a read failed). */
static bool
apply_event(relay_ingest_t *in, const bson_t *doc)
{
   change_fields_t f;
   relay_pos_t *pos;
   relay_entity_t *e = NULL;
   int coll, part = -1;

   if (!parse_change(doc, &f)) {
      relay_log(RELAY_LOG_WARNING, "stream", "ignoring a change event without _id or type");
      return true;
   }
   if (!strcmp(f.op, "invalidate")) {
      return true; /* the reader reports LOST next; an invalidate token cannot be resumed */
   }
   if (!strcmp(f.op, "drop") || !strcmp(f.op, "rename") || !strcmp(f.op, "dropDatabase")) {
      forget(in, f.op, f.db, f.coll);
      coll = -1; /* only the position moves */
      if (!strcmp(f.op, "rename") && relay_namespaces_take(in->ns, f.to_db, f.to_coll) >= 0) {
         /* Documents arrived under a watched name without an insert the stream could show:
          * a sweep finds their pending events, as after a lost history (the stream starts
          * again at the sweep's start). */
         relay_log(RELAY_LOG_INFO, "stream", "rename into %s.%s, a watched namespace: sweeping",
                   f.to_db, f.to_coll);
         in->stream_gen = UINT64_MAX;
         relay_sweep_request_full(in);
         return true;
      }
   } else {
      /* A namespace met for the first time (a tenant created while the relay runs) gets its
       * index here; one the patterns do not match (the server's filter is a superset) is
       * only a position. */
      coll = relay_namespaces_take(in->ns, f.db, f.coll);
   }
   if (f.wall_ms) {
      in->stream_lag_ms = relay_wall_ms() - f.wall_ms;
   }
   stream_passed(in, &f.ts);
   if (relay_ts_cmp(f.ts, in->newest_change) > 0) {
      in->newest_change = f.ts;
   }
   /* No token yet: if the read below fails, the checkpoint must not move past this change. */
   pos = relay_table_pos_push(in->table, NULL, f.wall_ms);
   if (coll >= 0 && f.id.value_type != BSON_TYPE_EOD) {
      e = relay_table_find(in->table, coll, &f.id);
      part = e ? e->part : in->owner->part_of(in->owner_ctx, &f.id);
   }
   /* Changes of other members' partitions only move the position. An entity seen for the
    * first time while replaying, or in a partition that is still being swept, is read from
    * its document: what is pending there is the truth, the change may be older. */
   if (part >= 0 && in->owner->takes(in->owner_ctx, part)) {
      bool read_held = false; /* e has (or may now have) a read_seq to release */
      /* A read for a change covers the change: the majority snapshot at its clusterTime or
       * later, so it shows what the change did and nothing a rollback may undo. */
      if (!e && (in->verifying || in->owner->fresh(in->owner_ctx, part))) {
         if (!relay_docs_read(in, coll, part, &f.id, &f.ts, pos)) {
            return false;
         }
         read_held = true;
      } else {
         if (!e) {
            e = relay_table_add(in->table, coll, &f.id);
            e->part = part;
            e->label = relay_ingest_label(in, coll);
         }
         e->sweep_hold = e->sweep_hold || relay_docs_hold_for_sweep(in, part);
         read_held = e->read_seq > 0;
         if (!relay_change_events_take(in, e, f.op, doc, pos)) {
            if (!relay_docs_read(in, coll, part, &f.id, &f.ts, pos)) {
               return false;
            }
            read_held = true;
         }
      }
      if (read_held) { /* a read may have evicted e, or made it */
         release_read_hold(in, relay_table_find(in->table, coll, &f.id), f.op, doc);
      }
   }
   bson_destroy(pos->token);
   pos->token = bson_copy(&f.token);
   relay_table_pos_settle(in->table);
   return true;
}

/* The partial index on the watched namespaces below @upto not checked yet (one createIndexes
 * each, which is a no-op when it exists): at each open, for the namespaces known then (the
 * literal patterns, as --collection always had). Namespaces met by pattern are checked by
 * the sweep's hinted query instead, and get the index when it fails (sweep.c): a thousand
 * tenants cost no thousand round trips on the main thread when their indexes exist. */
void
relay_changes_ensure_indexes(relay_ingest_t *in, int upto)
{
   int n = relay_namespaces_count(in->ns);
   n = upto < n ? upto : n;
   for (int i = in->indexed; i < n; i++) {
      bson_error_t error;
      relay_ns_t ns;
      if (!relay_namespaces_get(in->ns, i, &ns) || ns.gone) {
         continue;
      }
      if (!in->ops->ensure_index(in->ctx, i, &error)) {
         /* Not fatal: an index with the same name but other options (85, 86) still serves,
          * and without one the sweep scans. */
         relay_log(RELAY_LOG_WARNING, "stream", "creating index outbox_pending on %s.%s: %s", ns.db,
                   ns.coll, error.message);
      }
   }
   in->indexed = n > in->indexed ? n : in->indexed;
}

bool
relay_changes_has_room(const relay_ingest_t *in)
{
   return in->table->buffered < (size_t)in->cfg->max_buffered_events &&
          in->table->buffered_bytes < in->cfg->max_buffered_bytes;
}

void
relay_ingest_open(relay_ingest_t *in, const bson_t *token, const relay_partset_t *unswept)
{
   relay_pos_t *base;

   in->indexed = 0; /* checked again: a namespace may have been dropped and made again */
   relay_changes_ensure_indexes(in, INT32_MAX);
   /* Positions of an earlier stream mean nothing for this one. Events still buffered from it
    * come "before" it: no checkpoint of the new stream is saved before they are cleared. */
   relay_table_pos_reset(in->table);
   base = relay_table_pos_marker(in->table);
   relay_table_pos_adopt(in->table, base);
   in->started = true;
   in->stream_gen = UINT64_MAX; /* nothing queued before this start is applied */
   if (token) {
      /* Partitions resumed from their checkpoints: a token after the base is valid for them.
       * Those that came without one wait for their own sweep's marker. */
      relay_partset_t resumed = *in->owner->active(in->owner_ctx);
      for (int p = 0; p < in->owner->partitions(in->owner_ctx); p++) {
         if (relay_partset_has(unswept, p)) {
            relay_partset_remove(&resumed, p);
         }
      }
      in->owner->valid_after(in->owner_ctx, &resumed, base);
      relay_log(RELAY_LOG_INFO, "stream", "resuming from the checkpoint of '%s'", in->cfg->name);
      in->stream_gen = in->ops->start(in->ctx, token, NULL);
      for (int p = 0; p < in->owner->partitions(in->owner_ctx); p++) {
         if (relay_partset_has(unswept, p)) {
            relay_sweep_request(in, p);
         }
      }
   } else {
      relay_log(RELAY_LOG_INFO, "stream", "no checkpoint for '%s'", in->cfg->name);
      relay_sweep_request_full(in);
   }
   relay_table_pos_release(in->table, base);
}

void
relay_ingest_close(relay_ingest_t *in)
{
   relay_change_t *c;

   in->ops->stop(in->ctx);
   in->started = false;
   in->stream_gen = UINT64_MAX;
   relay_change_free(in->held);
   in->held = NULL;
   while ((c = in->ops->pop(in->ctx))) {
      relay_change_free(c);
   }
   relay_sweep_abort(in);
   end_verify(in);
}

static void
on_opened(relay_ingest_t *in, const relay_change_t *c)
{
   /* A stream resumed from a token (or reopened for new partitions) replays from a point
    * whose events may be done already: until it passes the time of the open, entities stay
    * known and unknown ones are read. A new stream starts at a full sweep's start, whose
    * partitions are fresh until the stream passes the sweep's end (the same rules), so it
    * needs no verifying; and verifying would keep every swept entity in memory until the
    * stream caught up, which waits for room in a buffer the sweep keeps full (1M events over
    * 100k entities: +28 MiB, growing with the entities swept). */
   if (c->code != 0) {
      relay_changes_set_verifying(in, true);
      in->verify_until = c->ts;
   }
   relay_metrics_set(in->metrics, RELAY_G_MONGODB_CONNECTED, 1.0);
   if (c->code == 2 && in->stream_opened_once) {
      /* Reopened for another set of partitions: not a reconnect. */
      relay_log(RELAY_LOG_DEBUG, "stream", "change stream reopened for new partitions");
      return;
   }
   if (c->code == 1) {
      relay_metrics_add(in->metrics, RELAY_M_RESUMES, 1);
   }
   if (in->stream_opened_once) {
      relay_metrics_add(in->metrics, RELAY_M_MONGODB_RECONNECTS, 1);
   }
   in->stream_opened_once = true;
   relay_log(RELAY_LOG_INFO, "stream", "change stream open%s", c->code == 1 ? " (resumed)" : "");
}

/* An empty batch: the stream has delivered every change before @upto, its high-water mark's
 * time (NULL when the token does not show it: then the present, as before tokens were read).
 * On a replica set that is the present. Through mongos it may be well behind: a merged stream
 * hands out a shard's change only once every shard has passed its time, so a getMore comes
 * back empty while changes from before a sweep are still held back for another shard's next
 * write or no-op (r6.0 src/mongo/s/query/async_results_merger.cpp: the merged
 * postBatchResumeToken is the lowest of the shards'). Ending the verify, the fresh windows
 * and the read holds at the present there let those changes through as new (FINDINGS.md
 * F19: events published twice). */
static void
caught_up(relay_ingest_t *in, const relay_ts_t *upto)
{
   stream_passed(in, upto);
   /* Every change a read showed early has come by once the stream is past the newest read's
    * snapshot (a read that reported no time holds nothing back, as before times were read). */
   if (!upto || relay_ts_cmp(*upto, in->reads_seen) > 0) {
      relay_table_release_holds(in->table, true);
   }
}

/* Applies one queued change; false if it has to be retried. */
static bool
apply(relay_ingest_t *in, relay_change_t *c, int64_t now)
{
   switch (c->kind) {
   case RELAY_CHANGE_EVENT:
      return apply_event(in, c->doc);
   case RELAY_CHANGE_IDLE:
      relay_table_pos_push(in->table, c->token, 0);
      relay_table_pos_settle(in->table);
      in->stream_lag_ms = 0;
      caught_up(in, c->ts.t || c->ts.i ? &c->ts : NULL);
      return true;
   case RELAY_CHANGE_OPENED:
      on_opened(in, c);
      return true;
   case RELAY_CHANGE_DOWN:
      relay_metrics_set(in->metrics, RELAY_G_MONGODB_CONNECTED, 0.0);
      return true;
   case RELAY_CHANGE_LOST:
      relay_log(RELAY_LOG_WARNING, "stream",
                "the change stream cannot resume (code %d): its history is gone", c->code);
      relay_metrics_set(in->metrics, RELAY_G_MONGODB_CONNECTED, 1.0);
      in->stream_gen = UINT64_MAX; /* the sweep starts a new stream */
      relay_sweep_request_full(in);
      return true;
   }
   return true;
}

void
relay_ingest_step(relay_ingest_t *in, int64_t now)
{
   relay_sweep_step(in, now);
   if (!in->started) {
      return;
   }
   for (int n = 0; n < 256 && relay_changes_has_room(in); n++) {
      relay_change_t *c = in->held ? in->held : in->ops->pop(in->ctx);
      if (!c || (c == in->held && now < in->held_retry_at_ms)) {
         return;
      }
      in->held = NULL;
      if (c->gen < in->stream_gen) {
         relay_change_free(c); /* from a stream this relay has stopped */
         continue;
      }
      if (!apply(in, c, now)) {
         in->held = c;
         in->held_retry_at_ms =
            now + relay_backoff_next(in->cfg->reconnect_min_ms, in->cfg->reconnect_max_ms,
                                     &in->held_backoff_ms);
         return;
      }
      in->held_backoff_ms = 0;
      relay_change_free(c);
   }
}

void
relay_changes_cleanup(relay_ingest_t *in)
{
   relay_change_free(in->held);
   in->held = NULL;
   relay_sweep_abort(in);
   for (size_t i = 0; i < in->not_array_seen.n; i++) {
      bson_free(in->not_array_seen.keys[i]);
   }
   bson_free(in->not_array_seen.keys);
   bson_free(in->not_array_seen.lens);
   memset(&in->not_array_seen, 0, sizeof in->not_array_seen);
}
