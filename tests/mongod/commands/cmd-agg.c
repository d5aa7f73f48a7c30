/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * aggregate (pipelines through the engine, and $changeStream), count and distinct.
 */
#include <stdlib.h>
#include <string.h>

#include "commands/commands.h"
#include "changestream/changestream.h"
#include "data/keyenc.h"
#include "data/query.h"

void md_reply_first_batch(md_cmd_t *c, const char *ns, bson_t **docs, size_t n, int64_t batch_size,
                          bool single_batch);
bool md_stream_batch(md_cmd_t *c, md_cursor_t *cur, const char *batch_name, int64_t batch_size,
                     int64_t deadline_ms, bson_error_t *error);

typedef struct {
   bson_t pipeline;
   int64_t batch_size;
   const char *coll; /* NULL for {aggregate: 1} */
} agg_t;

static bool
parse_agg(const md_cmd_t *c, agg_t *a, bson_error_t *error)
{
   static const char *const allowed[] = {
      "pipeline",   "cursor",     "explain", "allowDiskUse",
      "hint",       "collation",  "let",     "bypassDocumentValidation",
      "fromMongos", "needsMerge", NULL};
   bson_iter_t it;
   bson_t cursor;
   bool has_cursor;
   memset(a, 0, sizeof *a);
   a->batch_size = 101;
   bson_iter_init(&it, c->cmd);
   bson_iter_next(&it);
   if (BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) == 1) {
      a->coll = NULL;
   } else if (!(a->coll = md_cmd_coll_name(c, error))) {
      return false;
   }
   if (!md_cmd_check_fields(c, allowed, error) || !md_check_collation(c->cmd, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "pipeline") || !BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 14, "'pipeline' option must be specified as an array");
   }
   uint32_t len;
   const uint8_t *data;
   bson_iter_array(&it, &len, &data);
   bson_init_static(&a->pipeline, data, len);
   if (bson_iter_init_find(&it, c->cmd, "explain") && bson_iter_as_bool(&it)) {
      return tm_error_set(error, 2,
                          "aggregate option 'explain' is not supported by "
                          "test-mongod");
   }
   if (!md_cmd_get_doc(c->cmd, "cursor", &cursor, &has_cursor, error)) {
      return false;
   }
   if (!has_cursor) {
      return tm_error_set(error, 9,
                          "The 'cursor' option is required, except for aggregate "
                          "with the explain argument");
   }
   return md_cmd_get_int64(&cursor, "batchSize", &a->batch_size, error);
}

/* Splits the pipeline into the $changeStream stage (if first) and the rest. */
static bool
split_change_stream(const bson_t *pipeline, bson_t *spec, bool *is_stream, bson_t *rest,
                    bson_error_t *error)
{
   bson_iter_t it, stage;
   uint32_t i = 0, n_rest = 0;
   *is_stream = false;
   bson_init(rest);
   bson_iter_init(&it, pipeline);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &stage) ||
          !bson_iter_next(&stage)) {
         return tm_error_set(error, 14,
                             "Each element of the 'pipeline' array must be an "
                             "object");
      }
      bool cs = strcmp(bson_iter_key(&stage), "$changeStream") == 0;
      if (cs && i > 0) {
         return tm_error_set(error, 40602,
                             "$changeStream is only valid as the first stage in "
                             "a pipeline");
      }
      if (cs) {
         uint32_t len;
         const uint8_t *data;
         if (!BSON_ITER_HOLDS_DOCUMENT(&stage)) {
            return tm_error_set(error, 50808,
                                "$changeStream stage expects a document as "
                                "argument");
         }
         bson_iter_document(&stage, &len, &data);
         bson_init_static(spec, data, len);
         *is_stream = true;
      } else {
         char key[16];
         const char *k;
         bson_uint32_to_string(n_rest++, &k, key, sizeof key);
         bson_append_value(rest, k, -1, bson_iter_value(&it));
      }
      i++;
   }
   return true;
}

