/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * findAndModify: find the first document in sort order, then update, replace or remove it
 * (or upsert), returning the document before or after. Errors are command errors; their
 * extra fields (keyPattern/keyValue of a duplicate key, errInfo of a validation failure) go
 * into the error reply.
 */
#include <string.h>

#include "commands/commands.h"
#include "data/write.h"

typedef struct {
   bson_t query, sort, fields, update, array_filters;
   bool has_sort, has_fields, has_update, has_array_filters;
   bool remove, return_new, upsert, is_pipeline;
} fam_t;

static bool
parse(const md_cmd_t *c, fam_t *f, bson_error_t *error)
{
   static const char *const allowed[] = {"query",     "sort",         "remove",
                                         "update",    "new",          "fields",
                                         "upsert",    "arrayFilters", "bypassDocumentValidation",
                                         "collation", "hint",         "let",
                                         NULL};
   bson_iter_t it;
   bool found;
   memset(f, 0, sizeof *f);
   if (!md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "query", &f->query, &found, error) ||
       !md_cmd_get_doc(c->cmd, "sort", &f->sort, &f->has_sort, error) ||
       !md_cmd_get_doc(c->cmd, "fields", &f->fields, &f->has_fields, error) ||
       !md_check_collation(c->cmd, error)) {
      return false;
   }
   f->remove = bson_iter_init_find(&it, c->cmd, "remove") && bson_iter_as_bool(&it);
   f->return_new = bson_iter_init_find(&it, c->cmd, "new") && bson_iter_as_bool(&it);
   f->upsert = bson_iter_init_find(&it, c->cmd, "upsert") && bson_iter_as_bool(&it);
   if (bson_iter_init_find(&it, c->cmd, "update")) {
      uint32_t len;
      const uint8_t *data;
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_document(&it, &len, &data);
      } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_iter_array(&it, &len, &data);
      } else {
         return tm_error_set(error, 14, "Update argument must be either an object or an array");
      }
      bson_init_static(&f->update, data, len);
      f->has_update = true;
      f->is_pipeline = BSON_ITER_HOLDS_ARRAY(&it);
   }
   if (bson_iter_init_find(&it, c->cmd, "arrayFilters") && BSON_ITER_HOLDS_ARRAY(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_iter_array(&it, &len, &data);
      bson_init_static(&f->array_filters, data, len);
      f->has_array_filters = true;
   }
   if (f->remove && f->has_update) {
      return tm_error_set(error, 9, "Cannot specify both an update and remove=true");
   }
   if (!f->remove && !f->has_update) {
      return tm_error_set(error, 9, "Either an update or remove=true must be specified");
   }
   if (f->remove && (f->upsert || f->return_new)) {
      return tm_error_set(error, 9, "Cannot specify both %s=true and remove=true",
                          f->upsert ? "upsert" : "new");
   }
   return true;
}

static void
append_value(const fam_t *f, const tm_projection_t *proj, const bson_t *doc, bson_t *reply)
{
   if (!doc) {
      BSON_APPEND_NULL(reply, "value");
      return;
   }
   if (proj) {
      bson_t out;
      tm_projection_apply(proj, doc, &out);
      BSON_APPEND_DOCUMENT(reply, "value", &out);
      bson_destroy(&out);
   } else {
      BSON_APPEND_DOCUMENT(reply, "value", doc);
   }
   (void)f;
}

static void
last_error(bson_t *reply, int32_t n, int updated_existing, const md_doc_t *upserted)
{
   bson_t le;
   bson_iter_t it;
   BSON_APPEND_DOCUMENT_BEGIN(reply, "lastErrorObject", &le);
   BSON_APPEND_INT32(&le, "n", n);
   if (updated_existing >= 0) {
      BSON_APPEND_BOOL(&le, "updatedExisting", updated_existing);
   }
   if (upserted && bson_iter_init_find(&it, upserted->bson, "_id")) {
      bson_append_value(&le, "upserted", -1, bson_iter_value(&it));
   }
   bson_append_document_end(reply, &le);
}

