/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change streams through mongos: one stream per shard, merged in cluster-time order as 6.0's
 * mongos merges them (src/mongo/db/pipeline/document_source_merge_cursors.cpp with the
 * AsyncResultsMerger's high-water marks, src/mongo/s/query/async_results_merger.cpp): a
 * change is handed out only once every shard's postBatchResumeToken has passed its time, so
 * an idle shard holds the stream back until its periodic no-op moves its clock. A merged
 * token is the shard's token and two hex digits naming the shard (the tie-break between
 * shards at one cluster time); resuming from one opens every shard at its cluster time and
 * drops what sorts at or before it. The list of streams is guarded by the router's lock; a
 * stream in use by a getMore is marked and belongs to that thread.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/cursor.h"
#include "shard/router-private.h"

struct _md_mstream_t {
   int64_t id;
   char *ns; /* as the client sees it */
   char *db;
   int64_t cursor[MD_MAX_SHARDS];   /* the shard's stream (0: closed) */
   char *shard_coll[MD_MAX_SHARDS]; /* its getMore collection */
   bson_t **buf[MD_MAX_SHARDS];     /* events taken from the shard, not yet handed out */
   size_t n_buf[MD_MAX_SHARDS], pos[MD_MAX_SHARDS];
   char hwm[MD_MAX_SHARDS][MD_TOKEN_LEN + 1]; /* the shard's last postBatchResumeToken */
   char skip[MTOKEN_LEN + 1];                 /* resuming: what sorts at or before this was seen */
   char pbrt[MTOKEN_LEN + 1];
   bool in_use, killed, invalidated;
   md_mstream_t *next;
};

static void
mstream_free(md_router_t *r, md_mstream_t *m)
{
   for (int s = 0; s < r->n_shards; s++) {
      if (m->cursor[s]) {
         bson_t cmd, reply, ids;
         bson_init(&cmd);
         BSON_APPEND_UTF8(&cmd, "killCursors", m->shard_coll[s]);
         BSON_APPEND_ARRAY_BEGIN(&cmd, "cursors", &ids);
         BSON_APPEND_INT64(&ids, "0", m->cursor[s]);
         bson_append_array_end(&cmd, &ids);
         BSON_APPEND_UTF8(&cmd, "$db", m->db);
         md_router_call(r, s, &cmd, &reply);
         bson_destroy(&cmd);
         bson_destroy(&reply);
      }
      for (size_t i = m->pos[s]; i < m->n_buf[s]; i++) {
         bson_destroy(m->buf[s][i]);
      }
      free(m->buf[s]);
      bson_free(m->shard_coll[s]);
   }
   bson_free(m->ns);
   bson_free(m->db);
   free(m);
}

/* Takes the events of a shard reply into the stream's buffer and its PBRT as the shard's
 * high-water mark; returns the shard cursor's id. */
static int64_t
take(md_mstream_t *m, int s, const bson_t *reply)
{
   bson_iter_t it, batch;
   const char *hwm = md_token_at(reply, "cursor.postBatchResumeToken");
   if (hwm && strlen(hwm) == MD_TOKEN_LEN) {
      strcpy(m->hwm[s], hwm);
   }
   if (bson_iter_init(&it, reply) &&
       (bson_iter_find_descendant(&it, "cursor.nextBatch", &batch) ||
        (bson_iter_init(&it, reply) &&
         bson_iter_find_descendant(&it, "cursor.firstBatch", &batch))) &&
       bson_iter_recurse(&batch, &batch)) {
      while (bson_iter_next(&batch) && BSON_ITER_HOLDS_DOCUMENT(&batch)) {
         uint32_t len;
         const uint8_t *data;
         bson_iter_document(&batch, &len, &data);
         m->buf[s] = realloc(m->buf[s], (m->n_buf[s] + 1) * sizeof *m->buf[s]);
         m->buf[s][m->n_buf[s]++] = bson_new_from_data(data, len);
      }
   }
   return bson_iter_init(&it, reply) && bson_iter_find_descendant(&it, "cursor.id", &it)
             ? bson_iter_as_int64(&it)
             : 0;
}

