/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * getMore and killCursors. A change-stream getMore waits up to maxTimeMS (default 1 s) for
 * an event, sleeping on the oplog's condition variable (woken by every write), and returns
 * an empty batch with a fresh postBatchResumeToken when none arrives.
 */
#include <errno.h>
#include <string.h>

#include "commands/commands.h"
#include "changestream/changestream.h"
#include "data/query.h"
#include "topology/replication.h"

static void
reply_stream_batch(md_cmd_t *c, md_cursor_t *cur, const char *batch_name, bson_t **docs, size_t n,
                   const char *pbrt, bool finished)
{
   size_t pos = 0;
   bson_t cursor, batch, token;
   bson_append_document_begin(c->reply, "cursor", 6, &cursor);
   bson_append_array_begin(&cursor, batch_name, -1, &batch);
   for (size_t i = 0; i < n; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      bson_append_document(&batch, k, -1, docs[i]);
   }
   bson_append_array_end(&cursor, &batch);
   BSON_APPEND_INT64(&cursor, "id", finished ? 0 : cur->id);
   BSON_APPEND_UTF8(&cursor, "ns", cur->ns);
   BSON_APPEND_DOCUMENT_BEGIN(&cursor, "postBatchResumeToken", &token);
   BSON_APPEND_UTF8(&token, "_data", pbrt);
   bson_append_document_end(&cursor, &token);
   bson_append_document_end(c->reply, &cursor);
   (void)pos;
}

/* Serves one batch of a change stream, waiting until `deadline_ms` (monotonic) if needed.
 * On error the caller kills the cursor. */
bool md_stream_batch(md_cmd_t *c, md_cursor_t *cur, const char *batch_name, int64_t batch_size,
                     int64_t deadline_ms, bson_error_t *error);

bool
md_stream_batch(md_cmd_t *c, md_cursor_t *cur, const char *batch_name, int64_t batch_size,
                int64_t deadline_ms, bson_error_t *error)
{
   md_server_t *srv = c->srv;
   bson_t **docs = NULL;
   size_t n = 0;
   char pbrt[MD_TOKEN_LEN + 1];
   bool ok;
   cur->in_use = true;
   for (;;) {
      /* Only majority-committed changes, as MongoDB's change streams. */
      int64_t now = md_wall_ms(), next_commit;
      md_cs_visible_t visible;
      md_repl_advance(&srv->topo, &srv->data.oplog, now, &next_commit);
      /* ... as this member knows the commit point and no further than it has applied, as
       * 6.0 reads its own oplog at its committed snapshot (an isolated one: nothing new). */
      visible.seq = md_repl_member_commit(&srv->topo, c->conn->member);
      visible.ts = md_repl_seq_ts(&srv->data.oplog, visible.seq);
      ok = md_changestream_poll(cur->cs, &srv->data.oplog, srv->data.store, visible, batch_size,
                                &docs, &n, pbrt, error);
      if (!ok || n > 0 || md_changestream_finished(cur->cs) || cur->killed ||
          atomic_load(&srv->stopping) || md_now_ms() >= deadline_ms) {
         break;
      }
      md_docs_free(docs, n);
      docs = NULL;
      /* Wake for a write, or when a lagging secondary moves the commit point. */
      int64_t until = next_commit == INT64_MAX ? deadline_ms : md_now_ms() + (next_commit - now);
      md_oplog_wait(&srv->data.oplog, &srv->data.lock, until < deadline_ms ? until : deadline_ms);
   }
   cur->in_use = false;
   if (ok && cur->rolled_back) {
      /* 6.0 kills the operations running on a member that enters ROLLBACK and closes
       * their connections (its jstest "find and getMore commands fail correctly during
       * rollback"): the driver sees a network error and resumes. */
      c->close_connection = true;
      ok = tm_error_set(error, 11602, "operation was interrupted");
   } else if (ok && cur->killed) {
      ok = tm_error_set(error, 237, "cursor was killed while a getMore waited");
   }
   if (ok) {
      reply_stream_batch(c, cur, batch_name, docs, n, pbrt, md_changestream_finished(cur->cs));
   }
   md_docs_free(docs, n);
   return ok;
}

