/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * insert, update and delete: batches of statements with per-statement writeErrors; an
 * ordered batch stops at the first error. Counts are int32, as libmongoc only reads int32.
 * In a transaction any error ends the batch and the transaction, and a transient one
 * (WriteConflict) fails the whole command, as mongod's handleError does. A statement that
 * meets a document held by an open transaction waits for it and runs again.
 */
#include <string.h>

#include "commands/commands.h"
#include "data/write.h"

static bool
get_array(const md_cmd_t *c, const char *field, bson_iter_t *arr, bson_error_t *error)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, c->cmd, field)) {
      return tm_error_set(error, 40414, "BSON field '%s.%s' is missing but a required field",
                          c->name, field);
   }
   if (!BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 14,
                          "BSON field '%s.%s' is the wrong type, expected type "
                          "'array'",
                          c->name, field);
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

/* The collection a write statement works on (see md_cmd_coll); not a view. */
static bool
write_coll(md_cmd_t *c, const char *name, bool create, md_coll_t **coll, bson_error_t *error)
{
   return md_cmd_coll(c, name, MD_COLL_WRITE | (create ? MD_COLL_CREATE : 0), coll, NULL, error) &&
          md_check_not_view(*coll, error);
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
   return write_coll(c, *name, create, coll, error);
}

/* After a statement: whether the batch goes on. In a transaction the first error ends it,
 * aborts the transaction and, if transient, becomes the command's error (*fail). */
static bool
batch_goes_on(md_cmd_t *c, uint32_t n_errors, bool ordered, const bson_error_t *werr, bool *fail,
              bson_error_t *error)
{
   if (!n_errors) {
      return true;
   }
   if (c->txn) {
      c->txn_failed = true;
      if (md_is_transient_txn_error((int32_t)werr->code, false, false)) {
         *error = *werr;
         *fail = true;
      }
      return false;
   }
   return !ordered;
}

/* One statement of a batch: `stmt` (the array's current element) on *coll; `details`
 * receives a write error's extra fields. */
typedef struct {
   md_cmd_t *c;
   const bson_iter_t *stmt;
   int32_t index;
   bson_t details;
   void *counts;
} stmt_t;

typedef bool (*stmt_fn)(stmt_t *s, md_coll_t **coll, bson_error_t *werr);

/* Runs a statement. One blocked by an open transaction waits for it, finds the collection
 * again (it may have changed meanwhile) and runs again. Returns false when the command
 * fails (`error` set: the wait failed); else *ok says whether the statement succeeded
 * (`werr` set if not). */
static bool
run_stmt(stmt_t *s, const char *name, bool create, md_coll_t **coll, stmt_fn run, bool *ok,
         bson_error_t *werr, bson_error_t *error)
{
   for (;;) {
      memset(werr, 0, sizeof *werr);
      bson_reinit(&s->details);
      *ok = run(s, coll, werr);
      if (*ok || werr->code != MD_CODE_BLOCKED) {
         return true;
      }
      if (!md_cmd_wait_blocked(s->c, error) || !write_coll(s->c, name, create, coll, error)) {
         return false;
      }
   }
}

/* Appends the batch's writeErrors, if any, and frees them. */
static void
reply_errors(md_cmd_t *c, bson_t *errors)
{
   if (!bson_empty(errors)) {
      BSON_APPEND_ARRAY(c->reply, "writeErrors", errors);
   }
   bson_destroy(errors);
}

/* The statement loop of insert, update and delete: write errors collected in `errors`. */
static bool
run_batch(md_cmd_t *c, bson_iter_t *arr, const char *name, bool create, md_coll_t **coll,
          stmt_fn run, void *counts, bson_t *errors, bson_error_t *error)
{
   bool ordered = is_ordered(c), fail = false;
   uint32_t n_errors = 0;
   stmt_t s = {.c = c, .stmt = arr, .counts = counts};
   bson_init(&s.details);
   for (; !fail && bson_iter_next(arr); s.index++) {
      bson_error_t werr;
      bool ok;
      fail = !run_stmt(&s, name, create, coll, run, &ok, &werr, error);
      if (!fail && !ok) {
         md_append_write_error(errors, &n_errors, s.index, &werr, &s.details);
      }
      if (!fail && !batch_goes_on(c, n_errors, ordered, &werr, &fail, error)) {
         break;
      }
   }
   bson_destroy(&s.details);
   return !fail;
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

static bool
insert_stmt(stmt_t *s, md_coll_t **coll, bson_error_t *werr)
{
   bson_t doc;
   bool ok = stmt_doc(s->stmt, &doc, werr) &&
             md_write_insert(&s->c->srv->data, *coll, &doc, &s->details, werr);
   *(int32_t *)s->counts += ok;
   return ok;
}

bool
md_cmd_insert(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"documents", "ordered", "bypassDocumentValidation", NULL};
   bson_iter_t arr;
   const char *name;
   md_coll_t *coll;
   if (!open_write(c, allowed, "documents", true, &arr, &name, &coll, error)) {
      return false;
   }
   int32_t n = 0;
   bson_t errors = BSON_INITIALIZER;
   if (!run_batch(c, &arr, name, true, &coll, insert_stmt, &n, &errors, error)) {
      bson_destroy(&errors);
      return false;
   }
   BSON_APPEND_INT32(c->reply, "n", n);
   reply_errors(c, &errors);
   return true;
}

