/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Aggregation pipelines: the stage loop and the simple stages. $group is in group.c,
 * $project / $unset use projection.c, $addFields / $unwind / $replaceRoot are in
 * pipeline-stages.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "match-private.h"
#include "pipeline-private.h"
#include "projection-private.h"

void
tm_docs_push(tm_docs_t *d, bson_t *doc)
{
   if (d->n == d->cap) {
      d->cap = d->cap ? d->cap * 2 : 16;
      d->docs = bson_realloc(d->docs, d->cap * sizeof(bson_t *));
   }
   d->docs[d->n++] = doc;
}

void
tm_docs_clear(tm_docs_t *d)
{
   for (size_t i = 0; i < d->n; i++) {
      bson_destroy(d->docs[i]);
   }
   d->n = 0;
}

static bool
stage_match(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   bson_t filter;
   tm_matcher_t *m;
   size_t kept = 0;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &filter)) {
      return tm_error_set(error, 15959, "the match filter must be an expression in an object");
   }
   if (!(m = tm_matcher_new(&filter, error))) {
      return false;
   }
   for (size_t i = 0; i < docs->n; i++) {
      if (tm_matcher_match(m, docs->docs[i], NULL)) {
         docs->docs[kept++] = docs->docs[i];
      } else {
         bson_destroy(docs->docs[i]);
      }
   }
   docs->n = kept;
   tm_matcher_destroy(m);
   return true;
}

static bool
run_projection(const tm_projection_t *p, tm_docs_t *docs, bson_error_t *error)
{
   for (size_t i = 0; i < docs->n; i++) {
      bson_t *out = bson_new();
      bson_t tmp;
      bool ok = tm_projection_apply_ex(p, docs->docs[i], &tmp, error);
      bson_concat(out, &tmp);
      bson_destroy(&tmp);
      bson_destroy(docs->docs[i]);
      docs->docs[i] = out;
      if (!ok) {
         return false;
      }
   }
   return true;
}

static bool
stage_project(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   bson_t doc;
   tm_projection_t *p;
   bool ok;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 15969, "$project specification must be an object");
   }
   if (bson_empty(&doc)) {
      return tm_error_set(error, 51272,
                          "Invalid $project :: caused by :: projection specification must have "
                          "at least one field");
   }
   if (!(p = tm_projection_new_ex(&doc, true, error))) {
      return false;
   }
   ok = run_projection(p, docs, error);
   tm_projection_destroy(p);
   return ok;
}

static bool
stage_unset(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   bson_t fields = BSON_INITIALIZER, arr;
   bson_iter_t it;
   tm_projection_t *p;
   bool ok;

   if (spec->value_type == BSON_TYPE_UTF8) {
      bson_append_int32(&fields, spec->value.v_utf8.str, -1, 0);
   } else if (spec->value_type == BSON_TYPE_ARRAY && tm_value_as_bson(spec, &arr) &&
              bson_count_keys(&arr) > 0) {
      bson_iter_init(&it, &arr);
      while (bson_iter_next(&it)) {
         if (!BSON_ITER_HOLDS_UTF8(&it)) {
            bson_destroy(&fields);
            return tm_error_set(error, 31120,
                                "$unset specification must be a string or an array containing "
                                "only string values");
         }
         bson_append_int32(&fields, bson_iter_utf8(&it, NULL), -1, 0);
      }
   } else {
      bson_destroy(&fields);
      return tm_error_set(error, 31002,
                          "$unset specification must be a string or an array with at least one "
                          "field");
   }
   p = tm_projection_new_ex(&fields, true, error);
   bson_destroy(&fields);
   if (!p) {
      return false;
   }
   ok = run_projection(p, docs, error);
   tm_projection_destroy(p);
   return ok;
}

typedef struct {
   bson_t *doc;
   size_t idx;
} sortable_t;

static int
sortable_cmp(const void *x, const void *y, void *ctx)
{
   const sortable_t *a = x, *b = y;
   int r = tm_sort_compare(ctx, a->doc, b->doc);

   /* $sort is stable: ties keep their input order. */
   return r ? r : (a->idx < b->idx ? -1 : 1);
}

bool
tm_docs_sort(tm_docs_t *docs, const tm_sort_t *sort)
{
   sortable_t *items = bson_malloc((docs->n + 1) * sizeof(sortable_t));

   for (size_t i = 0; i < docs->n; i++) {
      items[i].doc = docs->docs[i];
      items[i].idx = i;
   }
   qsort_r(items, docs->n, sizeof(sortable_t), sortable_cmp, (void *) sort);
   for (size_t i = 0; i < docs->n; i++) {
      docs->docs[i] = items[i].doc;
   }
   bson_free(items);
   return true;
}

static bool
stage_sort(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   bson_t doc;
   tm_sort_t *sort;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 15973, "the $sort key specification must be an object");
   }
   if (bson_empty(&doc)) {
      return tm_error_set(error, 15976, "$sort stage must have at least one sort key");
   }
   if (!(sort = tm_sort_new(&doc, error))) {
      return false;
   }
   tm_docs_sort(docs, sort);
   tm_sort_destroy(sort);
   return true;
}

