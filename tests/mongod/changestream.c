/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "changestream.h"

#include <stdlib.h>
#include <string.h>

#include "cursor.h"
#include "wire.h"

enum { FD_DEFAULT, FD_UPDATE_LOOKUP, FD_WHEN_AVAILABLE, FD_REQUIRED, FD_OFF };

struct _md_changestream_t {
   char *db;
   char *coll; /* NULL for database and cluster streams */
   bool cluster;
   int full_document;
   int before_change;
   bson_t *pipeline; /* stages after $changeStream, NULL if none */
   uint64_t next_seq;
   bool pending_invalidate; /* an invalidate is due (batch ended between the two events) */
   md_ts_t invalidate_ts;
   bool finished;
};

bool
md_changestream_is_resumable_code(int32_t code)
{
   static const int32_t codes[] = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435,
                                   13436, 63, 150, 13388, 234, 133, 43, 0};
   for (int i = 0; codes[i]; i++) {
      if (codes[i] == code) {
         return true;
      }
   }
   return false;
}

void
md_changestream_destroy(md_changestream_t *cs)
{
   if (!cs) {
      return;
   }
   free(cs->db);
   free(cs->coll);
   bson_destroy(cs->pipeline);
   free(cs);
}

bool
md_changestream_finished(const md_changestream_t *cs)
{
   return cs->finished;
}

static bool
parse_mode(const bson_iter_t *it, bool before, int *mode, bson_error_t *error)
{
   static const char *const names[] = {"default", "updateLookup", "whenAvailable", "required",
                                       "off"};
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      return tm_error_set(error, 14, "BSON field '$changeStream.%s' is the wrong type, "
                                     "expected type 'string'", bson_iter_key(it));
   }
   const char *s = bson_iter_utf8(it, NULL);
   for (int i = 0; i < 5; i++) {
      bool allowed = before ? (i >= FD_WHEN_AVAILABLE) : (i <= FD_REQUIRED);
      if (allowed && strcmp(s, names[i]) == 0) {
         *mode = i;
         return true;
      }
   }
   return tm_error_set(error, 2, "Enumeration value '%s' for field '$changeStream.%s' is not a "
                                 "valid value.", s, bson_iter_key(it));
}

static bool
relevant(const md_changestream_t *cs, const md_oplog_entry_t *e, bool *invalidates);

/* Whether this stream emits the event (index 0) or the invalidate that `e` stands for. */
static bool
stream_produced(const md_changestream_t *cs, const md_oplog_entry_t *e, unsigned index)
{
   bool invalidates;
   bool emits = relevant(cs, e, &invalidates);
   return index == MD_TOKEN_INDEX_INVALIDATE ? invalidates : emits;
}

/* Positions the stream after a resume token. Like mongod's check that the resumed stream
 * finds the token's own event first, a token of an event this stream would not have produced
 * (another collection's, say) is 280, even though the time it names is in the history. */
static bool
seek_token(md_changestream_t *cs, md_oplog_t *log, const bson_iter_t *it, bool start_after,
           bson_error_t *error)
{
   bson_iter_t sub;
   md_ts_t ts;
   unsigned index, kind;
   if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &sub) ||
       !bson_iter_find(&sub, "_data") || !BSON_ITER_HOLDS_UTF8(&sub) ||
       !md_token_parse(bson_iter_utf8(&sub, NULL), &ts, &index, &kind)) {
      return tm_error_set(error, 260, "Bad resume token: _data of unexpected format");
   }
   if ((log->lost && md_ts_cmp(ts, log->lost_ts) < 0) || md_ts_cmp(ts, log->start) < 0) {
      goto lost;
   }
   if (kind == MD_TOKEN_HWM) {
      cs->next_seq = md_oplog_seek(log, ts, false);
      return true;
   }
   uint64_t seq = md_oplog_seek(log, ts, true);
   md_oplog_entry_t *e = md_oplog_at(log, seq);
   if (!e || md_ts_cmp(e->ts, ts) != 0 || !stream_produced(cs, e, index)) {
      if (log->lost && md_ts_cmp(ts, log->lost_ts) <= 0) {
         goto lost;
      }
      return tm_error_set(error, 280, "cannot resume stream; the resume token was not found. "
                                      "{_data: \"%s\"}", bson_iter_utf8(&sub, NULL));
   }

   if (index == MD_TOKEN_INDEX_INVALIDATE && !start_after) {
      return tm_error_set(error, 260, "Attempting to resume a change stream using "
                                      "'resumeAfter' is not allowed from an invalidate "
                                      "notification.");
   }
   cs->next_seq = seq + 1;
   return true;
