/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Pipeline-style updates ([{$set: ...}, {$unset: ...}]): run the pipeline on the document,
 * then describe the change by diffing old and new, as MongoDB does for them (this is where
 * truncatedArrays comes from).
 */
#include <string.h>

#include "update-private.h"

static const char *update_stages[] = {"$addFields", "$set",         "$project",
                                      "$unset",     "$replaceRoot", "$replaceWith"};

typedef struct {
   tm_update_desc_t *desc;
   uint32_t n_removed, n_truncated;
} diff_t;

static void
append_indexed(bson_t *arr, uint32_t *n, const char *s)
{
   char buf[16];
   const char *key;

   bson_uint32_to_string((*n)++, &key, buf, sizeof buf);
   bson_append_utf8(arr, key, -1, s, -1);
}

static void diff_docs(diff_t *d, const bson_t *old, const bson_t *new_doc, const char *prefix);

static void diff_value(diff_t *d, const bson_value_t *a, const bson_value_t *b, const char *path);

static void
diff_arrays(diff_t *d, const bson_value_t *a, const bson_value_t *b, const char *path)
{
   bson_t va, vb;
   bson_iter_t ia, ib;
   uint32_t i = 0;
   bool ha, hb;

   tm_value_as_bson(a, &va);
   tm_value_as_bson(b, &vb);
   bson_iter_init(&ia, &va);
   bson_iter_init(&ib, &vb);
   for (;; i++) {
      char *elem;
      ha = bson_iter_next(&ia);
      hb = bson_iter_next(&ib);
      if (!hb) {
         break;
      }
      elem = bson_strdup_printf("%s.%u", path, i);
      if (ha) {
         diff_value(d, bson_iter_value(&ia), bson_iter_value(&ib), elem);
      } else {
         bson_append_value(&d->desc->updated_fields, elem, -1, bson_iter_value(&ib));
      }
      bson_free(elem);
   }
   if (ha) {
      bson_t entry;
      char buf[16];
      const char *key;
      bson_uint32_to_string(d->n_truncated++, &key, buf, sizeof buf);
      bson_append_document_begin(&d->desc->truncated_arrays, key, -1, &entry);
      bson_append_utf8(&entry, "field", 5, path, -1);
      bson_append_int32(&entry, "newSize", 7, (int32_t)i);
      bson_append_document_end(&d->desc->truncated_arrays, &entry);
   }
}

static void
diff_value(diff_t *d, const bson_value_t *a, const bson_value_t *b, const char *path)
{
   bson_t va, vb;

   if (tm_value_binary_equal(a, b)) {
      return;
   }
   if (a->value_type == BSON_TYPE_DOCUMENT && b->value_type == BSON_TYPE_DOCUMENT) {
      tm_value_as_bson(a, &va);
      tm_value_as_bson(b, &vb);
      diff_docs(d, &va, &vb, path);
   } else if (a->value_type == BSON_TYPE_ARRAY && b->value_type == BSON_TYPE_ARRAY) {
      diff_arrays(d, a, b, path);
   } else {
      bson_append_value(&d->desc->updated_fields, path, -1, b);
   }
}

static void
diff_docs(diff_t *d, const bson_t *old, const bson_t *new_doc, const char *prefix)
{
   bson_iter_t it, other;

   bson_iter_init(&it, old);
   while (bson_iter_next(&it)) {
      if (!bson_iter_init_find(&other, new_doc, bson_iter_key(&it))) {
         char *path = prefix ? bson_strdup_printf("%s.%s", prefix, bson_iter_key(&it))
                             : bson_strdup(bson_iter_key(&it));
         append_indexed(&d->desc->removed_fields, &d->n_removed, path);
         bson_free(path);
      }
   }
   bson_iter_init(&it, new_doc);
   while (bson_iter_next(&it)) {
      char *path = prefix ? bson_strdup_printf("%s.%s", prefix, bson_iter_key(&it))
                          : bson_strdup(bson_iter_key(&it));
      if (bson_iter_init_find(&other, old, bson_iter_key(&it))) {
         diff_value(d, bson_iter_value(&other), bson_iter_value(&it), path);
      } else {
         bson_append_value(&d->desc->updated_fields, path, -1, bson_iter_value(&it));
      }
      bson_free(path);
   }
}

static bool
check_stages(const bson_t *pipeline, bson_error_t *error)
{
   bson_iter_t it, stage;

   bson_iter_init(&it, pipeline);
   while (bson_iter_next(&it)) {
      bool ok = false;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !bson_iter_recurse(&it, &stage) ||
          !bson_iter_next(&stage)) {
         return tm_error_set(error, 14, "Each element of the 'pipeline' array must be an object");
      }
      for (size_t i = 0; i < sizeof update_stages / sizeof update_stages[0]; i++) {
         ok |= strcmp(bson_iter_key(&stage), update_stages[i]) == 0;
      }
      if (!ok) {
         return tm_error_set(error, 2, "%s is not allowed to be used within an update",
                             bson_iter_key(&stage));
      }
   }
   return true;
}

bool
tm_update_parse_pipeline(tm_update_t *u, bson_error_t *error)
{
   if (!check_stages(u->spec, error)) {
      return false;
   }
   u->pipe = tm_pipeline_new(u->spec, error);
   return u->pipe != NULL;
}

bool
tm_update_apply_pipeline(const tm_update_t *u, const bson_t *doc, bson_t *out,
                         tm_update_desc_t *desc, bson_error_t *error)
{
   bson_t **res = NULL;
   size_t n = 0;
   bson_value_t old_id, new_id;
   bool has_old, has_new, ok = false;
   bson_t *in[1] = {(bson_t *)doc};

   if (!tm_pipeline_exec(u->pipe, in, 1, &res, &n, error)) {
      goto done;
   }
   has_old = tm_path_get(doc, "_id", &old_id);
   has_new = tm_path_get(res[0], "_id", &new_id);
   if (has_old && has_new && !tm_value_binary_equal(&old_id, &new_id)) {
      tm_error_set(error, 66,
                   "Performing an update on the path '_id' would modify the immutable field "
                   "'_id'");
      goto done;
   }
   /* A pipeline that drops _id keeps the document's _id (first, as always). */
   if (has_old && !has_new) {
      bson_append_value(out, "_id", 3, &old_id);
   }
   bson_concat(out, res[0]);
   if (desc) {
      diff_t d = {desc, 0, 0};
      diff_docs(&d, doc, out, NULL);
   }
   ok = true;
done:
   tm_docs_free(res, n);
   return ok;
}