static bool
parse_get_more(md_cmd_t *c, int64_t *id, const char **coll, int64_t *batch_size,
               int64_t *max_time_ms, bson_error_t *error)
{
   static const char *const allowed[] = {"collection", "batchSize", "term",
                                         "lastKnownCommittedOpTime", NULL};
   bson_iter_t it;
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   if (!BSON_ITER_HOLDS_INT64(&it)) {
      return tm_error_set(error, 14,
                          "BSON field 'getMore.getMore' is the wrong type '%s', "
                          "expected type 'long'",
                          BSON_ITER_HOLDS_INT32(&it) ? "int" : "other");
   }
   *id = bson_iter_int64(&it);
   if (!md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "collection") || !BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 40414,
                          "BSON field 'getMore.collection' is missing but a "
                          "required field");
   }
   *coll = bson_iter_utf8(&it, NULL);
   return md_cmd_get_int64(c->cmd, "batchSize", batch_size, error) &&
          md_cmd_get_int64(c->cmd, "maxTimeMS", max_time_ms, error);
}

/* failGetMoreAfterCursorCheckout. Returns false if the getMore must fail. */
static bool
checkout_failpoint(md_cmd_t *c, md_cursor_t *cur, bson_error_t *error)
{
   md_fp_action_t fp;
   md_failpoint_check_getmore(&c->srv->failpoints, &fp);
   if (!fp.hit) {
      return true;
   }
   if (fp.close_connection) {
      c->close_connection = true;
      return false;
   }
   int32_t code = fp.code ? fp.code : 1;
   tm_error_set(error, code, "Failing getMore via 'failGetMoreAfterCursorCheckout' failpoint");
   if (cur->cs && md_changestream_is_resumable_code(code)) {
      md_cmd_add_label(c, "ResumableChangeStreamError");
   }
   return false;
}

/* A cursor opened in a transaction is read in that transaction only (getmore_cmd.cpp). */
static bool
same_transaction(const md_cmd_t *c, const md_cursor_t *cur, int64_t id, bson_error_t *error)
{
   const md_txn_t *owner = cur->owner;
   if (c->txn && !owner) {
      return tm_error_set(error, 50739,
                          "Cannot run getMore on cursor %lld, which was not "
                          "created in a transaction, in transaction %lld",
                          (long long)id, (long long)c->txn->number);
   }
   if (!c->txn && owner) {
      return tm_error_set(error, 50740,
                          "Cannot run getMore on cursor %lld, which was created "
                          "in transaction %lld, without a txnNumber",
                          (long long)id, (long long)owner->number);
   }
   if (c->txn && owner != c->txn) {
      return tm_error_set(error, 50741,
                          "Cannot run getMore on cursor %lld, which was created "
                          "in transaction %lld, in transaction %lld",
                          (long long)id, (long long)owner->number, (long long)c->txn->number);
   }
   return true;
}

/* (NonResumableChangeStreamError on 280 and 286 is added for every command in commands.c.) */
static void
add_stream_error_label(md_cmd_t *c, int32_t code)
{
   if (md_changestream_is_resumable_code(code)) {
      md_cmd_add_label(c, "ResumableChangeStreamError");
   }
}

