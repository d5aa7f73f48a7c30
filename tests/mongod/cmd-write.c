/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * insert, update and delete: batches of statements with per-statement writeErrors; an
 * ordered batch stops at the first error. Counts are int32, as libmongoc only reads int32.
 */
#include <string.h>

#include "write.h"

static bool
get_array(const md_cmd_t *c, const char *field, bson_iter_t *arr, bson_error_t *error)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, c->cmd, field)) {
      return tm_error_set(error, 40414, "BSON field '%s.%s' is missing but a required field",
                          c->name, field);
   }
   if (!BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 14, "BSON field '%s.%s' is the wrong type, expected type "
                                     "'array'", c->name, field);
   }
   bson_iter_recurse(&it, arr);
   return true;
}

static bool
is_ordered(const md_cmd_t *c)
{
   bson_iter_t it;
   return !bson_iter_init_find(&it, c->cmd, "ordered") || bson_iter_as_bool(&it);
}

/* The checks every write command starts with: collection name, known fields, the statement
 * array named @field, and a collection that is not a view (created if @create). On success
 * *name borrows from the command and *coll may be NULL (a missing collection, !create). */
static bool
open_write(md_cmd_t *c, const char *const *allowed, const char *field, bool create,
           bson_iter_t *arr, const char **name, md_coll_t **coll, bson_error_t *error)
{
   *name = md_cmd_coll_name(c, error);
   if (!*name || !md_cmd_check_fields(c, allowed, error) || !get_array(c, field, arr, error)) {
      return false;
   }
   *coll = md_store_coll(c->srv->store, c->db, *name, create, NULL);
   return md_check_not_view(*coll, error);
}

static bool
stmt_doc(const bson_iter_t *arr, bson_t *doc, bson_error_t *error)
{
   uint32_t len;
   const uint8_t *data;
   if (!BSON_ITER_HOLDS_DOCUMENT(arr)) {
      return tm_error_set(error, 14, "write statements must be documents");
   }
   bson_iter_document(arr, &len, &data);
   return bson_init_static(doc, data, len);
}

bool
md_cmd_insert(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"documents", "ordered", "bypassDocumentValidation",
                                         NULL};
   bson_iter_t arr;
   const char *name;
   md_coll_t *coll;
   if (!open_write(c, allowed, "documents", true, &arr, &name, &coll, error)) {
      return false;
   }
   bool ordered = is_ordered(c);
   int32_t n = 0, index = 0;
   uint32_t n_errors = 0;
   bson_t errors = BSON_INITIALIZER;
   for (; bson_iter_next(&arr); index++) {
      bson_t doc, details = BSON_INITIALIZER;
      bson_error_t werr = {0};
      if (stmt_doc(&arr, &doc, &werr) && md_write_insert(c->srv, coll, &doc, &details, &werr)) {
         n++;
      } else {
         md_append_write_error(&errors, &n_errors, index, &werr, &details);
      }
      bson_destroy(&details);
      if (n_errors && ordered) {
         break;
      }
   }
   BSON_APPEND_INT32(c->reply, "n", n);
   if (n_errors) {
      BSON_APPEND_ARRAY(c->reply, "writeErrors", &errors);
   }
   bson_destroy(&errors);
   return true;
}

typedef struct {
   bson_t q, u, array_filters;
   bool has_array_filters, upsert, multi, is_pipeline;
   const md_index_t *hint;
} update_stmt_t;

static const char *const update_stmt_fields[] = {"q", "u", "upsert", "multi", "arrayFilters",
                                                 "hint", "collation", "c", "upsertSupplied",
                                                 NULL};

