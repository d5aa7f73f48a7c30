/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Aggregation pipelines: parsing into stages once (with the command's `let`), running them
 * (with the collections $lookup reads), and $match / $project / $unset / $sort. $group is in
 * group.c, $lookup in lookup.c, $addFields / $unwind / $replaceRoot / $skip / $limit / $count
 * in pipeline-stages.c.
 */
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
match_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   bson_t filter;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &filter)) {
      return tm_error_set(error, 15959, "the match filter must be an expression in an object");
   }
   *state = tm_matcher_new(&filter, error);
   return *state != NULL;
}

static bool
match_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   size_t kept = 0;

   for (size_t i = 0; i < docs->n; i++) {
      if (tm_matcher_match(state, docs->docs[i], NULL)) {
         docs->docs[kept++] = docs->docs[i];
      } else {
         bson_destroy(docs->docs[i]);
      }
   }
   docs->n = kept;
   return true;
}

static void
match_destroy(void *state)
{
   tm_matcher_destroy(state);
}

static bool
project_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   bson_t doc;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 15969, "$project specification must be an object");
   }
   if (bson_empty(&doc)) {
      return tm_error_set(error, 51272,
                          "Invalid $project :: caused by :: projection specification must have "
                          "at least one field");
   }
   *state = tm_projection_new_ex(&doc, true, error);
   /* mongod adds the stage's name to whatever went wrong in its specification. */
   if (!*state && error && strncmp(error->message, "Invalid $project", 16) != 0) {
      tm_error_add_context(error, "Invalid $project");
   }
   return *state != NULL;
}

/* $unset is an exclusion projection of the named fields. */
static bool
unset_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   bson_t fields = BSON_INITIALIZER, arr;
   bson_iter_t it;

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
   *state = tm_projection_new_ex(&fields, true, error);
   bson_destroy(&fields);
   return *state != NULL;
}

static bool
project_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   for (size_t i = 0; i < docs->n; i++) {
      bson_t *out = bson_new();
      bson_t tmp;
      bool ok = tm_projection_apply_ex(state, docs->docs[i], &tmp, error);
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

static void
project_destroy(void *state)
{
   tm_projection_destroy(state);
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
   qsort_r(items, docs->n, sizeof(sortable_t), sortable_cmp, (void *)sort);
   for (size_t i = 0; i < docs->n; i++) {
      docs->docs[i] = items[i].doc;
   }
   bson_free(items);
   return true;
}

static bool
sort_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   bson_t doc;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 15973, "the $sort key specification must be an object");
   }
   if (bson_empty(&doc)) {
      return tm_error_set(error, 15976, "$sort stage must have at least one sort key");
   }
   *state = tm_sort_new(&doc, error);
   return *state != NULL;
}

static bool
sort_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   return tm_docs_sort(docs, state);
}

static void
sort_destroy(void *state)
{
   tm_sort_destroy(state);
}

static const struct {
   const char *name;
   tm_stage_parse_fn parse;
   tm_stage_run_fn run;
   tm_stage_destroy_fn destroy;
} stage_table[] = {
   {"$match", match_parse, match_run, match_destroy},
   {"$project", project_parse, project_run, project_destroy},
   {"$unset", unset_parse, project_run, project_destroy},
   {"$addFields", tm_stage_add_fields_parse, tm_stage_add_fields_run, tm_stage_add_fields_destroy},
   {"$set", tm_stage_add_fields_parse, tm_stage_add_fields_run, tm_stage_add_fields_destroy},
   {"$sort", sort_parse, sort_run, sort_destroy},
   {"$skip", tm_stage_skip_limit_parse, tm_stage_skip_limit_run, bson_free},
   {"$limit", tm_stage_skip_limit_parse, tm_stage_skip_limit_run, bson_free},
   {"$count", tm_stage_count_parse, tm_stage_count_run, bson_free},
   {"$group", tm_stage_group_parse, tm_stage_group_run, tm_stage_group_destroy},
   {"$unwind", tm_stage_unwind_parse, tm_stage_unwind_run, tm_stage_unwind_destroy},
   {"$replaceRoot", tm_stage_replace_root_parse, tm_stage_replace_root_run,
    tm_stage_replace_root_destroy},
   {"$replaceWith", tm_stage_replace_root_parse, tm_stage_replace_root_run,
    tm_stage_replace_root_destroy},
   {"$lookup", tm_stage_lookup_parse, tm_stage_lookup_run, tm_stage_lookup_destroy},
};