/* The smallest high-water mark of the shards still streaming ("" while one has none), or
 * NULL when none is: a shard whose stream ended (its invalidate) cannot precede anything, so
 * what the others buffered goes out. Without this a database dropped on every shard, whose
 * invalidates came in one round, left the merged stream answering empty batches forever
 * (F20 in tests/chaos/FINDINGS.md). */
static const char *
min_hwm(md_router_t *r, const md_mstream_t *m)
{
   const char *min = NULL;
   for (int s = 0; s < r->n_shards; s++) {
      if (m->cursor[s] && (!min || strcmp(m->hwm[s], min) < 0)) {
         min = m->hwm[s];
      }
   }
   return min;
}

/* Every shard's stream ended and all it gave was handed out: the merged cursor ends too. */
static bool
drained(md_router_t *r, const md_mstream_t *m)
{
   for (int s = 0; s < r->n_shards; s++) {
      if (m->cursor[s] || m->pos[s] < m->n_buf[s]) {
         return false;
      }
   }
   return true;
}

/* The shard whose next buffered event sorts first (its token, then the shard), or -1. */
static int
next_shard(md_router_t *r, const md_mstream_t *m, const char **token)
{
   int best = -1;
   for (int s = 0; s < r->n_shards; s++) {
      const char *t = m->pos[s] < m->n_buf[s] ? md_token_at(m->buf[s][m->pos[s]], "_id") : NULL;
      if (t && (best < 0 || strcmp(t, *token) < 0)) {
         best = s;
         *token = t;
      }
   }
   return best;
}

static void
append_event(bson_t *arr, uint32_t *count, const bson_t *event, const char *mtoken)
{
   char key[16];
   const char *k;
   bson_t out, id;
   bson_iter_t it;
   bson_uint32_to_string((*count)++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(arr, k, &out);
   bson_iter_init(&it, event);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "_id") == 0) {
         BSON_APPEND_DOCUMENT_BEGIN(&out, "_id", &id);
         BSON_APPEND_UTF8(&id, "_data", mtoken);
         bson_append_document_end(&out, &id);
      } else {
         bson_append_iter(&out, NULL, 0, &it);
      }
   }
   bson_append_document_end(arr, &out);
}

/* Hands out, in order, the buffered events no shard can still precede. */
static void
release(md_router_t *r, md_mstream_t *m, int64_t batch_size, bson_t *arr, uint32_t *count)
{
   const char *hwm = min_hwm(r, m);
   bool cut = false;
   for (;;) {
      const char *token = NULL;
      int s = next_shard(r, m, &token);
      if (s < 0 || (hwm && strcmp(token, hwm) > 0)) {
         break;
      }
      if (batch_size > 0 && *count >= (uint32_t)batch_size) {
         cut = true;
         break;
      }
      char mtoken[MTOKEN_LEN + 1];
      snprintf(mtoken, sizeof mtoken, "%s%02X", token, (unsigned)s);
      bson_t *event = m->buf[s][m->pos[s]++];
      if (!m->skip[0] || strcmp(mtoken, m->skip) > 0) {
         bson_iter_t it;
         append_event(arr, count, event, mtoken);
         strcpy(m->pbrt, mtoken);
         m->invalidated = bson_iter_init_find(&it, event, "operationType") &&
                          strcmp(bson_iter_utf8(&it, NULL), "invalidate") == 0;
      }
      bson_destroy(event);
      if (m->invalidated) {
         return;
      }
   }
   if (!cut && hwm && hwm[0]) {
      char mark[MTOKEN_LEN + 1];
      snprintf(mark, sizeof mark, "%sFF", hwm);
      if (strcmp(mark, m->pbrt) > 0) {
         strcpy(m->pbrt, mark);
      }
   }
}

/* One round: every open shard stream's available events, without waiting. False (and the
 * shard's error in *reply) when a shard failed. */