static bool
parse_update_stmt(const bson_t *stmt, update_stmt_t *s, bson_error_t *error)
{
   bson_iter_t it;
   bool found;
   memset(s, 0, sizeof *s);
   bson_iter_init(&it, stmt);
   while (bson_iter_next(&it)) {
      bool known = false;
      for (int i = 0; update_stmt_fields[i]; i++) {
         known = known || strcmp(bson_iter_key(&it), update_stmt_fields[i]) == 0;
      }
      if (!known) {
         return tm_error_set(error, 40415, "BSON field 'update.updates.%s' is an unknown field.",
                             bson_iter_key(&it));
      }
   }
   if (!md_cmd_get_doc(stmt, "q", &s->q, &found, error) || !found) {
      return found ? false : tm_error_set(error, 40414, "BSON field 'update.updates.q' is "
                                                        "missing but a required field");
   }
   if (!bson_iter_init_find(&it, stmt, "u")) {
      return tm_error_set(error, 40414, "BSON field 'update.updates.u' is missing but a "
                                        "required field");
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it) && !BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 14, "Update argument must be either an object or an array");
   }
   uint32_t len;
   const uint8_t *data;
   s->is_pipeline = BSON_ITER_HOLDS_ARRAY(&it);
   if (s->is_pipeline) {
      bson_iter_array(&it, &len, &data);
   } else {
      bson_iter_document(&it, &len, &data);
   }
   bson_init_static(&s->u, data, len);
   if (bson_iter_init_find(&it, stmt, "arrayFilters")) {
      if (!BSON_ITER_HOLDS_ARRAY(&it)) {
         return tm_error_set(error, 14, "arrayFilters must be an array");
      }
      bson_iter_array(&it, &len, &data);
      bson_init_static(&s->array_filters, data, len);
      s->has_array_filters = true;
   }
   s->upsert = bson_iter_init_find(&it, stmt, "upsert") && bson_iter_as_bool(&it);
   s->multi = bson_iter_init_find(&it, stmt, "multi") && bson_iter_as_bool(&it);
   return md_check_collation(stmt, error);
}

typedef struct {
   int32_t n, n_modified;
   bson_t upserted;
   uint32_t n_upserted;
} update_counts_t;

static void
note_upsert(update_counts_t *counts, int32_t index, const md_doc_t *d)
{
   char key[16];
   const char *k;
   bson_t u;
   bson_iter_t it;
   bson_uint32_to_string(counts->n_upserted++, &k, key, sizeof key);
   bson_append_document_begin(&counts->upserted, k, -1, &u);
   BSON_APPEND_INT32(&u, "index", index);
   bson_iter_init_find(&it, d->bson, "_id");
   bson_append_value(&u, "_id", 3, bson_iter_value(&it));
   bson_append_document_end(&counts->upserted, &u);
   counts->n++;
}

static bool
run_update_stmt(md_cmd_t *c, md_coll_t **coll, const char *name, const update_stmt_t *s,
                int32_t index, update_counts_t *counts, bson_t *details, bson_error_t *error)
{
   const bson_t *af = s->has_array_filters ? &s->array_filters : NULL;
   /* An empty array and an empty document look alike as bson_t: say which one it is. */
   tm_update_t *u = s->is_pipeline ? tm_update_new_pipeline(&s->u, af, error)
                                   : tm_update_new(&s->u, af, error);
   tm_matcher_t *m = u ? tm_matcher_new(&s->q, error) : NULL;
   bool ok = m != NULL;
   if (ok && s->multi && tm_update_is_replacement(u)) {
      ok = tm_error_set(error, 9, "multi update is not supported for replacement-style update");
   }
   md_selection_t sel = {0};
   if (ok) {
      md_select(*coll, s->hint, m, &s->q, s->multi ? 0 : 1, &sel);
   }
   for (size_t i = 0; ok && i < sel.n; i++) {
      bool modified;
      ok = md_write_update_doc(c->srv, *coll, sel.docs[i], u, sel.positional[i], &modified,
                               details, error);
      counts->n += ok;
      counts->n_modified += ok && modified;
   }
   if (ok && sel.n == 0 && s->upsert) {
      md_doc_t *d;
      if (!*coll) {
         *coll = md_store_coll(c->srv->store, c->db, name, true, NULL);
      }
      ok = md_write_upsert(c->srv, *coll, &s->q, u, &d, details, error);
      if (ok) {
         note_upsert(counts, index, d);
      }
   }
   md_selection_destroy(&sel);
   tm_matcher_destroy(m);
   tm_update_destroy(u);
   return ok;
}

