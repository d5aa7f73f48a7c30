/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams' positions and batches: opening a stream from its $changeStream options
 * (resume tokens, times, the history bound), and collecting the events available now
 * (changestream-event.c builds them). Callers hold the server lock.
 */
#include "changestream/changestream-private.h"

#include <stdlib.h>
#include <string.h>

#include "data/cursor.h"
#include "net/wire.h"

bool
md_changestream_is_resumable_code(int32_t code)
{
   static const int32_t codes[] = {6,     7,     89, 91,  189,   262, 9001, 10107, 11600, 11602,
                                   13435, 13436, 63, 150, 13388, 234, 133,  43,    0};
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
   tm_pipeline_destroy(cs->stages);
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
      return tm_error_set(error, 14,
                          "BSON field '$changeStream.%s' is the wrong type, "
                          "expected type 'string'",
                          bson_iter_key(it));
   }
   const char *s = bson_iter_utf8(it, NULL);
   for (int i = 0; i < 5; i++) {
      bool allowed = before ? (i >= FD_WHEN_AVAILABLE) : (i <= FD_REQUIRED);
      if (allowed && strcmp(s, names[i]) == 0) {
         *mode = i;
         return true;
      }
   }
   return tm_error_set(error, 2,
                       "Enumeration value '%s' for field '$changeStream.%s' is not a "
                       "valid value.",
                       s, bson_iter_key(it));
}

/* The sequence number of the entry a token names: (ts, index), or UINT64_MAX. */
static uint64_t
find_entry(const md_oplog_t *log, md_ts_t ts, uint32_t index)
{
   md_oplog_entry_t *e;
   for (uint64_t seq = md_oplog_seek(log, ts, true);
        (e = md_oplog_at(log, seq)) && md_ts_cmp(e->ts, ts) == 0; seq++) {
      if (e->txn_index == index) {
         return seq;
      }
   }
   return UINT64_MAX;
}

/* Whether this stream emits the event or the invalidate (`kind`) that `e` stands for. */
static bool
stream_produced(const md_changestream_t *cs, const md_oplog_entry_t *e, unsigned kind)
{
   bool invalidates;
   bool emits = md_cs_relevant(cs, e, &invalidates);
   return kind == MD_TOKEN_INVALIDATE ? invalidates : emits;
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
   uint32_t index;
   unsigned kind;
   if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &sub) ||
       !bson_iter_find(&sub, "_data") || !BSON_ITER_HOLDS_UTF8(&sub) ||
       !md_token_parse(bson_iter_utf8(&sub, NULL), &ts, &index, &kind) ||
       (kind != MD_TOKEN_EVENT && kind != MD_TOKEN_INVALIDATE && kind != MD_TOKEN_HWM)) {
      return tm_error_set(error, 260, "Bad resume token: _data of unexpected format");
   }
   if ((log->lost && md_ts_cmp(ts, log->lost_ts) < 0) || md_ts_cmp(ts, log->start) < 0) {
      goto lost;
   }
   if (kind == MD_TOKEN_HWM) {
      cs->next_seq = md_oplog_seek_after(log, ts, index);
      return true;
   }
   uint64_t seq = find_entry(log, ts, index);
   if (seq == UINT64_MAX || !stream_produced(cs, md_oplog_at(log, seq), kind)) {
      if (log->lost && md_ts_cmp(ts, log->lost_ts) <= 0) {
         goto lost;
      }
      return tm_error_set(error, 280,
                          "cannot resume stream; the resume token was not found. "
                          "{_data: \"%s\"}",
                          bson_iter_utf8(&sub, NULL));
   }
   if (kind == MD_TOKEN_INVALIDATE && !start_after) {
      return tm_error_set(error, 260,
                          "Attempting to resume a change stream using "
                          "'resumeAfter' is not allowed from an invalidate "
                          "notification.");
   }
   cs->next_seq = seq + 1;
   return true;
lost:
   return tm_error_set(error, 286,
                       "Resume of change stream was not possible, as the resume "
                       "point may no longer be in the oplog.");
}

