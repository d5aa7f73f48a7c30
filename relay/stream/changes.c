/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest's stream half (ingest.h): where the stream starts (relay_ingest_open(), applied by
 * relay.c when the partition owner asks for it), and turning change events of owned
 * partitions into buffered events. The sweep is in sweep.c; the state both share is
 * relay_ingest_t (ingest-private.h). Main thread only.
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

/* Past this many documents reported (relay_ingest_t.not_array_seen), every one is reported. */
#define NOT_ARRAY_SEEN_MAX 4096

static bool
not_array_first_time(relay_ingest_t *in, int coll, const bson_value_t *id)
{
   relay_not_array_seen_t *seen = &in->not_array_seen;
   bson_t doc = BSON_INITIALIZER;
   size_t len;
   uint8_t *key;
   uint32_t c = (uint32_t)coll;

   bson_append_value(&doc, "", 0, id);
   len = sizeof c + doc.len;
   key = bson_malloc(len);
   memcpy(key, &c, sizeof c);
   memcpy(key + sizeof c, bson_get_data(&doc), doc.len);
   bson_destroy(&doc);
   for (size_t i = 0; i < seen->n; i++) {
      if (seen->lens[i] == len && !memcmp(seen->keys[i], key, len)) {
         bson_free(key);
         return false;
      }
   }
   if (seen->n == NOT_ARRAY_SEEN_MAX) {
      bson_free(key);
      return true;
   }
   seen->keys = bson_realloc(seen->keys, (seen->n + 1) * sizeof *seen->keys);
   seen->lens = bson_realloc(seen->lens, (seen->n + 1) * sizeof *seen->lens);
   seen->keys[seen->n] = key;
   seen->lens[seen->n++] = len;
   return true;
}

/* The document's events field is not an array: nothing in it can be published, and the
 * document is left as it is (it holds no event the relay could move). Said once per
 * document and counted with the dead letters, so an operator learns that a writer bypasses
 * liboutbox. */
static void
report_not_array(relay_ingest_t *in, relay_entity_t *e, const bson_iter_t *it)
{
   if (!not_array_first_time(in, e->coll, &e->id)) {
      return;
   }
   relay_log(RELAY_LOG_WARNING, "stream",
             "document %s/%s: its %s field is a %s, not an array: its events are ignored "
             "(was it written without liboutbox?)",
             in->cfg->collections[e->coll], e->rendered, in->cfg->events_field,
             BSON_ITER_HOLDS_DOCUMENT(it) ? "document"
             : BSON_ITER_HOLDS_UTF8(it)   ? "string"
                                          : "value of another type");
   relay_metrics_add(in->metrics, RELAY_M_DEAD_LETTERED, 1);
}

/* Offers one stored event to @e (see offer_array()), unless relay_table_offer() would skip
 * it as seen already, which is decided from its seq and bytes without parsing it: replays and
 * re-reads of a document offer every pending event again, and the full parse and copy cost
 * more than the refusal. From the document, where a requeued event below last_seq may be
 * taken, only this very element buffered is skipped unparsed (relay_table_offer_requeued()
 * refuses an event id the entity holds). */
static void
offer_one(relay_ingest_t *in, relay_entity_t *e, const bson_value_t *value, relay_pos_t *pos,
          int64_t replayed_upto, bool from_document)
{
   relay_event_t ev;
   if (relay_table_seen(e, relay_event_peek_seq(value), value,
                        from_document ? 0 : replayed_upto)) {
      return;
   }
   relay_event_parse(value, &ev);
   bool requeued = from_document && ev.requeued > 0 && ev.seq <= e->last_seq;
   if (requeued && relay_table_offer_requeued(in->table, e, &ev, pos)) {
      relay_log(RELAY_LOG_INFO, "stream", "requeued event of %s/%s (seq %" PRId64 ") taken",
                in->cfg->collections[e->coll], e->rendered, e->tail->ev.seq);
   } else if (requeued || !relay_table_offer(in->table, e, &ev, pos, replayed_upto)) {
      relay_event_cleanup(&ev);
   }
}

static void
offer_array(relay_ingest_t *in, relay_entity_t *e, const bson_iter_t *it, relay_pos_t *pos,
            int64_t replayed_upto, bool from_document)
{
   bson_iter_t arr;
   if (!BSON_ITER_HOLDS_ARRAY(it)) {
      report_not_array(in, e, it);
      return;
   }
   if (!bson_iter_recurse(it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      offer_one(in, e, bson_iter_value(&arr), pos, replayed_upto, from_document);
   }
}

static int64_t
read_int(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, doc, key) &&
       (BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_INT32(&it))) {
      return bson_iter_as_int64(&it);
   }
   return 0;
}