bool
md_cmd_get_more(md_cmd_t *c, bson_error_t *error)
{
   int64_t id = 0, batch_size = 0, max_time_ms = -1;
   const char *coll = NULL;
   if (!parse_get_more(c, &id, &coll, &batch_size, &max_time_ms, error)) {
      return false;
   }
   md_cursor_t *cur = md_cursor_get(&c->srv->data.cursors, id);
   char *ns = bson_strdup_printf("%s.%s", c->db, coll);
   bool same_ns = cur && strcmp(cur->ns, ns) == 0;
   bson_free(ns);
   if (!cur || cur->in_use) {
      return tm_error_set(error, cur ? 2 : 43,
                          cur ? "cursor %lld is already in use" : "cursor id %lld not found",
                          (long long)id);
   }
   if (!same_ns) {
      return tm_error_set(error, 13,
                          "Requested getMore on namespace '%s.%s', but cursor "
                          "belongs to a different namespace %s",
                          c->db, coll, cur->ns);
   }
   if (!same_transaction(c, cur, id, error)) {
      return false;
   }
   if (cur->rolled_back) {
      /* Its member rolled back since the last batch: 175 QueryPlanKilled, as mongod
       * answers such a getMore (the jstest "getMore on a change stream cursor returns an
       * error classified as resumable ... upon primary node rollback" needs 8.1: the
       * ResumableChangeStreamError label came then, so 6.0's error has none). */
      md_cursor_free(&c->srv->data.cursors, cur);
      return tm_error_set(error, 175,
                          "PlanExecutor error during getMore :: caused by :: "
                          "the change stream's member rolled back");
   }
   cur->last_used_ms = md_now_ms();
   if (!checkout_failpoint(c, cur, error)) {
      md_cursor_free(&c->srv->data.cursors, cur);
      return false;
   }
   if (!cur->cs) {
      bool done = md_cursor_reply(c->reply, "nextBatch", cur->ns, cur->docs, cur->n_docs, &cur->pos,
                                  batch_size > 0 ? batch_size : -1, cur->id);
      if (done) {
         md_cursor_free(&c->srv->data.cursors, cur);
      }
      return true;
   }
   int64_t deadline = md_now_ms() + (max_time_ms >= 0 ? max_time_ms : 1000);
   bool ok =
      md_stream_batch(c, cur, "nextBatch", batch_size > 0 ? batch_size : -1, deadline, error);
   if (!ok) {
      add_stream_error_label(c, (int32_t)error->code);
   }
   if (!ok || cur->killed || md_changestream_finished(cur->cs)) {
      md_cursor_free(&c->srv->data.cursors, cur);
   }
   return ok;
}

static void
append_ids(bson_t *reply, const char *name, const int64_t *ids, uint32_t n)
{
   bson_t arr;
   bson_append_array_begin(reply, name, -1, &arr);
   for (uint32_t i = 0; i < n; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string(i, &k, key, sizeof key);
      bson_append_int64(&arr, k, -1, ids[i]);
   }
   bson_append_array_end(reply, &arr);
}

bool
md_cmd_kill_cursors(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"cursors", NULL};
   bson_iter_t it, arr;
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   /* No namespace check: database and cluster change streams live on "$cmd.aggregate". */
   if (!BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 14, "killCursors takes a collection name");
   }
   if (!md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "cursors") || !BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 40414,
                          "BSON field 'killCursors.cursors' is missing but a "
                          "required field");
   }
   int64_t killed[256], not_found[256];
   uint32_t n_killed = 0, n_not_found = 0;
   bson_iter_recurse(&it, &arr);
   while (bson_iter_next(&arr)) {
      if (!BSON_ITER_HOLDS_INT64(&arr)) {
         return tm_error_set(error, 14, "BSON field 'killCursors.cursors' must hold longs");
      }
      int64_t id = bson_iter_int64(&arr);
      md_cursor_t *cur = md_cursor_get(&c->srv->data.cursors, id);
      if (cur && cur->in_use) {
         cur->killed = true; /* the waiting getMore frees it */
         md_oplog_wake(&c->srv->data.oplog);
      } else if (cur) {
         md_cursor_free(&c->srv->data.cursors, cur);
      }
      if (cur && n_killed < 256) {
         killed[n_killed++] = id;
      } else if (!cur && n_not_found < 256) {
         not_found[n_not_found++] = id;
      }
   }
   append_ids(c->reply, "cursorsKilled", killed, n_killed);
   append_ids(c->reply, "cursorsNotFound", not_found, n_not_found);
   append_ids(c->reply, "cursorsAlive", NULL, 0);
   append_ids(c->reply, "cursorsUnknown", NULL, 0);
   return true;
}