static bool
poll_shards(md_router_t *r, md_mstream_t *m, bson_t *reply)
{
   for (int s = 0; s < r->n_shards; s++) {
      if (!m->cursor[s]) {
         continue;
      }
      bson_t cmd, one;
      bson_init(&cmd);
      BSON_APPEND_INT64(&cmd, "getMore", m->cursor[s]);
      BSON_APPEND_UTF8(&cmd, "collection", m->shard_coll[s]);
      BSON_APPEND_INT64(&cmd, "maxTimeMS", 0);
      BSON_APPEND_UTF8(&cmd, "$db", m->db);
      bool ok = md_router_call(r, s, &cmd, &one);
      bson_destroy(&cmd);
      if (!ok) {
         m->cursor[s] = 0;
         bson_copy_to(&one, reply);
         bson_destroy(&one);
         return false;
      }
      m->cursor[s] = take(m, s, &one);
      bson_destroy(&one);
   }
   return true;
}

static void
batch_reply(const md_mstream_t *m, const char *batch_name, const bson_t *arr, bool ended,
            bson_t *reply)
{
   bson_t cursor, token;
   bson_init(reply);
   BSON_APPEND_DOCUMENT_BEGIN(reply, "cursor", &cursor);
   BSON_APPEND_ARRAY(&cursor, batch_name, arr);
   BSON_APPEND_DOCUMENT_BEGIN(&cursor, "postBatchResumeToken", &token);
   BSON_APPEND_UTF8(&token, "_data", m->pbrt);
   bson_append_document_end(&cursor, &token);
   BSON_APPEND_INT64(&cursor, "id", ended ? 0 : m->id);
   BSON_APPEND_UTF8(&cursor, "ns", m->ns);
   bson_append_document_end(reply, &cursor);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
}

/* Opens the stream on every shard (`start`: a new stream's start, or {0, 0}); false with
 * the first error in *reply. */
static bool
open_shards(md_router_t *r, md_mstream_t *m, const bson_t *cmd, const bson_t *spec, md_ts_t start,
            bson_t *reply)
{
   for (int s = 0; s < r->n_shards; s++) {
      bson_t one, shard_sp, sent;
      bson_iter_t it;
      if (!md_mstream_shard_spec(r, spec, s, &shard_sp, m->skip, reply)) {
         return false;
      }
      if (start.t) {
         BSON_APPEND_TIMESTAMP(&shard_sp, "startAtOperationTime", start.t, start.i);
      }
      md_mstream_shard_command(cmd, &shard_sp, &sent);
      bool ok = md_router_call(r, s, &sent, &one);
      bson_destroy(&sent);
      bson_destroy(&shard_sp);
      if (!ok) {
         bson_copy_to(&one, reply);
         bson_destroy(&one);
         return false;
      }
      m->cursor[s] = take(m, s, &one);
      const char *ns = bson_iter_init(&it, &one) && bson_iter_find_descendant(&it, "cursor.ns", &it)
                          ? bson_iter_utf8(&it, NULL)
                          : "";
      const char *dot = strchr(ns, '.');
      m->shard_coll[s] = bson_strdup(dot ? dot + 1 : ns);
      if (!m->ns) {
         m->ns = bson_strdup(ns);
      }
      bson_destroy(&one);
   }
   return true;
}

bool
md_mstream_open(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it, spec_it;
   bson_t spec;
   bson_iter_init_find(&it, cmd, "pipeline");
   bson_iter_recurse(&it, &spec_it);
   bson_iter_next(&spec_it);
   bson_iter_recurse(&spec_it, &spec_it);
   bson_iter_next(&spec_it);
   if (!BSON_ITER_HOLDS_DOCUMENT(&spec_it)) {
      return md_router_error(r, reply, 50808,
                             "$changeStream stage expects a document as "
                             "argument");
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&spec_it, &len, &data);
   bson_init_static(&spec, data, len);
   md_mstream_t *m = calloc(1, sizeof *m);
   m->db = bson_strdup(bson_iter_init_find(&it, cmd, "$db") ? bson_iter_utf8(&it, NULL) : "");
   md_ts_t start = {0, 0};
   if (!md_mstream_has_start(&spec)) {
      start = md_mstream_start_new(r, m->pbrt);
   }
   if (!open_shards(r, m, cmd, &spec, start, reply)) {
      mstream_free(r, m);
      return true;
   }
   if (!m->pbrt[0]) {
      strcpy(m->pbrt, m->skip);
   }
   bson_t arr = BSON_INITIALIZER;
   uint32_t count = 0;
   release(r, m, -1, &arr, &count);
   bool ended = m->invalidated || drained(r, m);
   if (!ended) {
      pthread_mutex_lock(&r->lock);
      m->id = r->next_stream_id++;
      m->next = r->streams;
      r->streams = m;
      pthread_mutex_unlock(&r->lock);
   }
   batch_reply(m, "firstBatch", &arr, ended, reply);
   bson_destroy(&arr);
   if (ended) {
      mstream_free(r, m); /* no getMore or killCursors can name it */
   }
   return true;
}