static bool
modify(md_cmd_t *c, md_coll_t **coll, const char *name, const fam_t *f, md_doc_t *d, int32_t pos,
       const tm_projection_t *proj, bson_error_t *error)
{
   const bson_t *af = f->has_array_filters ? &f->array_filters : NULL;
   tm_update_t *u = f->is_pipeline ? tm_update_new_pipeline(&f->update, af, error)
                                   : tm_update_new(&f->update, af, error);
   if (!u) {
      return false;
   }
   bool ok, modified;
   if (d) {
      bson_t *before = bson_copy(d->bson);
      ok = md_write_update_doc(&c->srv->data, *coll, d, u, pos, &modified, &c->error_extra, error);
      if (ok) {
         last_error(c->reply, 1, true, NULL);
         append_value(f, proj, f->return_new ? d->bson : before, c->reply);
      }
      bson_destroy(before);
   } else {
      md_doc_t *nd = NULL;
      ok = *coll ||
           (md_cmd_coll(c, name, MD_COLL_WRITE | MD_COLL_CREATE | MD_COLL_FAM, coll, NULL, error) &&
            md_check_not_view(*coll, error));
      ok = ok && md_write_upsert(&c->srv->data, *coll, &f->query, u, &nd, &c->error_extra, error);
      if (ok) {
         last_error(c->reply, 1, false, nd);
         append_value(f, proj, f->return_new ? nd->bson : NULL, c->reply);
      }
   }
   tm_update_destroy(u);
   return ok;
}

static bool
remove_doc(md_cmd_t *c, md_coll_t *coll, const fam_t *f, md_doc_t *d, const tm_projection_t *proj,
           bson_error_t *error)
{
   bson_t *before = d ? bson_copy(d->bson) : NULL;
   bool ok = !d || md_write_delete_doc(&c->srv->data, coll, d, error);
   if (ok) {
      last_error(c->reply, d ? 1 : 0, -1, NULL);
      append_value(f, proj, before, c->reply);
   }
   bson_destroy(before);
   return ok;
}

/* One attempt; fails with MD_CODE_BLOCKED (nothing done) when an open transaction holds the
 * document. */
static bool
find_and_modify(md_cmd_t *c, const char *name, const fam_t *f, bson_error_t *error)
{
   md_coll_t *coll;
   const md_index_t *hint;
   if (!md_cmd_coll(c, name, MD_COLL_WRITE | MD_COLL_FAM, &coll, NULL, error) ||
       !md_check_not_view(coll, error) || !md_check_hint(coll, c->cmd, &hint, error)) {
      return false;
   }
   tm_matcher_t *m = tm_matcher_new(&f->query, error);
   tm_sort_t *sort = m && f->has_sort ? tm_sort_new(&f->sort, error) : NULL;
   tm_projection_t *proj = m && f->has_fields ? tm_projection_new(&f->fields, error) : NULL;
   bool ok = m && (!f->has_sort || sort) && (!f->has_fields || proj);
   md_selection_t sel = {0};
   if (ok) {
      md_select(coll, hint, m, &f->query, sort ? 0 : 1, &sel);
      md_selection_sort(&sel, sort);
   }
   md_doc_t *d = sel.n ? sel.docs[0] : NULL;
   if (!ok) {
      /* error already set */
   } else if (f->remove) {
      ok = remove_doc(c, coll, f, d, proj, error);
   } else if (d || f->upsert) {
      ok = modify(c, &coll, name, f, d, d ? sel.positional[0] : -1, proj, error);
   } else {
      last_error(c->reply, 0, false, NULL);
      BSON_APPEND_NULL(c->reply, "value");
   }
   md_selection_destroy(&sel);
   tm_projection_destroy(proj);
   tm_sort_destroy(sort);
   tm_matcher_destroy(m);
   return ok;
}

bool
md_cmd_find_and_modify(md_cmd_t *c, bson_error_t *error)
{
   fam_t f;
   const char *name = md_cmd_coll_name(c, error);
   if (!name || !parse(c, &f, error)) {
      return false;
   }
   while (!find_and_modify(c, name, &f, error)) {
      if (error->code != MD_CODE_BLOCKED) {
         return false;
      }
      memset(error, 0, sizeof *error);
      if (!md_cmd_wait_blocked(c, error)) {
         return false;
      }
   }
   return true;
}