/* Where a copy of a document comes from (take_doc()). */
typedef enum {
   DOC_SWEPT, /* the sweep's cursor: its partition's fresh window covers the replays */
   DOC_READ,  /* read just now, ahead of the stream: see relay_entity_t.read_seq */
} doc_source_t;

/* Whether an entity the stream takes now in partition @part must stay in the table until the
 * running sweep ends: see relay_changes_sync_doc(). */
static bool
hold_for_sweep(const relay_ingest_t *in, int part)
{
   return in->sweeping && relay_partset_has(&in->sweep_set, part);
}

/* Takes the pending events of a document read from the collection of an entity in
 * partition @part. */
static void
take_doc(relay_ingest_t *in, int coll, int part, const bson_t *doc, relay_pos_t *pos,
         doc_source_t source)
{
   bson_iter_t it;
   relay_entity_t *e;
   int64_t seq;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   e = relay_table_add(in->table, coll, bson_iter_value(&it));
   e->part = part;
   e->sweep_hold = e->sweep_hold || (source == DOC_READ && hold_for_sweep(in, part));
   if (bson_iter_init_find(&it, doc, in->cfg->events_field)) {
      offer_array(in, e, &it, pos, 0, true); /* the document as it is now: nothing is a replay */
   }
   /* Every seq up to eventSeq that is not pending any more was published and cleared. */
   seq = read_int(doc, in->cfg->event_seq_field);
   if (seq > e->last_seq) {
      e->last_seq = seq;
   }
   /* The stream has yet to deliver the changes this copy already shows: if the entity were
    * forgotten once its events are cleared, those changes would look new and publish them
    * again. It stays until the stream passes this eventSeq (release_read_hold()). */
   if (source != DOC_SWEPT) {
      relay_table_hold_read(in->table, e, seq);
   }
   relay_table_forget_if_idle(in->table, e);
}

/* Reads one entity and takes its pending events. False if the read failed. The read and the
 * offer both happen here on the main thread, which is also where clears are completed: the
 * document is never older than a clear the table has forgotten. */
static bool
read_sync(relay_ingest_t *in, int coll, int part, const bson_value_t *id, relay_pos_t *pos)
{
   bson_t doc;
   bson_error_t error;

   if (!in->ops->read_entity(in->ctx, coll, id, &doc, &error)) {
      if (error.code == 0) {
         return true; /* deleted since: nothing pending */
      }
      relay_log(RELAY_LOG_WARNING, "stream", "reading an entity failed: %s", error.message);
      return false;
   }
   take_doc(in, coll, part, &doc, pos, DOC_READ);
   bson_destroy(&doc);
   return true;
}

void
relay_changes_sync_doc(relay_ingest_t *in, int coll, const relay_partset_t *parts,
                       const bson_t *doc, relay_pos_t *pos)
{
   bson_iter_t it;
   int part;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   part = relay_group_part_of(in->group, bson_iter_value(&it));
   /* A sweep without the server's filter reads every pending document; another member's
    * partitions are not ours to publish. */
   if (!relay_partset_has(parts, part) || !relay_group_takes(in->group, part)) {
      return;
   }
   /* The sweep's cursor fetches documents a batch before they are used here, and meanwhile
    * the stream may have taken this entity from a fresh read, published its events and
    * cleared them: this copy may still show them, and their seqs are not above the
    * entity's last any more, so they would pass for repeated seqs and be dead-lettered (or,
    * had the table forgotten the entity, be published again out of order). Entities the
    * stream touches during the sweep are therefore kept in the table (sweep_hold), and any
    * entity the table knows is read afresh instead of trusting this copy. */
   if (relay_table_find(in->table, coll, bson_iter_value(&it))) {
      if (!read_sync(in, coll, part, bson_iter_value(&it), pos)) {
         relay_sweep_request(in, part); /* read it again with the partition's next sweep */
      }
      return;
   }
   take_doc(in, coll, part, doc, pos, DOC_SWEPT);
}

static bool
all_digits(const char *s)
{
   if (!*s) {
      return false;
   }
   for (; *s; s++) {
      if (*s < '0' || *s > '9') {
         return false;
      }
   }
   return true;
}

/* What a key of a change's updatedFields names. */
typedef enum {
   KEY_OTHER,   /* not the events field */
   KEY_ARRAY,   /* the whole events array */
   KEY_ELEMENT, /* "events.N": one element (an append) */
   KEY_INSIDE,  /* "events.N.x" or the like: a change inside an event */
} events_key_t;

static events_key_t
events_key(const char *key, const char *field, size_t flen)
{
   if (strncmp(key, field, flen) != 0) {
      return KEY_OTHER;
   }
   if (key[flen] == '\0') {
      return KEY_ARRAY;
   }
   if (key[flen] != '.') {
      return KEY_OTHER;
   }
   return all_digits(key + flen + 1) ? KEY_ELEMENT : KEY_INSIDE;
}