/* Takes the stream `id` for this getMore (NULL: not a merged stream, or *busy). */
static md_mstream_t *
checkout(md_router_t *r, int64_t id, bool *busy)
{
   pthread_mutex_lock(&r->lock);
   md_mstream_t *m = r->streams;
   while (m && m->id != id) {
      m = m->next;
   }
   *busy = m && (m->in_use || m->killed);
   if (m && !*busy) {
      m->in_use = true;
   }
   pthread_mutex_unlock(&r->lock);
   return m;
}

/* Gives the stream back; frees it when killed meanwhile, or done. */
static void
checkin(md_router_t *r, md_mstream_t *m, bool done)
{
   pthread_mutex_lock(&r->lock);
   m->in_use = false;
   done = done || m->killed;
   if (done) {
      md_mstream_t **p = &r->streams;
      while (*p != m) {
         p = &(*p)->next;
      }
      *p = m->next;
   }
   pthread_mutex_unlock(&r->lock);
   if (done) {
      mstream_free(r, m);
   }
}

bool
md_mstream_get_more(md_router_t *r, const bson_t *cmd, int64_t id, bson_t *reply)
{
   bool busy;
   md_mstream_t *m = checkout(r, id, &busy);
   if (!m) {
      return false;
   }
   if (busy) {
      return md_router_error(r, reply, 2, "cursor %lld is already in use", (long long)id);
   }
   bson_iter_t it;
   int64_t batch_size = bson_iter_init_find(&it, cmd, "batchSize") ? bson_iter_as_int64(&it) : -1;
   int64_t max_ms = bson_iter_init_find(&it, cmd, "maxTimeMS") ? bson_iter_as_int64(&it) : 1000;
   int64_t deadline = md_now_ms() + max_ms;
   bson_t arr = BSON_INITIALIZER;
   uint32_t count = 0;
   bool ok = true, ended = false;
   for (;;) {
      ok = poll_shards(r, m, reply);
      if (!ok) {
         break;
      }
      release(r, m, batch_size, &arr, &count);
      ended = m->invalidated || drained(r, m);
      if (count > 0 || ended || md_now_ms() >= deadline) {
         break;
      }
      /* Shards are asked again every 20 ms: their getMores do not wait here. */
      struct timespec pause = {0, 20 * 1000 * 1000};
      nanosleep(&pause, NULL);
   }
   if (ok) {
      batch_reply(m, "nextBatch", &arr, ended, reply);
   }
   bson_destroy(&arr);
   checkin(r, m, !ok || ended);
   return true;
}

bool
md_mstream_owns(md_router_t *r, int64_t id)
{
   pthread_mutex_lock(&r->lock);
   md_mstream_t *m = r->streams;
   while (m && m->id != id) {
      m = m->next;
   }
   pthread_mutex_unlock(&r->lock);
   return m != NULL;
}

bool
md_mstream_kill(md_router_t *r, int64_t id)
{
   pthread_mutex_lock(&r->lock);
   md_mstream_t **p = &r->streams;
   while (*p && (*p)->id != id) {
      p = &(*p)->next;
   }
   md_mstream_t *m = *p;
   bool found = m != NULL;
   if (m && m->in_use) {
      m->killed = true; /* its getMore frees it */
      m = NULL;
   } else if (m) {
      *p = m->next;
   }
   pthread_mutex_unlock(&r->lock);
   if (m) {
      mstream_free(r, m);
   }
   return found;
}

void
md_mstream_destroy_all(md_router_t *r)
{
   while (r->streams) {
      md_mstream_t *m = r->streams;
      r->streams = m->next;
      mstream_free(r, m);
   }
}
