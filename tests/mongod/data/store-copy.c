/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Collections outside the store: a view's contents materialised for one read, and a
 * transaction's private copy of a collection (txn.h). Also the view definition itself.
 * Callers hold the server lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/store.h"

void
md_coll_make_view(md_coll_t *coll, const char *view_on, const bson_t *pipeline)
{
   md_store_notify_catalog(coll->db, coll->name, coll);
   coll->view_on = strdup(view_on);
   coll->view_pipeline = bson_copy(pipeline);
}

void
md_coll_set_options(md_coll_t *coll, bson_t *options)
{
   md_store_notify_catalog(coll->db, coll->name, coll);
   bson_destroy(coll->options);
   coll->options = options;
}

void
md_coll_snapshot_free(md_coll_t *snapshot)
{
   if (snapshot) {
      md_coll_free_detached(snapshot);
   }
}

md_coll_t *
md_view_snapshot(md_coll_resolver_t resolve, void *ctx, const md_coll_t *view, bson_error_t *error)
{
   /* Views may be defined on views: collect the chain down to a collection. */
   const md_coll_t *chain[32];
   size_t depth = 0;
   const md_coll_t *c = view;
   while (c && c->view_on) {
      if (depth == 32) {
         tm_error_set(error, 2, "view nesting is too deep (or cyclic) for %s", view->name);
         return NULL;
      }
      chain[depth++] = c;
      c = resolve(ctx, view->db->name, c->view_on);
   }
   size_t n = c ? c->count : 0, i = 0;
   bson_t **docs = malloc((n ? n : 1) * sizeof *docs);
   for (md_doc_t *d = c ? c->head : NULL; d; d = d->next) {
      docs[i++] = bson_copy(d->bson);
   }
   while (depth > 0) {
      bson_t **out = NULL;
      size_t n_out = 0;
      bool ok = tm_pipeline_run(chain[--depth]->view_pipeline, docs, n, &out, &n_out, error);
      tm_docs_free(docs, n);
      if (!ok) {
         return NULL;
      }
      docs = out;
      n = n_out;
   }
   md_coll_t *snap = calloc(1, sizeof *snap);
   snap->name = strdup(view->name);
   snap->db = view->db;
   snap->options = bson_new();
   snap->is_snapshot = true;
   for (i = 0; i < n; i++) {
      md_coll_append_unindexed(snap, docs[i]);
   }
   free(docs);
   return snap;
}

md_coll_t *
md_coll_copy(const md_coll_t *src, md_db_t *db)
{
   md_coll_t *copy = md_coll_new_detached(db, src->name);
   bson_error_t error;
   bool existed;
   memcpy(copy->uuid, src->uuid, sizeof copy->uuid);
   bson_destroy(copy->options);
   copy->options = bson_copy(src->options);
   if (src->view_on) {
      copy->view_on = strdup(src->view_on);
      copy->view_pipeline = bson_copy(src->view_pipeline);
   }
   /* The source satisfies its indexes, so neither step can fail. */
   for (size_t i = 1; i < src->n_indexes; i++) {
      md_coll_create_index(copy, src->indexes[i]->spec, &existed, &error);
   }
   for (md_doc_t *d = src->head; d; d = d->next) {
      bson_t *doc = bson_copy(d->bson);
      if (!md_coll_insert(copy, doc, NULL, NULL, &error)) {
         bson_destroy(doc);
      }
   }
   return copy;
}
