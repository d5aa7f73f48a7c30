/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The main thread's side of the change stream: where to start (checkpoint or sweep), turning
 * change events into buffered events, and the sweep.
 *
 * Replays: after a restart from the checkpoint, or after a sweep, the stream first replays
 * changes whose events may already have been published and cleared (by this relay before it
 * was killed, or by the sweep). While replaying ("verifying", until the stream reaches the
 * server time taken just before it was opened), an entity seen for the first time is read
 * from its document instead: what is still in `events` is what is pending, everything else
 * up to its eventSeq is done. So a restart re-publishes only what was never cleared.
 */
#include <string.h>
#include <sysexits.h>

#include "util/log.h"
#include "relay-private.h"

/* Documents already reported for an events field that is not an array: collection index +
 * the BSON of {"": _id}. A writer that bypasses liboutbox should be named once, not on every
 * change of the document. Rare, so a short list; past its cap every one is reported. */
#define NOT_ARRAY_SEEN_MAX 4096
static struct {
   uint8_t **keys;
   size_t *lens;
   size_t n;
} not_array_seen;

static bool
not_array_first_time(int coll, const bson_value_t *id)
{
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
   for (size_t i = 0; i < not_array_seen.n; i++) {
      if (not_array_seen.lens[i] == len && !memcmp(not_array_seen.keys[i], key, len)) {
         bson_free(key);
         return false;
      }
   }
   if (not_array_seen.n == NOT_ARRAY_SEEN_MAX) {
      bson_free(key);
      return true;
   }
   not_array_seen.keys =
       bson_realloc(not_array_seen.keys, (not_array_seen.n + 1) * sizeof *not_array_seen.keys);
   not_array_seen.lens =
       bson_realloc(not_array_seen.lens, (not_array_seen.n + 1) * sizeof *not_array_seen.lens);
   not_array_seen.keys[not_array_seen.n] = key;
   not_array_seen.lens[not_array_seen.n++] = len;
   return true;
}

/* The document's events field is not an array: nothing in it can be published, and the
 * document is left as it is (it holds no event the relay could move). Said once per
 * document and counted with the dead letters, so an operator learns that a writer bypasses
 * liboutbox. */