/* Real MongoDB stages that the test server does not implement: refused by name. */
static const char *unsupported_stages[] = {
   "$facet",           "$out",          "$merge",     "$bucket",      "$bucketAuto",
   "$geoNear",         "$graphLookup",  "$sample",    "$sortByCount", "$redact",
   "$indexStats",      "$collStats",    "$densify",   "$fill",        "$unionWith",
   "$setWindowFields", "$search",       "$documents", "$currentOp",   "$listSessions",
   "$planCacheStats",  "$changeStream",
};

typedef struct {
   size_t kind; /* index into stage_table */
   void *state;
} stage_t;

struct _tm_pipeline_t {
   bson_t *spec;
   stage_t *stages;
   size_t n;
   bson_t *let;      /* the command's let, evaluated: name -> value */
   char **let_names; /* borrowed from `let` for the variable scopes */
   bson_value_t *let_values;
   size_t n_let;
};

static bool
stage_lookup(const char *name, size_t *kind, bson_error_t *error)
{
   for (size_t i = 0; i < sizeof stage_table / sizeof stage_table[0]; i++) {
      if (strcmp(name, stage_table[i].name) == 0) {
         *kind = i;
         return true;
      }
   }
   for (size_t i = 0; i < sizeof unsupported_stages / sizeof unsupported_stages[0]; i++) {
      if (strcmp(name, unsupported_stages[i]) == 0) {
         return tm_error_set(error, 2, "%s is not supported by the test server in this position",
                             name);
      }
   }
   return tm_error_set(error, 40324, "Unrecognized pipeline stage name: '%s'", name);
}

static bool
add_stage(tm_pipeline_t *p, const bson_iter_t *it, bson_error_t *error)
{
   bson_t stage;
   bson_iter_t s;
   stage_t *st;

   if (!BSON_ITER_HOLDS_DOCUMENT(it) ||
       !tm_value_as_bson(bson_iter_value((bson_iter_t *)it), &stage) ||
       bson_count_keys(&stage) != 1) {
      return tm_error_set(error, 40323,
                          "A pipeline stage specification object must contain exactly one field.");
   }
   bson_iter_init(&s, &stage);
   bson_iter_next(&s);
   st = &p->stages[p->n];
   if (!stage_lookup(bson_iter_key(&s), &st->kind, error)) {
      return false;
   }
   p->n++; /* counted before parsing so that a partial state is destroyed */
   return stage_table[st->kind].parse(bson_iter_key(&s), bson_iter_value(&s), &st->state, error);
}

/* Evaluates the let expressions (against an empty document) into p->let. */
static bool
eval_let(tm_pipeline_t *p, const bson_t *let, bson_error_t *error)
{
   bson_iter_t it;
   bson_t empty = BSON_INITIALIZER;
   p->let = bson_new();
   bson_iter_init(&it, let);
   while (bson_iter_next(&it)) {
      bson_value_t v;
      tm_expr_t *e = NULL;
      bool ok = tm_vars_check_name(bson_iter_key(&it), error) &&
                (e = tm_expr_parse(bson_iter_value(&it), error)) &&
                tm_expr_eval(e, &empty, &v, error);
      tm_expr_destroy(e);
      if (!ok) {
         return false;
      }
      if (v.value_type == BSON_TYPE_EOD) {
         bson_append_null(p->let, bson_iter_key(&it), -1);
      } else {
         bson_append_value(p->let, bson_iter_key(&it), -1, &v);
      }
      bson_value_destroy(&v);
   }
   p->n_let = bson_count_keys(p->let);
   p->let_names = bson_malloc0((p->n_let + 1) * sizeof(char *));
   p->let_values = bson_malloc0((p->n_let + 1) * sizeof(bson_value_t));
   bson_iter_init(&it, p->let);
   for (size_t i = 0; bson_iter_next(&it); i++) {
      p->let_names[i] = (char *)bson_iter_key(&it);
      p->let_values[i] = *bson_iter_value(&it);
   }
   return true;
}

tm_pipeline_t *
tm_pipeline_new_let(const bson_t *pipeline, const bson_t *let, bson_error_t *error)
{
   tm_pipeline_t *p = bson_malloc0(sizeof *p);
   bson_iter_t it;
   size_t declared = 0;
   bool ok = !let || eval_let(p, let, error);

   while (ok && declared < p->n_let) {
      ok = tm_vars_declare(p->let_names[declared], error) && ++declared;
   }
   p->spec = pipeline ? bson_copy(pipeline) : bson_new();
   p->stages = bson_malloc0((bson_count_keys(p->spec) + 1) * sizeof(stage_t));
   bson_iter_init(&it, p->spec);
   while (ok && bson_iter_next(&it)) {
      ok = add_stage(p, &it, error);
   }
   tm_vars_undeclare(declared);
   if (!ok) {
      tm_pipeline_destroy(p);
      return NULL;
   }
   return p;
}