lost:
   return tm_error_set(error, 286, "Resume of change stream was not possible, as the resume "
                                   "point may no longer be in the oplog.");
}

static bool
seek_time(md_changestream_t *cs, md_oplog_t *log, const bson_iter_t *it, bson_error_t *error)
{
   md_ts_t ts;
   if (!BSON_ITER_HOLDS_TIMESTAMP(it)) {
      return tm_error_set(error, 14, "BSON field '$changeStream.startAtOperationTime' is the "
                                     "wrong type, expected type 'timestamp'");
   }
   bson_iter_timestamp(it, &ts.t, &ts.i);
   if ((log->lost && md_ts_cmp(ts, log->lost_ts) <= 0) || md_ts_cmp(ts, log->start) < 0) {
      return tm_error_set(error, 286, "Resume of change stream was not possible, as the resume "
                                      "point may no longer be in the oplog.");
   }
   cs->next_seq = md_oplog_seek(log, ts, true);
   return true;
}

/* Reads the $changeStream options; the resume option is applied last, once the stream's
 * scope (allChangesForCluster may come after it) is known. */
static bool
parse_spec(md_changestream_t *cs, md_oplog_t *log, const bson_t *spec, bson_error_t *error)
{
   bson_iter_t it, start;
   int n_start = 0;
   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      bool ok = true;
      if (strcmp(k, "fullDocument") == 0) {
         ok = parse_mode(&it, false, &cs->full_document, error);
      } else if (strcmp(k, "fullDocumentBeforeChange") == 0) {
         ok = parse_mode(&it, true, &cs->before_change, error);
      } else if (strcmp(k, "resumeAfter") == 0 || strcmp(k, "startAfter") == 0 ||
                 strcmp(k, "startAtOperationTime") == 0) {
         n_start++;
         start = it;
      } else if (strcmp(k, "allChangesForCluster") == 0) {
         cs->cluster = bson_iter_as_bool(&it);
      } else if (strcmp(k, "showExpandedEvents") == 0) {
         ok = !bson_iter_as_bool(&it) ||
              tm_error_set(error, 2, "showExpandedEvents is not supported by test-mongod");
      } else {
         ok = tm_error_set(error, 40415, "BSON field '$changeStream.%s' is an unknown field.", k);
      }
      if (!ok) {
         return false;
      }
      if (n_start > 1) {
         return tm_error_set(error, 40674, "Only one type of resume option is allowed, but "
                                           "multiple were found.");
      }
   }
   if (n_start == 0) {
      return true;
   }
   const char *k = bson_iter_key(&start);
   if (strcmp(k, "startAtOperationTime") == 0) {
      return seek_time(cs, log, &start, error);
   }
   return seek_token(cs, log, &start, k[0] == 's', error);
}

md_changestream_t *
md_changestream_open(md_oplog_t *log, const char *db, const char *coll, bool cluster,
                     const bson_t *spec, const bson_t *rest, md_ts_t *start,
                     bson_error_t *error)
{
   md_changestream_t *cs = calloc(1, sizeof *cs);
   cs->db = strdup(db);
   cs->coll = coll ? strdup(coll) : NULL;
   cs->before_change = FD_OFF;
   cs->next_seq = log->next_seq;
   if (!parse_spec(cs, log, spec, error)) {
      md_changestream_destroy(cs);
      return NULL;
   }
   if (cs->cluster != cluster) {
      tm_error_set(error, cluster ? 73 : 31123,
                   cluster ? "$changeStream may not be opened on the internal admin database"
                           : "A $changeStream with 'allChangesForCluster:true' may only be "
                             "opened on the 'admin' database, and with no collection name");
      md_changestream_destroy(cs);
      return NULL;
   }
   if (rest && !bson_empty(rest)) {
      cs->pipeline = bson_copy(rest);
   }
   md_oplog_entry_t *e = md_oplog_at(log, cs->next_seq);
   if (e) {
      *start = e->ts;
   } else {
      *start = log->last;
      start->i++; /* the next event's time at the earliest */
   }
   return cs;
}