static bool
check_stream_stages(const bson_t *rest, bson_error_t *error)
{
   static const char *const ok_stages[] = {"$match",       "$project", "$addFields",
                                           "$set",         "$unset",   "$replaceRoot",
                                           "$replaceWith", "$redact",  NULL};
   bson_iter_t it, stage;
   bson_iter_init(&it, rest);
   while (bson_iter_next(&it)) {
      bson_iter_recurse(&it, &stage);
      bson_iter_next(&stage);
      bool ok = false;
      for (int i = 0; ok_stages[i]; i++) {
         ok = ok || strcmp(bson_iter_key(&stage), ok_stages[i]) == 0;
      }
      if (!ok && bson_iter_key(&stage)[0] == '$' && strcmp(bson_iter_key(&stage), "$group") != 0 &&
          strcmp(bson_iter_key(&stage), "$sort") != 0 &&
          strcmp(bson_iter_key(&stage), "$limit") != 0 &&
          strcmp(bson_iter_key(&stage), "$skip") != 0 &&
          strcmp(bson_iter_key(&stage), "$count") != 0 &&
          strcmp(bson_iter_key(&stage), "$unwind") != 0) {
         return tm_error_set(error, 40324, "Unrecognized pipeline stage name: '%s'",
                             bson_iter_key(&stage));
      }
      if (!ok) {
         return tm_error_set(error, 5491300, "%s is not permitted in a $changeStream pipeline",
                             bson_iter_key(&stage));
      }
   }
   return true;
}

static bool
open_stream(md_cmd_t *c, const agg_t *a, const bson_t *spec, const bson_t *rest,
            bson_error_t *error)
{
   bool cluster = !a->coll && strcmp(c->db, "admin") == 0;
   if (a->coll && (strcmp(c->db, "admin") == 0 || strcmp(c->db, "config") == 0 ||
                   strcmp(c->db, "local") == 0)) {
      return tm_error_set(error, 73,
                          "$changeStream may not be opened on the internal %s "
                          "database",
                          c->db);
   }
   bson_t **none = NULL;
   size_t n_none = 0;
   /* Parse the user's stages now: a bad one fails the aggregate, not a later getMore. */
   if (!check_stream_stages(rest, error) ||
       !tm_pipeline_run(rest, NULL, 0, &none, &n_none, error)) {
      return false;
   }
   tm_docs_free(none, n_none);
   md_ts_t start;
   md_changestream_t *cs =
      md_changestream_open(&c->srv->data.oplog, c->db, a->coll, cluster, spec, rest, &start, error);
   if (!cs) {
      return false;
   }
   char *ns = a->coll ? bson_strdup_printf("%s.%s", c->db, a->coll)
                      : bson_strdup_printf("%s.$cmd.aggregate", c->db);
   md_cursor_t *cur = md_cursor_new(&c->srv->data.cursors, ns, NULL, 0, 0, cs);
   cur->member = c->conn->member; /* a rollback of this member kills it */
   bson_free(ns);
   c->has_op_time = true;
   c->op_time = start;
   /* The first batch never waits. */
   bool ok = md_stream_batch(c, cur, "firstBatch", a->batch_size, 0, error);
   if (!ok || md_changestream_finished(cs)) {
      md_cursor_free(&c->srv->data.cursors, cur);
   }
   return ok;
}

/* $lookup's view of the database's other collections, as the command sees them (through its
 * transaction, if any; the lock is held throughout). */
static bool
read_collection(void *ctx, const char *name, bson_t ***docs, size_t *n, bson_error_t *error)
{
   md_cmd_t *c = ctx;
   md_coll_t *coll;
   *n = 0;
   *docs = NULL;
   if (!md_cmd_coll(c, name, 0, &coll, NULL, error)) {
      return false;
   }
   if (coll && coll->view_on) {
      return tm_error_set(error, 2,
                          "$lookup from a view (%s.%s) is not supported by "
                          "test-mongod",
                          c->db, name);
   }
   *docs = bson_malloc(((coll ? coll->count : 0) + 1) * sizeof(bson_t *));
   for (md_doc_t *d = coll ? coll->head : NULL; d; d = d->next) {
      (*docs)[(*n)++] = d->bson;
   }
   return true;
}