typedef struct {
   bson_t q, u, array_filters;
   bool has_array_filters, upsert, multi, is_pipeline;
   const md_index_t *hint;
} update_stmt_t;

static const char *const update_stmt_fields[] = {
   "q", "u", "upsert", "multi", "arrayFilters", "hint", "collation", "c", "upsertSupplied", NULL};

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
      return found ? false
                   : tm_error_set(error, 40414,
                                  "BSON field 'update.updates.q' is "
                                  "missing but a required field");
   }
   if (!bson_iter_init_find(&it, stmt, "u")) {
      return tm_error_set(error, 40414,
                          "BSON field 'update.updates.u' is missing but a "
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
   const char *name; /* the collection (an upsert may create it) */
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
   tm_update_t *u =
      s->is_pipeline ? tm_update_new_pipeline(&s->u, af, error) : tm_update_new(&s->u, af, error);
   tm_matcher_t *m = u ? tm_matcher_new(&s->q, error) : NULL;
   bool ok = m != NULL;
   if (ok && s->multi && tm_update_is_replacement(u)) {
      ok = tm_error_set(error, 9, "multi update is not supported for replacement-style update");
   }
   md_selection_t sel = {0};
   if (ok) {
      md_select(*coll, s->hint, m, &s->q, s->multi ? 0 : 1, &sel);
      ok = md_write_check_selection(&c->srv->data, *coll, &sel, error);
   }
   for (size_t i = 0; ok && i < sel.n; i++) {
      bool modified;
      ok = md_write_update_doc(&c->srv->data, *coll, sel.docs[i], u, sel.positional[i], &modified,
                               details, error);
      counts->n += ok;
      counts->n_modified += ok && modified;
   }
   if (ok && sel.n == 0 && s->upsert) {
      md_doc_t *d;
      if (!*coll) {
         ok = write_coll(c, name, true, coll, error);
      }
      ok = ok && md_write_upsert(&c->srv->data, *coll, &s->q, u, &d, details, error);
      if (ok) {
         note_upsert(counts, index, d);
      }
   }
   md_selection_destroy(&sel);
   tm_matcher_destroy(m);
   tm_update_destroy(u);
   return ok;
}

static bool
update_stmt(stmt_t *s, md_coll_t **coll, bson_error_t *werr)
{
   bson_t stmt;
   update_stmt_t u;
   update_counts_t *counts = s->counts;
   return stmt_doc(s->stmt, &stmt, werr) && parse_update_stmt(&stmt, &u, werr) &&
          md_check_hint(*coll, &stmt, &u.hint, werr) &&
          run_update_stmt(s->c, coll, counts->name, &u, s->index, counts, &s->details, werr);
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
   update_counts_t counts = {0};
   bson_init(&counts.upserted);
   bson_t errors = BSON_INITIALIZER;
   counts.name = name;
   if (!run_batch(c, &arr, name, false, &coll, update_stmt, &counts, &errors, error)) {
      bson_destroy(&errors);
      bson_destroy(&counts.upserted);
      return false;
   }
   BSON_APPEND_INT32(c->reply, "n", counts.n);
   BSON_APPEND_INT32(c->reply, "nModified", counts.n_modified);
   if (counts.n_upserted) {
      BSON_APPEND_ARRAY(c->reply, "upserted", &counts.upserted);
   }
   reply_errors(c, &errors);
   bson_destroy(&counts.upserted);
   return true;
}

static bool
run_delete_stmt(md_cmd_t *c, md_coll_t *coll, const bson_t *stmt, int32_t *n, bson_error_t *error)
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
      return found ? false
                   : tm_error_set(error, 40414,
                                  "BSON field 'delete.deletes.q' is "
                                  "missing but a required field");
   }
   int64_t limit = 0;
   if (!bson_iter_init_find(&it, stmt, "limit") || !BSON_ITER_HOLDS_NUMBER(&it) ||
       ((limit = bson_iter_as_int64(&it)) != 0 && limit != 1)) {
      return tm_error_set(error, 9, "The limit field in delete objects must be 0 or 1. Got %d",
                          (int)limit);
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
   md_select(coll, hint, m, &q, (size_t)limit, &sel);
   bool ok = md_write_check_selection(&c->srv->data, coll, &sel, error);
   for (size_t i = 0; ok && i < sel.n; i++) {
      ok = md_write_delete_doc(&c->srv->data, coll, sel.docs[i], error);
      *n += ok;
   }
   md_selection_destroy(&sel);
   tm_matcher_destroy(m);
   return ok;
}

static bool
delete_stmt(stmt_t *s, md_coll_t **coll, bson_error_t *werr)
{
   bson_t stmt;
   return stmt_doc(s->stmt, &stmt, werr) &&
          run_delete_stmt(s->c, *coll, &stmt, (int32_t *)s->counts, werr);
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
   int32_t n = 0;
   bson_t errors = BSON_INITIALIZER;
   if (!run_batch(c, &arr, name, false, &coll, delete_stmt, &n, &errors, error)) {
      bson_destroy(&errors);
      return false;
   }
   BSON_APPEND_INT32(c->reply, "n", n);
   reply_errors(c, &errors);
   return true;
}