static bool
seek_time(md_changestream_t *cs, md_oplog_t *log, const bson_iter_t *it, bson_error_t *error)
{
   md_ts_t ts;
   if (!BSON_ITER_HOLDS_TIMESTAMP(it)) {
      return tm_error_set(error, 14,
                          "BSON field '$changeStream.startAtOperationTime' is the "
                          "wrong type, expected type 'timestamp'");
   }
   bson_iter_timestamp(it, &ts.t, &ts.i);
   if ((log->lost && md_ts_cmp(ts, log->lost_ts) <= 0) || md_ts_cmp(ts, log->start) < 0) {
      return tm_error_set(error, 286,
                          "Resume of change stream was not possible, as the resume "
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
         return tm_error_set(error, 40674,
                             "Only one type of resume option is allowed, but "
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
                     const bson_t *spec, const bson_t *rest, md_ts_t *start, bson_error_t *error)
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
      cs->stages = tm_pipeline_new(rest, error);
      if (!cs->stages) {
         md_changestream_destroy(cs);
         return NULL;
      }
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
   return (batch_size > 0 && b->n >= (uint64_t)batch_size) ||
          b->bytes >= MD_MAX_BSON_SIZE - 1024 * 1024;
}

/* Adds the pending invalidate event, if any, through the pipeline. */
static bool
emit_invalidate(md_changestream_t *cs, batch_t *b, int64_t wall_ms, bson_error_t *error)
{
   bson_t *out;
   cs->pending_invalidate = false;
   cs->finished = true;
   if (!md_cs_transform(cs, md_cs_make_invalidate(cs->invalidate_ts, cs->invalidate_index, wall_ms),
                        &out, error)) {
      return false;
   }
   if (out) {
      batch_add(b, out);
   }
   return true;
}

static bool
scan(md_changestream_t *cs, md_oplog_t *log, md_store_t *store, uint64_t visible_seq,
     int64_t batch_size, batch_t *b, bson_error_t *error)
{
   if (cs->pending_invalidate) {
      return emit_invalidate(cs, b, md_now_ms(), error);
   }
   if (cs->next_seq < log->first_seq) {
      return tm_error_set(error, 286,
                          "Resume of change stream was not possible, as the resume "
                          "point may no longer be in the oplog.");
   }
   while (!cs->finished && cs->next_seq < visible_seq && !batch_full(b, batch_size)) {
      md_oplog_entry_t *e = md_oplog_at(log, cs->next_seq++);
      bool invalidates;
      if (md_cs_relevant(cs, e, &invalidates)) {
         bson_t *ev = md_cs_make_event(cs, e, store, error), *out;
         if (!ev || !md_cs_transform(cs, ev, &out, error)) {
            return false;
         }
         if (out) {
            batch_add(b, out);
         }
      }
      if (invalidates) {
         cs->pending_invalidate = true;
         cs->invalidate_ts = e->ts;
         cs->invalidate_index = e->txn_index;
         if (!batch_full(b, batch_size) && !emit_invalidate(cs, b, e->wall_ms, error)) {
            return false;
         }
      }
   }
   return true;
}

/* The high-water mark of a stream that has shown everything visible: the commit point, or
 * where the stream started when that is later (a new stream starts at the newest write). */
static md_ts_t
high_water(const md_changestream_t *cs, const md_oplog_t *log, md_cs_visible_t visible)
{
   const md_oplog_entry_t *e =
      cs->next_seq > visible.seq ? md_oplog_at(log, cs->next_seq - 1) : NULL;
   return e ? e->ts : visible.ts;
}

bool
md_changestream_poll(md_changestream_t *cs, md_oplog_t *log, md_store_t *store,
                     md_cs_visible_t visible, int64_t batch_size, bson_t ***docs, size_t *n,
                     char pbrt[MD_TOKEN_LEN + 1], bson_error_t *error)
{
   batch_t b = {0};
   *docs = NULL;
   *n = 0;
   if (batch_size == 0 && !cs->finished) {
      md_token_format(pbrt, high_water(cs, log, visible), MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
      return true;
   }
   if (!scan(cs, log, store, visible.seq, batch_size, &b, error)) {
      md_docs_free(b.docs, b.n);
      return false;
   }
   bson_iter_t it, sub;
   if (b.n > 0 && bson_iter_init_find(&it, b.docs[b.n - 1], "_id") &&
       bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "_data") &&
       BSON_ITER_HOLDS_UTF8(&sub)) {
      bson_strncpy(pbrt, bson_iter_utf8(&sub, NULL), MD_TOKEN_LEN + 1);
   } else if (cs->next_seq >= visible.seq) {
      md_token_format(pbrt, high_water(cs, log, visible), MD_TOKEN_INDEX_HWM, MD_TOKEN_HWM);
   } else {
      /* Stopped early with nothing to show: resume after the last entry scanned. */
      md_oplog_entry_t *e = md_oplog_at(log, cs->next_seq - 1);
      md_token_format(pbrt, e ? e->ts : log->last, e ? e->txn_index : MD_TOKEN_INDEX_HWM,
                      MD_TOKEN_HWM);
   }
   *docs = b.docs;
   *n = b.n;
   return true;
}
