/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Sort specifications ({a: 1, "b.c": -1}) and MongoDB's sort keys for arrays.
 */
#include <math.h>
#include <string.h>

#include "engine-private.h"

struct _tm_sort_t {
   size_t n;
   tm_path_t *paths;
   int *dirs;
};

tm_sort_t *
tm_sort_new(const bson_t *spec, bson_error_t *error)
{
   tm_sort_t *s = bson_malloc0(sizeof *s);
   bson_iter_t it;
   size_t n = spec ? bson_count_keys(spec) : 0;

   s->paths = bson_malloc0((n + 1) * sizeof(tm_path_t));
   s->dirs = bson_malloc0((n + 1) * sizeof(int));
   if (!spec || !bson_iter_init(&it, spec)) {
      return s;
   }
   while (bson_iter_next(&it)) {
      const bson_value_t *v = bson_iter_value(&it);
      double d = tm_value_is_number(v) ? tm_value_as_double(v) : NAN;
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         tm_error_set(error, 2, "$meta sort by '%s' is not supported by the test server",
                      bson_iter_key(&it));
         goto fail;
      }
      if (!tm_value_is_number(v)) {
         char *json = tm_value_to_json(v);
         tm_error_set(error, 15974, "Illegal key in $sort specification: %s: %s",
                      bson_iter_key(&it), json);
         bson_free(json);
         goto fail;
      }
      if (d != 1 && d != -1) {
         tm_error_set(error, 15975,
                      "$sort key ordering must be 1 (for ascending) or -1 (for descending)");
         goto fail;
      }
      if (!tm_path_parse(bson_iter_key(&it), &s->paths[s->n])) {
         tm_path_destroy(&s->paths[s->n]);
         tm_error_set(error, 2, "Invalid sort path: '%s'", bson_iter_key(&it));
         goto fail;
      }
      s->dirs[s->n++] = d > 0 ? 1 : -1;
   }
   return s;
fail:
   tm_sort_destroy(s);
   return NULL;
}

void
tm_sort_destroy(tm_sort_t *sort)
{
   if (!sort) {
      return;
   }
   for (size_t i = 0; i < sort->n; i++) {
      tm_path_destroy(&sort->paths[i]);
   }
   bson_free(sort->paths);
   bson_free(sort->dirs);
   bson_free(sort);
}

typedef struct {
   int dir;
   bool found;
   bool empty_array;
   bson_value_t best;
} key_ctx_t;

static bool
key_visit(const bson_value_t *v, int32_t index, void *ctx)
{
   key_ctx_t *k = ctx;
   bson_value_t null_v;

   if (v && v->value_type == BSON_TYPE_ARRAY) {
      /* Arrays contribute their elements (already visited), not themselves. */
      k->empty_array |= v->value.v_doc.data_len <= 5;
      return false;
   }
   if (!v) {
      null_v.value_type = BSON_TYPE_NULL;
      v = &null_v;
   }
   if (!k->found || tm_value_compare(v, &k->best) * k->dir < 0) {
      k->best = *v;
      k->found = true;
   }
   return false;
}

/* Ascending sorts use an array's smallest element, descending ones its largest; an empty
 * array sorts before null. */
static void
sort_key(const bson_t *doc, const tm_path_t *path, int dir, bson_value_t *key)
{
   key_ctx_t k = {dir, false, false, {0}};

   tm_path_visit(doc, path, true, key_visit, &k);
   if (k.found) {
      *key = k.best;
   } else {
      key->value_type = k.empty_array ? BSON_TYPE_UNDEFINED : BSON_TYPE_NULL;
   }
}

int
tm_sort_compare(const tm_sort_t *sort, const bson_t *a, const bson_t *b)
{
   for (size_t i = 0; i < sort->n; i++) {
      bson_value_t ka, kb;
      int r;
      sort_key(a, &sort->paths[i], sort->dirs[i], &ka);
      sort_key(b, &sort->paths[i], sort->dirs[i], &kb);
      r = tm_value_compare(&ka, &kb);
      if (r != 0) {
         return r * sort->dirs[i];
      }
   }
   return 0;
}