/* ---- events ------------------------------------------------------------------------------ */

static bool
is_internal_db(const char *db)
{
   return strcmp(db, "admin") == 0 || strcmp(db, "config") == 0 || strcmp(db, "local") == 0;
}

/* Whether `e` concerns the stream, and whether it invalidates it. */
static bool
relevant(const md_changestream_t *cs, const md_oplog_entry_t *e, bool *invalidates)
{
   *invalidates = false;
   if (cs->cluster) {
      return !is_internal_db(e->db) && (!e->coll || strncmp(e->coll, "system.", 7) != 0);
   }
   if (strcmp(e->db, cs->db) != 0) {
      return false;
   }
   if (!cs->coll) {
      *invalidates = e->op == MD_OP_DROP_DATABASE;
      return !e->coll || strncmp(e->coll, "system.", 7) != 0;
   }
   if (e->op == MD_OP_DROP_DATABASE) {
      *invalidates = true;
      return false; /* the collection's drop event came first */
   }
   if (strcmp(e->coll, cs->coll) != 0) {
      return false;
   }
   *invalidates = e->op == MD_OP_DROP || e->op == MD_OP_RENAME;
   return true;
}

static const char *
op_name(md_op_t op)
{
   static const char *const names[] = {"insert", "update", "replace", "delete",
                                       "drop", "rename", "dropDatabase"};
   return names[op];
}

static void
append_id(bson_t *ev, md_ts_t ts, unsigned index)
{
   char token[MD_TOKEN_LEN + 1];
   bson_t id;
   md_token_format(token, ts, index, MD_TOKEN_EVENT);
   bson_append_document_begin(ev, "_id", 3, &id);
   BSON_APPEND_UTF8(&id, "_data", token);
   bson_append_document_end(ev, &id);
}

static void
append_ns(bson_t *ev, const char *key, const char *db, const char *coll)
{
   bson_t ns;
   bson_append_document_begin(ev, key, -1, &ns);
   BSON_APPEND_UTF8(&ns, "db", db);
   if (coll) {
      BSON_APPEND_UTF8(&ns, "coll", coll);
   }
   bson_append_document_end(ev, &ns);
}

/* mongod names the event in a missing-image error as {operationType, ns, clusterTime}. */
static char *
event_summary(const md_oplog_entry_t *e)
{
   return bson_strdup_printf("{operationType: \"%s\", ns: {db: \"%s\", coll: \"%s\"}, "
                             "clusterTime: Timestamp(%u, %u)}",
                             op_name(e->op), e->db, e->coll ? e->coll : "", e->ts.t, e->ts.i);
}

/* 'required' images that are not there: 47 NoMatchingDocument when the event is reached, the
 * pre-image checked first as mongod's stages run (a post-image is computed from it). */
static bool
check_required_images(const md_changestream_t *cs, const md_oplog_entry_t *e,
                      bson_error_t *error)
{
   bool modifies = e->op == MD_OP_UPDATE || e->op == MD_OP_REPLACE || e->op == MD_OP_DELETE;
   const char *which = NULL, *events = NULL;
   if (cs->before_change == FD_REQUIRED && modifies && !e->pre_image) {
      which = "pre";
      events = "update, delete and replace";
   } else if (cs->full_document == FD_REQUIRED && e->op == MD_OP_UPDATE && !e->full_doc) {
      which = "post";
      events = "update";
   }
   if (!which) {
      return true;
   }
   char *summary = event_summary(e);
   tm_error_set(error, 47, "Change stream was configured to require a %s-image for all %s "
                           "events, but the %s-image was not found for event: %s",
                which, events, which, summary);
   bson_free(summary);
   return false;
}