/* Folds into *@lowest the seq of the event at @value if it is above @e's last seq. */
static void
fold_new_seq(const relay_entity_t *e, const bson_value_t *value, int64_t *lowest)
{
   int64_t seq = relay_event_peek_seq(value);
   if (seq > e->last_seq && seq < *lowest) {
      *lowest = seq;
   }
}

static void
fold_new_seqs(const relay_entity_t *e, const bson_iter_t *it, int64_t *lowest)
{
   bson_iter_t arr;
   if (BSON_ITER_HOLDS_ARRAY(it) && bson_iter_recurse(it, &arr)) {
      while (bson_iter_next(&arr)) {
         fold_new_seq(e, bson_iter_value(&arr), lowest);
      }
   }
}

/* Whether the change's new events (in @events, the whole array, or in the "events.N" fields
 * of @fields) start above the seq after @e's last: the events between were written by a
 * change this relay never saw (the stream's history was lost while the entity stayed in
 * the table), and they are pending in the document unless cleared since. Taking this change
 * would raise last_seq above them, and the sweep would then find them "not above the last
 * seq" and dead-letter them. Seqs are consecutive with liboutbox; a writer that skips seqs
 * only costs a read. Nothing is known of an entity with last_seq 0. */
static bool
skips_seqs(const relay_ingest_t *in, const relay_entity_t *e, const bson_iter_t *events,
           const bson_iter_t *fields)
{
   const char *field = in->cfg->events_field;
   size_t flen = strlen(field);
   int64_t lowest = INT64_MAX;
   bson_iter_t it;

   if (e->last_seq == 0) {
      return false;
   }
   if (events) {
      fold_new_seqs(e, events, &lowest);
   } else {
      it = *fields;
      while (bson_iter_next(&it)) {
         events_key_t kind = events_key(bson_iter_key(&it), field, flen);
         if (kind == KEY_ARRAY) {
            fold_new_seqs(e, &it, &lowest);
         } else if (kind == KEY_ELEMENT) {
            fold_new_seq(e, bson_iter_value(&it), &lowest);
         }
      }
   }
   return lowest != INT64_MAX && lowest > e->last_seq + 1;
}

/* Takes the new events from the change itself. Returns false when it does not carry them
 * in a form we understand, or skips seqs (then the document is read instead). */
static bool
take_from_change(relay_ingest_t *in, relay_entity_t *e, const char *op, const bson_t *doc,
                 relay_pos_t *pos)
{
   const char *field = in->cfg->events_field;
   size_t flen = strlen(field);
   bson_iter_t it, fields;
   bool found = false;
   /* While the stream replays history (after a reopen, or behind a partition's sweep), what
    * this entity already took may come again. */
   int64_t replayed_upto =
       in->verifying || (e->part >= 0 && relay_group_fresh(in->group, e->part)) ? e->last_seq : 0;
   if (e->read_seq > replayed_upto) {
      replayed_upto = e->read_seq; /* shown by a read of its document already */
   }

   if (!strcmp(op, "insert") || !strcmp(op, "replace")) {
      char *path = bson_strdup_printf("fullDocument.%s", field);
      found = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &fields) &&
              BSON_ITER_HOLDS_ARRAY(&fields) && !skips_seqs(in, e, &fields, NULL);
      bson_free(path);
      if (found) {
         offer_array(in, e, &fields, pos, replayed_upto, false);
      }
      return found;
   }
   if (!bson_iter_init(&it, doc) ||
       !bson_iter_find_descendant(&it, "updateDescription.updatedFields", &fields) ||
       !bson_iter_recurse(&fields, &it)) {
      return false;
   }
   /* A requeue: the event is below the entity's last seq, and whether it is still pending
    * (not already published since) only the document says. Read it. */
   bson_iter_t requeues = it;
   if (bson_iter_find(&requeues, in->cfg->requeues_field) || skips_seqs(in, e, NULL, &it)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      events_key_t kind = events_key(bson_iter_key(&it), field, flen);
      if (kind == KEY_INSIDE) {
         return false; /* a change inside an event: not an append we can read */
      }
      if (kind == KEY_ARRAY) {
         offer_array(in, e, &it, pos, replayed_upto, false);
      } else if (kind == KEY_ELEMENT) {
         offer_one(in, e, bson_iter_value(&it), pos, replayed_upto, false);
      }
      found = found || kind != KEY_OTHER;
   }
   return found;
}