bool
md_cmd_update(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"updates", "ordered", "bypassDocumentValidation", "let",
                                         NULL};
   bson_iter_t arr;
   const char *name;
   md_coll_t *coll;
   if (!open_write(c, allowed, "updates", false, &arr, &name, &coll, error)) {
      return false;
   }
   bool ordered = is_ordered(c);
   update_counts_t counts = {0};
   bson_init(&counts.upserted);
   uint32_t n_errors = 0;
   bson_t errors = BSON_INITIALIZER;
   for (int32_t index = 0; bson_iter_next(&arr); index++) {
      bson_t stmt, details = BSON_INITIALIZER;
      bson_error_t werr = {0};
      update_stmt_t s;
      if (!stmt_doc(&arr, &stmt, &werr) || !parse_update_stmt(&stmt, &s, &werr) ||
          !md_check_hint(coll, &stmt, &s.hint, &werr) ||
          !run_update_stmt(c, &coll, name, &s, index, &counts, &details, &werr)) {
         md_append_write_error(&errors, &n_errors, index, &werr, &details);
      }
      bson_destroy(&details);
      if (n_errors && ordered) {
         break;
      }
   }
   BSON_APPEND_INT32(c->reply, "n", counts.n);
   BSON_APPEND_INT32(c->reply, "nModified", counts.n_modified);
   if (counts.n_upserted) {
      BSON_APPEND_ARRAY(c->reply, "upserted", &counts.upserted);
   }
   if (n_errors) {
      BSON_APPEND_ARRAY(c->reply, "writeErrors", &errors);
   }
   bson_destroy(&errors);
   bson_destroy(&counts.upserted);
   return true;
}

static bool
run_delete_stmt(md_cmd_t *c, md_coll_t *coll, const bson_t *stmt, int32_t *n,
                bson_error_t *error)
{
   static const char *const fields[] = {"q", "limit", "hint", "collation", NULL};
   bson_iter_t it;
   bson_t q;
   bool found;
   bson_iter_init(&it, stmt);
   while (bson_iter_next(&it)) {
      bool known = false;
      for (int i = 0; fields[i]; i++) {
         known = known || strcmp(bson_iter_key(&it), fields[i]) == 0;
      }
      if (!known) {
         return tm_error_set(error, 40415, "BSON field 'delete.deletes.%s' is an unknown field.",
                             bson_iter_key(&it));
      }
   }
   if (!md_cmd_get_doc(stmt, "q", &q, &found, error) || !found) {
      return found ? false : tm_error_set(error, 40414, "BSON field 'delete.deletes.q' is "
                                                        "missing but a required field");
   }
   int64_t limit = 0;
   if (!bson_iter_init_find(&it, stmt, "limit") || !BSON_ITER_HOLDS_NUMBER(&it) ||
       ((limit = bson_iter_as_int64(&it)) != 0 && limit != 1)) {
      return tm_error_set(error, 9, "The limit field in delete objects must be 0 or 1. Got %d",
                          (int) limit);
   }
   const md_index_t *hint;
   if (!md_check_collation(stmt, error) || !md_check_hint(coll, stmt, &hint, error)) {
      return false;
   }
   tm_matcher_t *m = tm_matcher_new(&q, error);
   if (!m) {
      return false;
   }
   md_selection_t sel;
   md_select(coll, hint, m, &q, (size_t) limit, &sel);
   for (size_t i = 0; i < sel.n; i++) {
      md_write_delete_doc(c->srv, coll, sel.docs[i]);
   }
   *n += (int32_t) sel.n;
   md_selection_destroy(&sel);
   tm_matcher_destroy(m);
   return true;
}

bool
md_cmd_delete(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"deletes", "ordered", "let", NULL};
   bson_iter_t arr;
   const char *name;
   md_coll_t *coll;
   if (!open_write(c, allowed, "deletes", false, &arr, &name, &coll, error)) {
      return false;
   }
   bool ordered = is_ordered(c);
   int32_t n = 0;
   uint32_t n_errors = 0;
   bson_t errors = BSON_INITIALIZER;
   for (int32_t index = 0; bson_iter_next(&arr); index++) {
      bson_t stmt;
      bson_error_t werr = {0};
      if (!stmt_doc(&arr, &stmt, &werr) || !run_delete_stmt(c, coll, &stmt, &n, &werr)) {
         md_append_write_error(&errors, &n_errors, index, &werr, NULL);
         if (ordered) {
            break;
         }
      }
   }
   BSON_APPEND_INT32(c->reply, "n", n);
   if (n_errors) {
      BSON_APPEND_ARRAY(c->reply, "writeErrors", &errors);
   }
   bson_destroy(&errors);
   return true;
}
