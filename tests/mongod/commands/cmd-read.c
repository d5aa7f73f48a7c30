/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * find, getMore, killCursors, count and distinct. Query results are materialised when the
 * query runs (a snapshot), then served in batches by a cursor.
 */
#include <stdlib.h>
#include <string.h>

#include "commands/commands.h"
#include "changestream/changestream.h"
#include "data/keyenc.h"
#include "data/query.h"

typedef struct {
   bson_t filter, sort, projection;
   bool has_sort, has_projection;
   int64_t skip, limit, batch_size;
   bool single_batch;
   const md_index_t *hint;
} find_opts_t;

static bool
reject_true(const bson_t *cmd, const char *field, bson_error_t *error)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, cmd, field) && bson_iter_as_bool(&it)) {
      return tm_error_set(error, 2, "find option '%s' is not supported by test-mongod", field);
   }
   return true;
}

static bool
parse_find(const md_cmd_t *c, find_opts_t *f, bson_error_t *error)
{
   static const char *const allowed[] = {"filter",
                                         "sort",
                                         "projection",
                                         "hint",
                                         "skip",
                                         "limit",
                                         "batchSize",
                                         "singleBatch",
                                         "max",
                                         "min",
                                         "returnKey",
                                         "showRecordId",
                                         "tailable",
                                         "oplogReplay",
                                         "noCursorTimeout",
                                         "awaitData",
                                         "allowPartialResults",
                                         "collation",
                                         "allowDiskUse",
                                         "let",
                                         "readOnce",
                                         NULL};
   bool found;
   bson_iter_t it;
   memset(f, 0, sizeof *f);
   f->batch_size = 101;
   if (!md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "filter", &f->filter, &found, error) ||
       !md_cmd_get_doc(c->cmd, "sort", &f->sort, &f->has_sort, error) ||
       !md_cmd_get_doc(c->cmd, "projection", &f->projection, &f->has_projection, error) ||
       !md_cmd_get_int64(c->cmd, "skip", &f->skip, error) ||
       !md_cmd_get_int64(c->cmd, "limit", &f->limit, error) ||
       !md_cmd_get_int64(c->cmd, "batchSize", &f->batch_size, error) ||
       !reject_true(c->cmd, "tailable", error) || !reject_true(c->cmd, "awaitData", error) ||
       !reject_true(c->cmd, "returnKey", error) || !reject_true(c->cmd, "showRecordId", error) ||
       !md_check_collation(c->cmd, error)) {
      return false;
   }
   if (bson_has_field(c->cmd, "min") || bson_has_field(c->cmd, "max")) {
      return tm_error_set(error, 2, "find options 'min'/'max' are not supported by test-mongod");
   }
   if (f->skip < 0 || f->limit < 0 || f->batch_size < 0) {
      return tm_error_set(error, 51024, "BSON field '%s' value must be >= 0, actual value '%d'",
                          f->skip < 0    ? "skip"
                          : f->limit < 0 ? "limit"
                                         : "batchSize",
                          (int)(f->skip < 0    ? f->skip
                                : f->limit < 0 ? f->limit
                                               : f->batch_size));
   }
   f->single_batch = bson_iter_init_find(&it, c->cmd, "singleBatch") && bson_iter_as_bool(&it);
   return true;
}

/* Runs the query and returns copies of the result documents. */
static bool
run_find(md_coll_t *coll, const find_opts_t *f, bson_t ***docs, size_t *n, bson_error_t *error)
{
   tm_matcher_t *m = tm_matcher_new(&f->filter, error);
   tm_sort_t *sort = m && f->has_sort ? tm_sort_new(&f->sort, error) : NULL;
   tm_projection_t *proj = m && f->has_projection && !bson_empty(&f->projection)
                              ? tm_projection_new(&f->projection, error)
                              : NULL;
   bool ok =
      m && (!f->has_sort || sort) && (!f->has_projection || bson_empty(&f->projection) || proj);
   *docs = NULL;
   *n = 0;
   if (ok) {
      md_selection_t sel;
      /* Without a sort, stop scanning once skip + limit documents matched. */
      size_t want = (!sort && f->limit > 0) ? (size_t)(f->skip + f->limit) : 0;
      md_select(coll, f->hint, m, &f->filter, want, &sel);
      md_selection_sort(&sel, sort);
      size_t first = (size_t)f->skip < sel.n ? (size_t)f->skip : sel.n;
      size_t count = sel.n - first;
      if (f->limit > 0 && (size_t)f->limit < count) {
         count = (size_t)f->limit;
      }
      *docs = malloc((count ? count : 1) * sizeof **docs);
      for (size_t i = 0; i < count; i++) {
         const bson_t *src = sel.docs[first + i]->bson;
         if (proj) {
            bson_t tmp;
            tm_projection_apply(proj, src, &tmp);
            (*docs)[i] = bson_copy(&tmp);
            bson_destroy(&tmp);
         } else {
            (*docs)[i] = bson_copy(src);
         }
      }
      *n = count;
      md_selection_destroy(&sel);
   }
   tm_projection_destroy(proj);
   tm_sort_destroy(sort);
   tm_matcher_destroy(m);
   return ok;
}

/* Replies with a first batch and keeps a cursor for the rest. Takes `docs`. */
void md_reply_first_batch(md_cmd_t *c, const char *ns, bson_t **docs, size_t n, int64_t batch_size,
                          bool single_batch);

void
md_reply_first_batch(md_cmd_t *c, const char *ns, bson_t **docs, size_t n, int64_t batch_size,
                     bool single_batch)
{
   md_cursor_t *cur = md_cursor_new(&c->srv->data.cursors, ns, docs, n, 0, NULL);
   cur->owner = c->txn; /* a transaction's cursor dies with it */
   bool done = md_cursor_reply(c->reply, "firstBatch", ns, docs, n, &cur->pos, batch_size,
                               single_batch ? 0 : cur->id);
   if (done || single_batch) {
      md_cursor_free(&c->srv->data.cursors, cur);
   }
}

bool
md_cmd_find(md_cmd_t *c, bson_error_t *error)
{
   find_opts_t f;
   bson_t **docs;
   size_t n;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !parse_find(c, &f, error)) {
      return false;
   }
   md_coll_t *coll, *snapshot;
   if (!md_read_coll(c, name, &coll, &snapshot, error)) {
      return false;
   }
   bool ok = (snapshot || md_check_hint(coll, c->cmd, &f.hint, error)) &&
             run_find(coll, &f, &docs, &n, error);
   md_coll_snapshot_free(snapshot);
   if (!ok) {
      return false;
   }
   char *ns = bson_strdup_printf("%s.%s", c->db, name);
   bool single = f.single_batch || (f.limit > 0 && f.batch_size >= f.limit);
   md_reply_first_batch(c, ns, docs, n, f.batch_size, single);
   bson_free(ns);
   return true;
}
