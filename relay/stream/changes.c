/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The main thread's side of the change stream: where it starts (relay_changes_open(), asked
 * by the group when this member gets its first partitions), and turning change events of
 * owned partitions into buffered events. The sweep is in sweep.c.
 *
 * Replays: after a restart from the checkpoint, or after a sweep, the stream first replays
 * changes whose events may already have been published and cleared (by this relay before it
 * was killed, or by the sweep). While replaying ("verifying", until the stream reaches the
 * server time taken just before it was opened), an entity seen for the first time is read
 * from its document instead: what is still in `events` is what is pending, everything else
 * up to its eventSeq is done. So a restart re-publishes only what was never cleared.
 */
#include <string.h>

#include "util/log.h"
#include "relay-private.h"

/* Past this many documents reported (relay_t.not_array_seen), every one is reported. */
#define NOT_ARRAY_SEEN_MAX 4096

static bool
not_array_first_time(relay_t *r, int coll, const bson_value_t *id)
{
   relay_not_array_seen_t *seen = &r->not_array_seen;
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
report_not_array(relay_t *r, relay_entity_t *e, const bson_iter_t *it)
{
   if (!not_array_first_time(r, e->coll, &e->id)) {
      return;
   }
   relay_log(RELAY_LOG_WARNING, "stream",
             "document %s/%s: its %s field is a %s, not an array: its events are ignored "
             "(was it written without liboutbox?)",
             r->cfg->collections[e->coll], e->rendered, r->cfg->events_field,
             BSON_ITER_HOLDS_DOCUMENT(it) ? "document"
             : BSON_ITER_HOLDS_UTF8(it)   ? "string"
                                          : "value of another type");
   relay_metrics_add(r->metrics, RELAY_M_DEAD_LETTERED, 1);
}

/* Offers one stored event to @e (see offer_array()), unless relay_table_offer() would skip
 * it as seen already, which is decided from its seq and bytes without parsing it: replays and
 * re-reads of a document offer every pending event again, and the full parse and copy cost
 * more than the refusal. From the document, where a requeued event below last_seq may be
 * taken, only this very element buffered is skipped unparsed (relay_table_offer_requeued()
 * refuses an event id the entity holds). */
static void
offer_one(relay_t *r, relay_entity_t *e, const bson_value_t *value, relay_pos_t *pos,
          int64_t replayed_upto, bool from_document)
{
   relay_event_t ev;
   if (relay_table_seen(e, relay_event_peek_seq(value), value,
                        from_document ? 0 : replayed_upto)) {
      return;
   }
   relay_event_parse(value, &ev);
   bool requeued = from_document && ev.requeued > 0 && ev.seq <= e->last_seq;
   if (requeued && relay_table_offer_requeued(&r->table, e, &ev, pos)) {
      relay_log(RELAY_LOG_INFO, "stream", "requeued event of %s/%s (seq %" PRId64 ") taken",
                r->cfg->collections[e->coll], e->rendered, e->tail->ev.seq);
   } else if (requeued || !relay_table_offer(&r->table, e, &ev, pos, replayed_upto)) {
      relay_event_cleanup(&ev);
   }
}

static void
offer_array(relay_t *r, relay_entity_t *e, const bson_iter_t *it, relay_pos_t *pos,
            int64_t replayed_upto, bool from_document)
{
   bson_iter_t arr;
   if (!BSON_ITER_HOLDS_ARRAY(it)) {
      report_not_array(r, e, it);
      return;
   }
   if (!bson_iter_recurse(it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      offer_one(r, e, bson_iter_value(&arr), pos, replayed_upto, from_document);
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
hold_for_sweep(const relay_t *r, int part)
{
   return r->sweeping && relay_partset_has(&r->sweep_set, part);
}

/* Takes the pending events of a document read from the collection of an entity in
 * partition @part. */
static void
take_doc(relay_t *r, int coll, int part, const bson_t *doc, relay_pos_t *pos,
         doc_source_t source)
{
   bson_iter_t it;
   relay_entity_t *e;
   int64_t seq;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   e = relay_table_add(&r->table, coll, bson_iter_value(&it));
   e->part = part;
   e->sweep_hold = e->sweep_hold || (source == DOC_READ && hold_for_sweep(r, part));
   if (bson_iter_init_find(&it, doc, r->cfg->events_field)) {
      offer_array(r, e, &it, pos, 0, true); /* the document as it is now: nothing is a replay */
   }
   /* Every seq up to eventSeq that is not pending any more was published and cleared. */
   seq = read_int(doc, r->cfg->event_seq_field);
   if (seq > e->last_seq) {
      e->last_seq = seq;
   }
   /* The stream has yet to deliver the changes this copy already shows: if the entity were
    * forgotten once its events are cleared, those changes would look new and publish them
    * again. It stays until the stream passes this eventSeq (release_read_hold()). */
   if (source != DOC_SWEPT) {
      relay_table_hold_read(&r->table, e, seq);
   }
   relay_table_forget_if_idle(&r->table, e);
}

/* Reads one entity and takes its pending events. False if the read failed. The read and the
 * offer both happen here on the main thread, which is also where clears are completed: the
 * document is never older than a clear the table has forgotten. */
static bool
read_sync(relay_t *r, int coll, int part, const bson_value_t *id, relay_pos_t *pos)
{
   bson_t doc;
   bson_error_t error;

   if (!relay_store_read_entity(r->colls[coll], r->cfg, id, &doc, &error)) {
      if (error.code == 0) {
         return true; /* deleted since: nothing pending */
      }
      relay_log(RELAY_LOG_WARNING, "stream", "reading an entity failed: %s", error.message);
      return false;
   }
   take_doc(r, coll, part, &doc, pos, DOC_READ);
   bson_destroy(&doc);
   return true;
}

void
relay_changes_sync_doc(relay_t *r, int coll, const relay_partset_t *parts, const bson_t *doc,
                       relay_pos_t *pos)
{
   bson_iter_t it;
   int part;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   part = relay_group_part_of(&r->group, bson_iter_value(&it));
   /* A sweep without the server's filter reads every pending document; another member's
    * partitions are not ours to publish. */
   if (!relay_partset_has(parts, part) || !relay_group_takes(&r->group, part)) {
      return;
   }
   /* The sweep's cursor fetches documents a batch before they are used here, and meanwhile
    * the stream may have taken this entity from a fresh read, published its events and
    * cleared them: this copy may still show them, and their seqs are not above the
    * entity's last any more, so they would pass for repeated seqs and be dead-lettered (or,
    * had the table forgotten the entity, be published again out of order). Entities the
    * stream touches during the sweep are therefore kept in the table (sweep_hold), and any
    * entity the table knows is read afresh instead of trusting this copy. */
   if (relay_table_find(&r->table, coll, bson_iter_value(&it))) {
      if (!read_sync(r, coll, part, bson_iter_value(&it), pos)) {
         relay_sweep_request(r, part); /* read it again with the partition's next sweep */
      }
      return;
   }
   take_doc(r, coll, part, doc, pos, DOC_SWEPT);
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
skips_seqs(const relay_t *r, const relay_entity_t *e, const bson_iter_t *events,
           const bson_iter_t *fields)
{
   const char *field = r->cfg->events_field;
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
take_from_change(relay_t *r, relay_entity_t *e, const char *op, const bson_t *doc, relay_pos_t *pos)
{
   const char *field = r->cfg->events_field;
   size_t flen = strlen(field);
   bson_iter_t it, fields;
   bool found = false;
   /* While the stream replays history (after a reopen, or behind a partition's sweep), what
    * this entity already took may come again. */
   int64_t replayed_upto =
       r->verifying || (e->part >= 0 && relay_group_fresh(&r->group, e->part)) ? e->last_seq : 0;
   if (e->read_seq > replayed_upto) {
      replayed_upto = e->read_seq; /* shown by a read of its document already */
   }

   if (!strcmp(op, "insert") || !strcmp(op, "replace")) {
      char *path = bson_strdup_printf("fullDocument.%s", field);
      found = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &fields) &&
              BSON_ITER_HOLDS_ARRAY(&fields) && !skips_seqs(r, e, &fields, NULL);
      bson_free(path);
      if (found) {
         offer_array(r, e, &fields, pos, replayed_upto, false);
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
   if (bson_iter_find(&requeues, r->cfg->requeues_field) || skips_seqs(r, e, NULL, &it)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      events_key_t kind = events_key(bson_iter_key(&it), field, flen);
      if (kind == KEY_INSIDE) {
         return false; /* a change inside an event: not an append we can read */
      }
      if (kind == KEY_ARRAY) {
         offer_array(r, e, &it, pos, replayed_upto, false);
      } else if (kind == KEY_ELEMENT) {
         offer_one(r, e, bson_iter_value(&it), pos, replayed_upto, false);
      }
      found = found || kind != KEY_OTHER;
   }
   return found;
}

static int
coll_index(const relay_t *r, const char *name)
{
   for (size_t i = 0; i < r->cfg->n_collections; i++) {
      if (!strcmp(r->cfg->collections[i], name)) {
         return (int)i;
      }
   }
   return -1;
}

void
relay_changes_set_verifying(relay_t *r, bool verifying)
{
   r->verifying = verifying;
   relay_table_keep_idle(&r->table, verifying);
}

static void
end_verify(relay_t *r)
{
   if (r->verifying) {
      relay_changes_set_verifying(r, false);
      relay_table_evict_idle(&r->table);
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
change_event_seq(const relay_t *r, const char *op, const bson_t *doc)
{
   bool whole = !strcmp(op, "insert") || !strcmp(op, "replace");
   char *path = bson_strdup_printf("%s.%s", whole ? "fullDocument" : "updateDescription.updatedFields",
                                   r->cfg->event_seq_field);
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
release_read_hold(relay_t *r, relay_entity_t *e, const char *op, const bson_t *doc)
{
   if (!e || e->read_seq == 0 || change_event_seq(r, op, doc) < e->read_seq) {
      return;
   }
   relay_table_release_read(&r->table, e);
   relay_table_forget_if_idle(&r->table, e);
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
apply_event(relay_t *r, const bson_t *doc)
{
   change_fields_t f;
   relay_pos_t *pos;
   relay_entity_t *e = NULL;
   int coll, part = -1;

   if (!parse_change(doc, &f)) {
      relay_log(RELAY_LOG_WARNING, "stream", "ignoring a change event without _id or type");
      return true;
   }
   coll = f.coll ? coll_index(r, f.coll) : -1;
   if (!strcmp(f.op, "invalidate")) {
      return true; /* the reader reports LOST next; an invalidate token cannot be resumed */
   }
   if (f.wall_ms) {
      r->stream_lag_ms = relay_wall_ms() - f.wall_ms;
   }
   if (r->verifying && relay_ts_cmp(f.ts, r->verify_until) > 0) {
      end_verify(r);
   }
   relay_group_stream_at(&r->group, &f.ts);
   /* No token yet: if the read below fails, the checkpoint must not move past this change. */
   pos = relay_table_pos_push(&r->table, NULL, f.wall_ms);
   if (coll >= 0 && f.id.value_type != BSON_TYPE_EOD) {
      e = relay_table_find(&r->table, coll, &f.id);
      part = e ? e->part : relay_group_part_of(&r->group, &f.id);
   }
   /* Changes of other members' partitions only move the position. An entity seen for the
    * first time while replaying, or in a partition that is still being swept, is read from
    * its document: what is pending there is the truth, the change may be older. */
   if (part >= 0 && relay_group_takes(&r->group, part)) {
      bool read_held = false; /* e has (or may now have) a read_seq to release */
      if (!e && (r->verifying || relay_group_fresh(&r->group, part))) {
         if (!read_sync(r, coll, part, &f.id, pos)) {
            return false;
         }
         read_held = true;
      } else {
         if (!e) {
            e = relay_table_add(&r->table, coll, &f.id);
            e->part = part;
         }
         e->sweep_hold = e->sweep_hold || hold_for_sweep(r, part);
         read_held = e->read_seq > 0;
         if (!take_from_change(r, e, f.op, doc, pos)) {
            if (!read_sync(r, coll, part, &f.id, pos)) {
               return false;
            }
            read_held = true;
         }
      }
      if (read_held) { /* a read may have evicted e, or made it */
         release_read_hold(r, relay_table_find(&r->table, coll, &f.id), f.op, doc);
      }
   }
   bson_destroy(pos->token);
   pos->token = bson_copy(&f.token);
   relay_table_pos_settle(&r->table);
   return true;
}

static void
ensure_indexes(relay_t *r)
{
   for (size_t i = 0; i < r->cfg->n_collections; i++) {
      bson_error_t error;
      if (!relay_store_ensure_index(r->colls[i], r->cfg, &error)) {
         /* Not fatal: an index with the same name but other options (85, 86) still serves,
          * and without one the sweep scans. */
         relay_log(RELAY_LOG_WARNING, "stream", "creating index outbox_pending on %s: %s",
                   r->cfg->collections[i], error.message);
      }
   }
}

bool
relay_changes_has_room(const relay_t *r)
{
   return r->table.buffered < (size_t)r->cfg->max_buffered_events &&
          r->table.buffered_bytes < r->cfg->max_buffered_bytes;
}

void
relay_changes_open(relay_t *r, const bson_t *token, const relay_partset_t *unswept)
{
   relay_pos_t *base;

   ensure_indexes(r);
   /* Positions of an earlier stream mean nothing for this one. Events still buffered from it
    * come "before" it: no checkpoint of the new stream is saved before they are cleared. */
   relay_table_pos_reset(&r->table);
   base = relay_table_pos_marker(&r->table);
   relay_table_pos_adopt(&r->table, base);
   r->started = true;
   r->stream_gen = UINT64_MAX; /* nothing queued before this start is applied */
   if (token) {
      /* Partitions resumed from their checkpoints: a token after the base is valid for them.
       * Those that came without one wait for their own sweep's marker. */
      relay_partset_t resumed = r->group.active;
      for (int p = 0; p < r->group.n; p++) {
         if (relay_partset_has(unswept, p)) {
            relay_partset_remove(&resumed, p);
         }
      }
      relay_group_valid_after(&r->group, &resumed, base);
      relay_log(RELAY_LOG_INFO, "stream", "resuming from the checkpoint of '%s'", r->cfg->name);
      r->stream_gen = relay_reader_start(r->reader, token, NULL);
      for (int p = 0; p < r->group.n; p++) {
         if (relay_partset_has(unswept, p)) {
            relay_sweep_request(r, p);
         }
      }
   } else {
      relay_log(RELAY_LOG_INFO, "stream", "no checkpoint for '%s'", r->cfg->name);
      relay_sweep_request_full(r);
   }
   relay_table_pos_release(&r->table, base);
}

void
relay_changes_close(relay_t *r)
{
   relay_change_t *c;

   relay_reader_stop(r->reader);
   r->started = false;
   r->stream_gen = UINT64_MAX;
   relay_change_free(r->held);
   r->held = NULL;
   while ((c = relay_reader_pop(r->reader))) {
      relay_change_free(c);
   }
   relay_sweep_abort(r);
   end_verify(r);
}

static void
on_opened(relay_t *r, const relay_change_t *c)
{
   /* A stream resumed from a token (or reopened for new partitions) replays from a point
    * whose events may be done already: until it passes the time of the open, entities stay
    * known and unknown ones are read. A new stream starts at a full sweep's start, whose
    * partitions are fresh until the stream passes the sweep's end (the same rules), so it
    * needs no verifying; and verifying would keep every swept entity in memory until the
    * stream caught up, which waits for room in a buffer the sweep keeps full (1M events over
    * 100k entities: +28 MiB, growing with the entities swept). */
   if (c->code != 0) {
      relay_changes_set_verifying(r, true);
      r->verify_until = c->ts;
   }
   relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED, 1.0);
   if (c->code == 2 && r->stream_opened_once) {
      /* Reopened for another set of partitions: not a reconnect. */
      relay_log(RELAY_LOG_DEBUG, "stream", "change stream reopened for new partitions");
      return;
   }
   if (c->code == 1) {
      relay_metrics_add(r->metrics, RELAY_M_RESUMES, 1);
   }
   if (r->stream_opened_once) {
      relay_metrics_add(r->metrics, RELAY_M_MONGODB_RECONNECTS, 1);
   }
   r->stream_opened_once = true;
   relay_log(RELAY_LOG_INFO, "stream", "change stream open%s", c->code == 1 ? " (resumed)" : "");
}

/* Applies one queued change; false if it has to be retried. */
static bool
apply(relay_t *r, relay_change_t *c, int64_t now)
{
   switch (c->kind) {
   case RELAY_CHANGE_EVENT:
      return apply_event(r, c->doc);
   case RELAY_CHANGE_IDLE:
      relay_table_pos_push(&r->table, c->token, 0);
      relay_table_pos_settle(&r->table);
      r->stream_lag_ms = 0;
      end_verify(r);
      relay_group_stream_at(&r->group, NULL);
      /* Caught up with the present: every change a read showed early has come by. */
      relay_table_release_holds(&r->table, true);
      return true;
   case RELAY_CHANGE_OPENED:
      on_opened(r, c);
      return true;
   case RELAY_CHANGE_DOWN:
      relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED, 0.0);
      return true;
   case RELAY_CHANGE_LOST:
      relay_log(RELAY_LOG_WARNING, "stream",
                "the change stream cannot resume (code %d): its history is gone", c->code);
      relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED, 1.0);
      r->stream_gen = UINT64_MAX; /* the sweep starts a new stream */
      relay_sweep_request_full(r);
      return true;
   }
   return true;
}

void
relay_changes_step(relay_t *r, int64_t now)
{
   relay_sweep_step(r, now);
   if (!r->started) {
      return;
   }
   for (int n = 0; n < 256 && relay_changes_has_room(r); n++) {
      relay_change_t *c = r->held ? r->held : relay_reader_pop(r->reader);
      if (!c || (c == r->held && now < r->held_retry_at_ms)) {
         return;
      }
      r->held = NULL;
      if (c->gen < r->stream_gen) {
         relay_change_free(c); /* from a stream this relay has stopped */
         continue;
      }
      if (!apply(r, c, now)) {
         r->held = c;
         r->held_retry_at_ms = now + relay_backoff_next(r->cfg, &r->held_backoff_ms);
         return;
      }
      r->held_backoff_ms = 0;
      relay_change_free(c);
   }
}

void
relay_changes_cleanup(relay_t *r)
{
   relay_change_free(r->held);
   r->held = NULL;
   relay_sweep_abort(r);
   for (size_t i = 0; i < r->not_array_seen.n; i++) {
      bson_free(r->not_array_seen.keys[i]);
   }
   bson_free(r->not_array_seen.keys);
   bson_free(r->not_array_seen.lens);
   memset(&r->not_array_seen, 0, sizeof r->not_array_seen);
}