static void
report_not_array(relay_t *r, relay_entity_t *e, const bson_iter_t *it)
{
   if (!not_array_first_time(e->coll, &e->id)) {
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

/* Offers every element of the array at @it to @e; @from_document when the array is the
 * document's as it is now (a read or the sweep), where requeued events are taken. */
static void
offer_array(relay_t *r, relay_entity_t *e, const bson_iter_t *it, relay_pos_t *pos,
            bool from_document)
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
      relay_event_t ev;
      relay_event_parse(bson_iter_value(&arr), &ev);
      bool requeued = from_document && ev.requeued > 0 && ev.seq <= e->last_seq;
      if (requeued && relay_table_offer_requeued(&r->table, e, &ev, pos)) {
         relay_log(RELAY_LOG_INFO, "stream", "requeued event of %s/%s (seq %" PRId64 ") taken",
                   r->cfg->collections[e->coll], e->rendered, e->tail->ev.seq);
      } else if (requeued || !relay_table_offer(&r->table, e, &ev, pos)) {
         relay_event_cleanup(&ev);
      }
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

/* Takes the pending events of a document read from the collection (sweep or read). */
static void
sync_doc(relay_t *r, int coll, const bson_t *doc, relay_pos_t *pos)
{
   bson_iter_t it;
   relay_entity_t *e;
   int64_t seq;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   e = relay_table_add(&r->table, coll, bson_iter_value(&it));
   if (bson_iter_init_find(&it, doc, r->cfg->events_field)) {
      offer_array(r, e, &it, pos, true);
   }
   /* Every seq up to eventSeq that is not pending any more was published and cleared. */
   seq = read_int(doc, r->cfg->event_seq_field);
   if (seq > e->last_seq) {
      e->last_seq = seq;
   }
   if (!r->verifying) {
      relay_table_evict(&r->table, e);
   }
}

/* Reads one entity and takes its pending events. False if the read failed. */
static bool
read_sync(relay_t *r, int coll, const bson_value_t *id, relay_pos_t *pos)
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
   sync_doc(r, coll, &doc, pos);
   bson_destroy(&doc);
   return true;
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

/* Takes the new events from the change itself. Returns false when it does not carry them
 * in a form we understand (then the document is read instead). */
static bool
take_from_change(relay_t *r, relay_entity_t *e, const char *op, const bson_t *doc, relay_pos_t *pos)
{
   const char *field = r->cfg->events_field;
   size_t flen = strlen(field);
   bson_iter_t it, fields;
   bool found = false;

   if (!strcmp(op, "insert") || !strcmp(op, "replace")) {
      char *path = bson_strdup_printf("fullDocument.%s", field);
      found = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &fields) &&
              BSON_ITER_HOLDS_ARRAY(&fields);
      bson_free(path);
      if (found) {
         offer_array(r, e, &fields, pos, false);
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
   if (bson_iter_find(&requeues, r->cfg->requeues_field)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (!strcmp(key, field)) {
         offer_array(r, e, &it, pos, false);
         found = true;
      } else if (!strncmp(key, field, flen) && key[flen] == '.') {
         relay_event_t ev;
         if (!all_digits(key + flen + 1)) {
            return false; /* a change inside an event: not an append we can read */
         }
         relay_event_parse(bson_iter_value(&it), &ev);
         if (!relay_table_offer(&r->table, e, &ev, pos)) {
            relay_event_cleanup(&ev);
         }
         found = true;
      }
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

static void
end_verify(relay_t *r)
{
   if (r->verifying) {
      r->verifying = false;
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

static bool
parse_change(const bson_t *doc, change_fields_t *f)
{
   bson_iter_t it, sub;
   const uint8_t *buf;
   uint32_t len;

   memset(f, 0, sizeof *f);
   if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return false;
   }
   bson_iter_document(&it, &len, &buf);
   if (!bson_init_static(&f->token, buf, len)) {
      return false;
   }
   if (bson_iter_init_find(&it, doc, "operationType") && BSON_ITER_HOLDS_UTF8(&it)) {
      f->op = bson_iter_utf8(&it, NULL);
   }
   if (bson_iter_init_find(&it, doc, "clusterTime") && BSON_ITER_HOLDS_TIMESTAMP(&it)) {
      bson_iter_timestamp(&it, &f->ts.t, &f->ts.i);
   }
   if (bson_iter_init_find(&it, doc, "wallTime") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
      f->wall_ms = bson_iter_date_time(&it);
   }
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "ns.coll", &sub) &&
       BSON_ITER_HOLDS_UTF8(&sub)) {
      f->coll = bson_iter_utf8(&sub, NULL);
   }
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "documentKey._id", &sub)) {
      f->id = *bson_iter_value(&sub);
   }
   return f->op != NULL;
}

/* Applies one change event. Returns false if it must be retried (a read failed). */
static bool
apply_event(relay_t *r, const bson_t *doc)
{
   change_fields_t f;
   relay_pos_t *pos;
   relay_entity_t *e;
   int coll;

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
   /* No token yet: if the read below fails, the checkpoint must not move past this change. */
   pos = relay_table_pos_push(&r->table, NULL, f.wall_ms);
   if (coll >= 0 && f.id.value_type != BSON_TYPE_EOD) {
      e = relay_table_find(&r->table, coll, &f.id);
      if (!e && r->verifying) {
         if (!read_sync(r, coll, &f.id, pos)) {
            return false;
         }
      } else {
         if (!e) {
            e = relay_table_add(&r->table, coll, &f.id);
         }
         if (!take_from_change(r, e, f.op, doc, pos) && !read_sync(r, coll, &f.id, pos)) {
            return false;
         }
      }
   }
   bson_destroy(pos->token);
   pos->token = bson_copy(&f.token);
   relay_table_pos_settle(&r->table);
   return true;
}

static void
begin_sweep(relay_t *r, int64_t now)
{
   bson_error_t error;

   if (!relay_store_operation_time(r->client, &r->sweep_start, &error)) {
      relay_log(RELAY_LOG_WARNING, "sweep", "cannot start a sweep: %s", error.message);
      r->sweep_retry_at_ms = now + relay_backoff_next(r->cfg, &r->sweep_backoff_ms);
      r->sweeping = true; /* sweep_pos NULL: begin again when due */
      return;
   }
   relay_log(RELAY_LOG_INFO, "sweep", "sweeping for pending events (no usable resume token)");
   relay_metrics_add(r->metrics, RELAY_M_SWEEPS, 1);
   /* Old positions belong to a stream that cannot be resumed: forget them. The sweep's own
    * position holds one extra reference until the sweep ends, so it outlives its events. */
   relay_table_pos_reset(&r->table);
   r->sweep_pos = relay_table_pos_push(&r->table, NULL, 0);
   r->sweep_pos->remaining++;
   /* Events still buffered from the old stream come "before" the new one too: until they
    * are cleared, no checkpoint of the new stream may be saved. */
   relay_table_pos_adopt(&r->table, r->sweep_pos);
   r->sweeping = true;
   r->sweep_coll = 0;
   r->sweep_hint = true;
   r->verifying = false;
}

static void
finish_sweep(relay_t *r)
{
   r->sweep_pos->remaining--;
   r->sweep_pos = NULL;
   r->sweeping = false;
   r->sweep_backoff_ms = 0;
   relay_table_pos_settle(&r->table);
   relay_log(RELAY_LOG_INFO, "sweep", "sweep done; %zu events pending; watching from before it",
             r->table.buffered);
   relay_reader_start(r->reader, NULL, &r->sweep_start);
}

/* Backpressure: read more only below both buffer bounds. Checked before each document or
 * change, so one of them (however large) always gets in. */
static bool
buffer_has_room(const relay_t *r)
{
   return r->table.buffered < (size_t)r->cfg->max_buffered_events &&
          r->table.buffered_bytes < r->cfg->max_buffered_bytes;
}

static void
sweep_step(relay_t *r, int64_t now)
{
   const bson_t *doc;
   bson_error_t error;

   if (now < r->sweep_retry_at_ms) {
      return;
   }
   if (!r->sweep_pos) {
      begin_sweep(r, now);
      return;
   }
   for (int n = 0; n < 200 && buffer_has_room(r); n++) {
      if (!r->sweep_cursor) {
         r->sweep_cursor = relay_store_sweep_cursor(r->colls[r->sweep_coll], r->cfg, r->sweep_hint);
      }
      if (mongoc_cursor_next(r->sweep_cursor, &doc)) {
         relay_store_sweep_pace(r->sweep_cursor, doc);
         sync_doc(r, (int)r->sweep_coll, doc, r->sweep_pos);
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
         finish_sweep(r);
         return;
      }
   }
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

/* The first read failed. A refusal of the credentials before the relay ever worked will not
 * fix itself: stop with EX_NOPERM so the operator sees it at once. Anything else (the server
 * is down, TLS fails) is retried with backoff and logged once until it works. */
static void
start_failed(relay_t *r, const bson_error_t *error, int64_t now)
{
   bool auth = error->domain == MONGOC_ERROR_CLIENT &&
               error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE;
   relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED, 0.0);
   if (auth) {
      /* mongoc passes on the server's answer to the SASL conversation as is (e.g. "no such
       * command: 'saslStart'"): say that it was the authentication that failed. */
      relay_log(RELAY_LOG_ERROR, "stream",
                "MongoDB authentication failed (%s): check the user, password, authSource "
                "and authMechanism of --mongodb-uri; exiting with status %d",
                error->message, EX_NOPERM);
      r->exit_code = EX_NOPERM;
      relay_request_stop(r);
      return;
   }
   relay_log(r->sweep_backoff_ms == 0 ? RELAY_LOG_WARNING : RELAY_LOG_DEBUG, "stream",
             "MongoDB: %s%s", error->message,
             r->sweep_backoff_ms == 0 ? " (retrying with backoff; logged again when it works)"
                                      : "");
   r->sweep_retry_at_ms = now + relay_backoff_next(r->cfg, &r->sweep_backoff_ms);
}

void
relay_changes_start(relay_t *r, int64_t now)
{
   bson_t token;
   bson_error_t error;

   if (now < r->sweep_retry_at_ms) {
      return;
   }
   if (relay_store_load_checkpoint(r->state, r->cfg->name, &token, &error)) {
      ensure_indexes(r);
      relay_log(RELAY_LOG_INFO, "stream", "%sresuming from the checkpoint of '%s'",
                r->sweep_backoff_ms ? "MongoDB answers; " : "", r->cfg->name);
      r->sweep_backoff_ms = 0;
      relay_reader_start(r->reader, &token, NULL);
      bson_destroy(&token);
      r->started = true;
      return;
   }
   if (error.code != 0) {
      start_failed(r, &error, now);
      return;
   }
   ensure_indexes(r);
   relay_log(RELAY_LOG_INFO, "stream", "no checkpoint for '%s'", r->cfg->name);
   r->started = true;
   r->sweep_backoff_ms = 0;
   begin_sweep(r, now);
}

static void
on_opened(relay_t *r, const relay_change_t *c)
{
   /* Every (re)open replays from a point whose events may be done already. */
   r->verifying = true;
   r->verify_until = c->ts;
   relay_metrics_set(r->metrics, RELAY_G_MONGODB_CONNECTED, 1.0);
   if (c->code) {
      relay_metrics_add(r->metrics, RELAY_M_RESUMES, 1);
   }
   if (r->stream_opened_once) {
      relay_metrics_add(r->metrics, RELAY_M_MONGODB_RECONNECTS, 1);
   }
   r->stream_opened_once = true;
   relay_log(RELAY_LOG_INFO, "stream", "change stream open%s", c->code ? " (resumed)" : "");
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
      begin_sweep(r, now);
      return true;
   }
   return true;
}

void
relay_changes_step(relay_t *r, int64_t now)
{
   if (!r->started) {
      relay_changes_start(r, now);
      return;
   }
   if (r->sweeping) {
      sweep_step(r, now);
      return;
   }
   for (int n = 0; n < 256 && buffer_has_room(r); n++) {
      relay_change_t *c = r->held ? r->held : relay_reader_pop(r->reader);
      if (!c || (c == r->held && now < r->held_retry_at_ms)) {
         return;
      }
      r->held = NULL;
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
   if (r->sweep_cursor) {
      mongoc_cursor_destroy(r->sweep_cursor);
      r->sweep_cursor = NULL;
   }
   for (size_t i = 0; i < not_array_seen.n; i++) {
      bson_free(not_array_seen.keys[i]);
   }
   bson_free(not_array_seen.keys);
   bson_free(not_array_seen.lens);
   memset(&not_array_seen, 0, sizeof not_array_seen);
}