tm_pipeline_t *
tm_pipeline_new(const bson_t *pipeline, bson_error_t *error)
{
   return tm_pipeline_new_let(pipeline, NULL, error);
}

void
tm_pipeline_destroy(tm_pipeline_t *pipeline)
{
   if (!pipeline) {
      return;
   }
   for (size_t i = 0; i < pipeline->n; i++) {
      stage_table[pipeline->stages[i].kind].destroy(pipeline->stages[i].state);
   }
   bson_free(pipeline->stages);
   bson_destroy(pipeline->spec);
   bson_destroy(pipeline->let);
   bson_free(pipeline->let_names);
   bson_free(pipeline->let_values);
   bson_free(pipeline);
}

/* Runs the leading $match stages, and a $group right after them, over the caller's documents
 * in place, and fills @docs with copies of what comes out of them (or with the $group's
 * results); *first is the next stage to run. Copying every input first made an aggregation
 * over a large collection hold a copy of all of it at once (the relay's pending scanner over a
 * 1M-event backlog: ~460 MB per scan), where MongoDB streams the documents. */
static bool
run_borrowed_prefix(const tm_pipeline_t *pipeline, bson_t **in, size_t n_in, tm_docs_t *docs,
                    size_t *first, bson_error_t *error)
{
   tm_docs_t view = {bson_malloc((n_in ? n_in : 1) * sizeof(bson_t *)), 0, n_in};
   bool ok = true;

   for (size_t i = 0; i < n_in; i++) {
      view.docs[view.n++] = in[i];
   }
   while (*first < pipeline->n && stage_table[pipeline->stages[*first].kind].run == match_run) {
      size_t kept = 0;
      for (size_t i = 0; i < view.n; i++) {
         if (tm_matcher_match(pipeline->stages[*first].state, view.docs[i], NULL)) {
            view.docs[kept++] = view.docs[i];
         }
      }
      view.n = kept;
      (*first)++;
   }
   if (*first < pipeline->n &&
       stage_table[pipeline->stages[*first].kind].run == tm_stage_group_run) {
      ok = tm_stage_group_run_from(pipeline->stages[*first].state, &view, docs, error);
      (*first)++;
   } else {
      for (size_t i = 0; i < view.n; i++) {
         tm_docs_push(docs, bson_copy(view.docs[i]));
      }
   }
   bson_free(view.docs);
   return ok;
}

bool
tm_pipeline_exec(const tm_pipeline_t *pipeline, bson_t **in, size_t n_in, bson_t ***out,
                 size_t *n_out, bson_error_t *error)
{
   tm_docs_t docs = {NULL, 0, 0};

   *out = NULL;
   *n_out = 0;
   size_t bound = 0, first = 0;
   bool ok = true;
   while (ok && bound < pipeline->n_let) {
      ok = tm_vars_bind(pipeline->let_names[bound], &pipeline->let_values[bound], error) && ++bound;
   }
   ok = ok && run_borrowed_prefix(pipeline, in, n_in, &docs, &first, error);
   for (size_t i = first; ok && i < pipeline->n; i++) {
      const stage_t *st = &pipeline->stages[i];
      ok = stage_table[st->kind].run(st->state, &docs, error);
   }
   tm_vars_unbind(bound);
   if (!ok) {
      tm_docs_clear(&docs);
      bson_free(docs.docs);
      return false;
   }
   *out = docs.docs ? docs.docs : bson_malloc0(sizeof(bson_t *));
   *n_out = docs.n;
   return true;
}

static _Thread_local const tm_collections_t *current_collections;

const tm_collections_t *
tm_pipeline_collections(void)
{
   return current_collections;
}

bool
tm_pipeline_exec_env(const tm_pipeline_t *pipeline, tm_collection_fn collection, void *ctx,
                     bson_t **in, size_t n_in, bson_t ***out, size_t *n_out, bson_error_t *error)
{
   const tm_collections_t env = {collection, ctx}, *saved = current_collections;
   current_collections = collection ? &env : NULL;
   bool ok = tm_pipeline_exec(pipeline, in, n_in, out, n_out, error);
   current_collections = saved;
   return ok;
}

bool
tm_pipeline_run(const bson_t *pipeline, bson_t **in, size_t n_in, bson_t ***out, size_t *n_out,
                bson_error_t *error)
{
   tm_pipeline_t *p = tm_pipeline_new(pipeline, error);
   bool ok;

   if (!p) {
      *out = NULL;
      *n_out = 0;
      return false;
   }
   ok = tm_pipeline_exec(p, in, n_in, out, n_out, error);
   tm_pipeline_destroy(p);
   return ok;
}