bool
md_cmd_aggregate(md_cmd_t *c, bson_error_t *error)
{
   agg_t a;
   bson_t spec, rest;
   bool is_stream;
   if (!parse_agg(c, &a, error)) {
      return false;
   }
   if (!split_change_stream(&a.pipeline, &spec, &is_stream, &rest, error)) {
      bson_destroy(&rest);
      return false;
   }
   if (is_stream && c->txn) {
      bson_destroy(&rest);
      return tm_error_set(error, 263,
                          "Operation not permitted in transaction :: caused by :: "
                          "$changeStream cannot run within a multi-document "
                          "transaction");
   }
   if (is_stream && c->srv->opts.standalone) {
      bson_destroy(&rest);
      /* r6.0 src/mongo/db/pipeline/document_source_change_stream.cpp, assertValid...() */
      return tm_error_set(error, 40573,
                          "The $changeStream stage is only supported on replica sets");
   }
   if (is_stream) {
      bool ok = open_stream(c, &a, &spec, &rest, error);
      bson_destroy(&rest);
      return ok;
   }
   bson_destroy(&rest);
   if (!a.coll) {
      return tm_error_set(error, 73,
                          "{aggregate: 1} is not valid for this pipeline; a "
                          "collection is required.");
   }
   md_coll_t *coll, *snapshot;
   if (!md_read_coll(c, a.coll, &coll, &snapshot, error)) {
      return false;
   }
   const md_index_t *hint = NULL;
   if (!snapshot && !md_check_hint(coll, c->cmd, &hint, error)) {
      return false;
   }
   size_t n_in = 0;
   bson_t **in = malloc((coll && coll->count ? coll->count : 1) * sizeof *in);
   for (md_doc_t *d = coll ? coll->head : NULL; d; d = d->next) {
      if (!hint || md_index_contains(hint, d->bson)) {
         in[n_in++] = d->bson;
      }
   }
   bson_t **out = NULL;
   size_t n_out = 0;
   bson_t let;
   bool has_let;
   tm_pipeline_t *p = md_cmd_get_doc(c->cmd, "let", &let, &has_let, error)
                         ? tm_pipeline_new_let(&a.pipeline, has_let ? &let : NULL, error)
                         : NULL;
   bool ok = p && tm_pipeline_exec_env(p, read_collection, c, in, n_in, &out, &n_out, error);
   tm_pipeline_destroy(p);
   free(in);
   md_coll_snapshot_free(snapshot);
   if (ok) {
      /* The engine allocates with bson_new, which md_docs_free handles too. */
      char *ns = bson_strdup_printf("%s.%s", c->db, a.coll);
      md_reply_first_batch(c, ns, out, n_out, a.batch_size, false);
      bson_free(ns);
   }
   return ok;
}

bool
md_cmd_count(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"query",     "limit",  "skip", "hint",
                                         "collation", "fields", NULL};
   bson_t query;
   bool found;
   int64_t limit = 0, skip = 0;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "query", &query, &found, error) ||
       !md_cmd_get_int64(c->cmd, "limit", &limit, error) ||
       !md_cmd_get_int64(c->cmd, "skip", &skip, error) || !md_check_collation(c->cmd, error)) {
      return false;
   }
   md_coll_t *coll, *snapshot;
   if (!md_read_coll(c, name, &coll, &snapshot, error)) {
      return false;
   }
   const md_index_t *hint = NULL;
   if (!snapshot && !md_check_hint(coll, c->cmd, &hint, error)) {
      return false;
   }
   int64_t n = 0;
   if (coll && bson_empty(&query) && !hint) {
      n = (int64_t)coll->count;
   } else if (coll) {
      tm_matcher_t *m = tm_matcher_new(&query, error);
      if (!m) {
         md_coll_snapshot_free(snapshot);
         return false;
      }
      md_selection_t sel;
      md_select(coll, hint, m, &query, 0, &sel);
      n = (int64_t)sel.n;
      md_selection_destroy(&sel);
      tm_matcher_destroy(m);
   }
   md_coll_snapshot_free(snapshot);
   n = skip > 0 ? (n > skip ? n - skip : 0) : n;
   if (limit != 0) {
      int64_t l = limit < 0 ? -limit : limit;
      n = n < l ? n : l;
   }
   BSON_APPEND_INT32(c->reply, "n", (int32_t)n);
   return true;
}