static int
coll_index(const relay_ingest_t *in, const char *name)
{
   for (size_t i = 0; i < in->cfg->n_collections; i++) {
      if (!strcmp(in->cfg->collections[i], name)) {
         return (int)i;
      }
   }
   return -1;
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

/* The fields of a change event this code needs. */
typedef struct {
   bson_t token;
   const char *op;
   const char *coll;
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

/* The eventSeq a change leaves in its document, or 0 if it does not say. */
static int64_t
change_event_seq(const relay_ingest_t *in, const char *op, const bson_t *doc)
{
   bool whole = !strcmp(op, "insert") || !strcmp(op, "replace");
   char *path =
       bson_strdup_printf("%s.%s", whole ? "fullDocument" : "updateDescription.updatedFields",
                          in->cfg->event_seq_field);
   bson_iter_t it, found;
   int64_t seq = 0;
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found) &&
       (BSON_ITER_HOLDS_INT64(&found) || BSON_ITER_HOLDS_INT32(&found))) {
      seq = bson_iter_as_int64(&found);
   }
   bson_free(path);
   return seq;
}

/* Once the stream has delivered the change that made the eventSeq a read of @e's document
 * showed, later changes are new: the entity may be forgotten when idle. */
static void
release_read_hold(relay_ingest_t *in, relay_entity_t *e, const char *op, const bson_t *doc)
{
   if (!e || e->read_seq == 0 || change_event_seq(in, op, doc) < e->read_seq) {
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
         if (sub_field(&it, "coll", &sub) && BSON_ITER_HOLDS_UTF8(&sub)) {
            f->coll = bson_iter_utf8(&sub, NULL);
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
   coll = f.coll ? coll_index(in, f.coll) : -1;
   if (!strcmp(f.op, "invalidate")) {
      return true; /* the reader reports LOST next; an invalidate token cannot be resumed */
   }
   if (f.wall_ms) {
      in->stream_lag_ms = relay_wall_ms() - f.wall_ms;
   }
   if (in->verifying && relay_ts_cmp(f.ts, in->verify_until) > 0) {
      end_verify(in);
   }
   relay_group_stream_at(in->group, &f.ts);
   /* No token yet: if the read below fails, the checkpoint must not move past this change. */
   pos = relay_table_pos_push(in->table, NULL, f.wall_ms);
   if (coll >= 0 && f.id.value_type != BSON_TYPE_EOD) {
      e = relay_table_find(in->table, coll, &f.id);
      part = e ? e->part : relay_group_part_of(in->group, &f.id);
   }
   /* Changes of other members' partitions only move the position. An entity seen for the
    * first time while replaying, or in a partition that is still being swept, is read from
    * its document: what is pending there is the truth, the change may be older. */
   if (part >= 0 && relay_group_takes(in->group, part)) {
      bool read_held = false; /* e has (or may now have) a read_seq to release */
      if (!e && (in->verifying || relay_group_fresh(in->group, part))) {
         if (!read_sync(in, coll, part, &f.id, pos)) {
            return false;
         }
         read_held = true;
      } else {
         if (!e) {
            e = relay_table_add(in->table, coll, &f.id);
            e->part = part;
         }
         e->sweep_hold = e->sweep_hold || hold_for_sweep(in, part);
         read_held = e->read_seq > 0;
         if (!take_from_change(in, e, f.op, doc, pos)) {
            if (!read_sync(in, coll, part, &f.id, pos)) {
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

static void
ensure_indexes(relay_ingest_t *in)
{
   for (size_t i = 0; i < in->cfg->n_collections; i++) {
      bson_error_t error;
      if (!in->ops->ensure_index(in->ctx, (int)i, &error)) {
         /* Not fatal: an index with the same name but other options (85, 86) still serves,
          * and without one the sweep scans. */
         relay_log(RELAY_LOG_WARNING, "stream", "creating index outbox_pending on %s: %s",
                   in->cfg->collections[i], error.message);
      }
   }
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

   ensure_indexes(in);
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
      relay_partset_t resumed = in->group->active;
      for (int p = 0; p < in->group->n; p++) {
         if (relay_partset_has(unswept, p)) {
            relay_partset_remove(&resumed, p);
         }
      }
      relay_group_valid_after(in->group, &resumed, base);
      relay_log(RELAY_LOG_INFO, "stream", "resuming from the checkpoint of '%s'", in->cfg->name);
      in->stream_gen = in->ops->start(in->ctx, token, NULL);
      for (int p = 0; p < in->group->n; p++) {
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
      end_verify(in);
      relay_group_stream_at(in->group, NULL);
      /* Caught up with the present: every change a read showed early has come by. */
      relay_table_release_holds(in->table, true);
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
         in->held_retry_at_ms = now + relay_backoff_next(in->cfg, &in->held_backoff_ms);
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