static bool
append_full_document(const md_changestream_t *cs, const md_oplog_entry_t *e, md_store_t *store,
                     bson_t *ev, bson_error_t *error)
{
   if (e->op == MD_OP_INSERT || e->op == MD_OP_REPLACE) {
      BSON_APPEND_DOCUMENT(ev, "fullDocument", e->full_doc);
      return true;
   }
   if (e->op != MD_OP_UPDATE || cs->full_document == FD_DEFAULT) {
      return true;
   }
   if (cs->full_document == FD_UPDATE_LOOKUP) {
      md_coll_t *coll = md_store_coll(store, e->db, e->coll, false, NULL);
      bson_iter_t it;
      md_doc_t *d = NULL;
      if (coll && bson_iter_init_find(&it, e->doc_key, "_id")) {
         d = md_coll_find_id(coll, bson_iter_value(&it));
      }
      if (d) {
         BSON_APPEND_DOCUMENT(ev, "fullDocument", d->bson);
      } else {
         BSON_APPEND_NULL(ev, "fullDocument");
      }
   } else if (e->full_doc) {
      BSON_APPEND_DOCUMENT(ev, "fullDocument", e->full_doc);
   } else {
      BSON_APPEND_NULL(ev, "fullDocument");
   }
   return true;
}

static bool
append_before_change(const md_changestream_t *cs, const md_oplog_entry_t *e, bson_t *ev,
                     bson_error_t *error)
{
   if (cs->before_change == FD_OFF ||
       (e->op != MD_OP_UPDATE && e->op != MD_OP_REPLACE && e->op != MD_OP_DELETE)) {
      return true;
   }
   if (e->pre_image) {
      BSON_APPEND_DOCUMENT(ev, "fullDocumentBeforeChange", e->pre_image);
   } else {
      BSON_APPEND_NULL(ev, "fullDocumentBeforeChange");
   }
   return true;
}

static bson_t *
make_event(const md_changestream_t *cs, const md_oplog_entry_t *e, md_store_t *store,
           bson_error_t *error)
{
   if (!check_required_images(cs, e, error)) {
      return NULL;
   }
   bson_t *ev = bson_new();
   append_id(ev, e->ts, 0);
   BSON_APPEND_UTF8(ev, "operationType", op_name(e->op));
   bson_append_timestamp(ev, "clusterTime", -1, e->ts.t, e->ts.i);
   BSON_APPEND_DATE_TIME(ev, "wallTime", e->wall_ms);
   if (!append_full_document(cs, e, store, ev, error)) {
      bson_destroy(ev);
      return NULL;
   }
   append_ns(ev, "ns", e->db, e->coll);
   if (e->op == MD_OP_RENAME) {
      append_ns(ev, "to", e->to_db, e->to_coll);
   }
   if (e->doc_key) {
      BSON_APPEND_DOCUMENT(ev, "documentKey", e->doc_key);
   }
   if (e->update_desc) {
      BSON_APPEND_DOCUMENT(ev, "updateDescription", e->update_desc);
   }
   if (!append_before_change(cs, e, ev, error)) {
      bson_destroy(ev);
      return NULL;
   }
   return ev;
}

static bson_t *
make_invalidate(md_ts_t ts, int64_t wall_ms)
{
   bson_t *ev = bson_new();
   append_id(ev, ts, MD_TOKEN_INDEX_INVALIDATE);
   BSON_APPEND_UTF8(ev, "operationType", "invalidate");
   bson_append_timestamp(ev, "clusterTime", -1, ts.t, ts.i);
   BSON_APPEND_DATE_TIME(ev, "wallTime", wall_ms);
   return ev;
}

/* Runs the user's stages on one event. Returns false on error; *out is NULL if filtered. */
static bool
transform(const md_changestream_t *cs, bson_t *ev, bson_t **out, bson_error_t *error)
{
   *out = ev;
   if (!cs->pipeline) {
      return true;
   }
   bson_t **res = NULL;
   size_t n = 0;
   bson_t *in[1] = {ev};
   bool ok = tm_pipeline_run(cs->pipeline, in, 1, &res, &n, error);
   *out = NULL;
   if (ok && n == 1) {
      bson_iter_t a, b;
      bool same = bson_iter_init_find(&a, ev, "_id") && bson_iter_init_find(&b, res[0], "_id") &&
                  BSON_ITER_HOLDS_DOCUMENT(&b) &&
                  bson_iter_value(&a)->value.v_doc.data_len ==
                     bson_iter_value(&b)->value.v_doc.data_len &&
                  memcmp(bson_iter_value(&a)->value.v_doc.data,
                         bson_iter_value(&b)->value.v_doc.data,
                         bson_iter_value(&a)->value.v_doc.data_len) == 0;
      if (same) {
         *out = res[0];
         res[0] = NULL;
      } else {
         ok = tm_error_set(error, 280, "Encountered an event whose _id field, which contains "
                                       "the resume token, was modified by the pipeline. "
                                       "Modifying the _id field of an event makes it impossible "
                                       "to resume the stream from that point. Only "
                                       "transformations that retain the unmodified _id field "
                                       "are allowed.");
      }
   }
   if (res) {
      tm_docs_free(res, n);
   }
   bson_destroy(ev);
   return ok;
}