static void
add_distinct(md_hmap_t *seen, bson_t *arr, uint32_t *n, const bson_value_t *v)
{
   bson_string_t *k = bson_string_new(NULL);
   md_keyenc_append(k, v);
   if (!md_hmap_get(seen, k->str, k->len)) {
      char key[16];
      const char *ks;
      md_hmap_put(seen, k->str, k->len, (void *)1);
      bson_uint32_to_string((*n)++, &ks, key, sizeof key);
      bson_append_value(arr, ks, -1, v);
   }
   bson_string_free(k, true);
}

/* Adds the values at dotted `path` below `v` as distinct does: documents inside arrays on
 * the way are descended into, and an array at the end is unwound one level. */
static void
distinct_values(md_hmap_t *seen, bson_t *arr, uint32_t *n, const bson_value_t *v, const char *path)
{
   bson_iter_t it;
   if (!*path) {
      if (v->value_type == BSON_TYPE_ARRAY &&
          bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len)) {
         while (bson_iter_next(&it)) {
            add_distinct(seen, arr, n, bson_iter_value(&it));
         }
      } else {
         add_distinct(seen, arr, n, v);
      }
      return;
   }
   if (v->value_type == BSON_TYPE_ARRAY &&
       bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len)) {
      while (bson_iter_next(&it)) {
         if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
            distinct_values(seen, arr, n, bson_iter_value(&it), path);
         }
      }
      return;
   }
   if (v->value_type != BSON_TYPE_DOCUMENT ||
       !bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len)) {
      return;
   }
   const char *dot = strchr(path, '.');
   size_t len = dot ? (size_t)(dot - path) : strlen(path);
   if (bson_iter_find_w_len(&it, path, (int)len)) {
      distinct_values(seen, arr, n, bson_iter_value(&it), dot ? dot + 1 : "");
   }
}

bool
md_cmd_distinct(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"key", "query", "collation", "hint", NULL};
   bson_t query, values;
   bson_iter_t it;
   bool found;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "query", &query, &found, error) ||
       !md_check_collation(c->cmd, error)) {
      return false;
   }
   if (!bson_iter_init_find(&it, c->cmd, "key") || !BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 40414,
                          "BSON field 'distinct.key' is missing but a required "
                          "field");
   }
   const char *key = bson_iter_utf8(&it, NULL);
   md_coll_t *coll, *snapshot;
   if (!md_read_coll(c, name, &coll, &snapshot, error)) {
      return false;
   }
   const md_index_t *hint = NULL;
   tm_matcher_t *m = NULL;
   if ((!snapshot && !md_check_hint(coll, c->cmd, &hint, error)) ||
       !(m = tm_matcher_new(&query, error))) {
      md_coll_snapshot_free(snapshot);
      return false;
   }
   md_selection_t sel;
   md_select(coll, hint, m, &query, 0, &sel);
   md_hmap_t *seen = md_hmap_new();
   uint32_t n = 0;
   BSON_APPEND_ARRAY_BEGIN(c->reply, "values", &values);
   for (size_t i = 0; i < sel.n; i++) {
      const bson_t *doc = sel.docs[i]->bson;
      bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
      v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
      v.value.v_doc.data_len = doc->len;
      distinct_values(seen, &values, &n, &v, key);
   }
   bson_append_array_end(c->reply, &values);
   md_hmap_destroy(seen);
   md_selection_destroy(&sel);
   md_coll_snapshot_free(snapshot);
   tm_matcher_destroy(m);
   return true;
}