static bool
stage_skip_limit(const char *name, const bson_value_t *spec, tm_docs_t *docs,
                 bson_error_t *error)
{
   bool skip = strcmp(name, "$skip") == 0;
   double d = tm_value_is_number(spec) ? tm_value_as_double(spec) : NAN;
   size_t n;

   if (isnan(d) || d != floor(d)) {
      return tm_error_set(error, skip ? 15972 : 15957, "the %s must be specified as a number",
                          skip ? "skip" : "limit");
   }
   if (d < 0 || (!skip && d == 0)) {
      return tm_error_set(error, skip ? 5107200 : 15958, "the %s must be %s", skip ? "skip" : "limit",
                          skip ? "non-negative" : "positive");
   }
   n = d > (double) docs->n ? docs->n : (size_t) d;
   if (skip) {
      for (size_t i = 0; i < n; i++) {
         bson_destroy(docs->docs[i]);
      }
      memmove(docs->docs, docs->docs + n, (docs->n - n) * sizeof(bson_t *));
      docs->n -= n;
   } else {
      for (size_t i = n; i < docs->n; i++) {
         bson_destroy(docs->docs[i]);
      }
      docs->n = n;
   }
   return true;
}

static bool
stage_count(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   const char *name;
   size_t n = docs->n;
   bson_t *out;

   if (spec->value_type != BSON_TYPE_UTF8) {
      return tm_error_set(error, 40156, "the count field must be a non-empty string");
   }
   name = spec->value.v_utf8.str;
   if (!name[0]) {
      return tm_error_set(error, 40157, "the count field must be a non-empty string");
   }
   if (name[0] == '$') {
      return tm_error_set(error, 40158, "the count field cannot be a $-prefixed path");
   }
   if (strchr(name, '.')) {
      return tm_error_set(error, 40160, "the count field cannot contain '.'");
   }
   tm_docs_clear(docs);
   if (n > 0) {
      out = bson_new();
      if (n <= INT32_MAX) {
         bson_append_int32(out, name, -1, (int32_t) n);
      } else {
         bson_append_int64(out, name, -1, (int64_t) n);
      }
      tm_docs_push(docs, out);
   }
   return true;
}

static const char *unsupported_stages[] = {
   "$lookup", "$facet", "$out", "$merge", "$bucket", "$bucketAuto", "$geoNear", "$graphLookup",
   "$sample", "$sortByCount", "$redact", "$indexStats", "$collStats", "$densify", "$fill",
   "$unionWith", "$setWindowFields", "$search", "$documents", "$currentOp", "$listSessions",
   "$planCacheStats", "$changeStream",
};

static bool
run_stage(const char *name, const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error)
{
   if (strcmp(name, "$match") == 0) {
      return stage_match(spec, docs, error);
   } else if (strcmp(name, "$project") == 0) {
      return stage_project(spec, docs, error);
   } else if (strcmp(name, "$unset") == 0) {
      return stage_unset(spec, docs, error);
   } else if (strcmp(name, "$addFields") == 0 || strcmp(name, "$set") == 0) {
      return tm_stage_add_fields(name, spec, docs, error);
   } else if (strcmp(name, "$sort") == 0) {
      return stage_sort(spec, docs, error);
   } else if (strcmp(name, "$skip") == 0 || strcmp(name, "$limit") == 0) {
      return stage_skip_limit(name, spec, docs, error);
   } else if (strcmp(name, "$count") == 0) {
      return stage_count(spec, docs, error);
   } else if (strcmp(name, "$group") == 0) {
      return tm_stage_group(spec, docs, error);
   } else if (strcmp(name, "$unwind") == 0) {
      return tm_stage_unwind(spec, docs, error);
   } else if (strcmp(name, "$replaceRoot") == 0 || strcmp(name, "$replaceWith") == 0) {
      return tm_stage_replace_root(name, spec, docs, error);
   }
   for (size_t i = 0; i < sizeof unsupported_stages / sizeof unsupported_stages[0]; i++) {
      if (strcmp(name, unsupported_stages[i]) == 0) {
         return tm_error_set(error, 2, "%s is not supported by the test server in this position",
                             name);
      }
   }
   return tm_error_set(error, 40324, "Unrecognized pipeline stage name: '%s'", name);
}

bool
tm_pipeline_run(const bson_t *pipeline, bson_t **in, size_t n_in, bson_t ***out, size_t *n_out,
                bson_error_t *error)
{
   tm_docs_t docs = {NULL, 0, 0};
   bson_iter_t it;

   *out = NULL;
   *n_out = 0;
   for (size_t i = 0; i < n_in; i++) {
      tm_docs_push(&docs, bson_copy(in[i]));
   }
   if (pipeline && bson_iter_init(&it, pipeline)) {
      while (bson_iter_next(&it)) {
         bson_t stage;
         bson_iter_t s;
         if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !tm_value_as_bson(bson_iter_value(&it), &stage) ||
             bson_count_keys(&stage) != 1) {
            tm_error_set(error, 40323,
                         "A pipeline stage specification object must contain exactly one field.");
            goto fail;
         }
         bson_iter_init(&s, &stage);
         bson_iter_next(&s);
         if (!run_stage(bson_iter_key(&s), bson_iter_value(&s), &docs, error)) {
            goto fail;
         }
      }
   }
   *out = docs.docs;
   *n_out = docs.n;
   if (!*out) {
      *out = bson_malloc0(sizeof(bson_t *));
   }
   return true;
fail:
   tm_docs_clear(&docs);
   bson_free(docs.docs);
   return false;
}