typedef struct {
   bson_t **docs;
   size_t n, cap, bytes;
} batch_t;

static void
batch_add(batch_t *b, bson_t *doc)
{
   if (b->n == b->cap) {
      b->cap = b->cap ? b->cap * 2 : 16;
      b->docs = realloc(b->docs, b->cap * sizeof *b->docs);
   }
   b->docs[b->n++] = doc;
   b->bytes += doc->len;
}

static bool
batch_full(const batch_t *b, int64_t batch_size)
{
   return (batch_size > 0 && b->n >= (uint64_t) batch_size) ||
          b->bytes >= MD_MAX_BSON_SIZE - 1024 * 1024;
}

/* Adds the pending invalidate event, if any, through the pipeline. */
static bool
emit_invalidate(md_changestream_t *cs, batch_t *b, int64_t wall_ms, bson_error_t *error)
{
   bson_t *out;
   cs->pending_invalidate = false;
   cs->finished = true;
   if (!transform(cs, make_invalidate(cs->invalidate_ts, wall_ms), &out, error)) {
      return false;
   }
   if (out) {
      batch_add(b, out);
   }
   return true;
}

static bool
scan(md_changestream_t *cs, md_oplog_t *log, md_store_t *store, int64_t batch_size, batch_t *b,
     bson_error_t *error)
{
   if (cs->pending_invalidate) {
      return emit_invalidate(cs, b, md_now_ms(), error);
   }
   if (cs->next_seq < log->first_seq) {
      return tm_error_set(error, 286, "Resume of change stream was not possible, as the resume "
                                      "point may no longer be in the oplog.");
   }
   while (!cs->finished && cs->next_seq < log->next_seq && !batch_full(b, batch_size)) {
      md_oplog_entry_t *e = md_oplog_at(log, cs->next_seq++);
      bool invalidates;
      if (relevant(cs, e, &invalidates)) {
         bson_t *ev = make_event(cs, e, store, error), *out;
         if (!ev || !transform(cs, ev, &out, error)) {
            return false;
         }
         if (out) {
            batch_add(b, out);
         }
      }
      if (invalidates) {
         cs->pending_invalidate = true;
         cs->invalidate_ts = e->ts;
         if (!batch_full(b, batch_size) && !emit_invalidate(cs, b, e->wall_ms, error)) {
            return false;
         }
      }
   }
   return true;
}

bool
md_changestream_poll(md_changestream_t *cs, md_oplog_t *log, md_store_t *store,
                     int64_t batch_size, bson_t ***docs, size_t *n,
                     char pbrt[MD_TOKEN_LEN + 1], bson_error_t *error)
{
   batch_t b = {0};
   *docs = NULL;
   *n = 0;
   if (batch_size == 0 && !cs->finished) {
      md_token_format(pbrt, log->last, MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
      return true;
   }
   if (!scan(cs, log, store, batch_size, &b, error)) {
      md_docs_free(b.docs, b.n);
      return false;
   }
   bson_iter_t it, sub;
   if (b.n > 0 && bson_iter_init_find(&it, b.docs[b.n - 1], "_id") &&
       bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "_data") &&
       BSON_ITER_HOLDS_UTF8(&sub)) {
      bson_strncpy(pbrt, bson_iter_utf8(&sub, NULL), MD_TOKEN_LEN + 1);
   } else if (cs->next_seq >= log->next_seq) {
      md_token_format(pbrt, log->last, MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
   } else {
      /* Stopped early with nothing to show: resume after the last entry scanned. */
      md_oplog_entry_t *e = md_oplog_at(log, cs->next_seq - 1);
      md_token_format(pbrt, e ? e->ts : log->last, MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
   }
   *docs = b.docs;
   *n = b.n;
   return true;
}
