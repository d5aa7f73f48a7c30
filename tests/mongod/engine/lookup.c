/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The $lookup stage, in its three MongoDB 6.0 forms: equality ({from, localField,
 * foreignField, as}), pipeline ({from, let, pipeline, as}) and both at once (the equality
 * selects the foreign documents the pipeline then runs on). The foreign collection comes
 * from tm_pipeline_exec_env's callback; `let` variables are evaluated on each input
 * document and bound (vars.c) while its sub-pipeline runs, which was parsed with them
 * declared. Argument checks and messages follow DocumentSourceLookUp::createFromBson.
 */
#include <string.h>

#include "expr.h"
#include "pipeline-private.h"

typedef struct {
   char *from, *as, *local, *foreign;
   char **let_names;
   tm_expr_t **let_exprs;
   size_t n_let;
   tm_pipeline_t *pipeline; /* NULL for the equality form */
} lookup_t;

void
tm_stage_lookup_destroy(void *state)
{
   lookup_t *l = state;
   if (!l) {
      return;
   }
   for (size_t i = 0; i < l->n_let; i++) {
      bson_free(l->let_names[i]);
      tm_expr_destroy(l->let_exprs[i]);
   }
   bson_free(l->let_names);
   bson_free(l->let_exprs);
   bson_free(l->from);
   bson_free(l->as);
   bson_free(l->local);
   bson_free(l->foreign);
   tm_pipeline_destroy(l->pipeline);
   bson_free(l);
}

static bool
parse_let(lookup_t *l, const bson_iter_t *it, bson_error_t *error)
{
   bson_t let;
   bson_iter_t v;
   if (!BSON_ITER_HOLDS_DOCUMENT(it) ||
       !tm_value_as_bson(bson_iter_value((bson_iter_t *)it), &let)) {
      return tm_error_set(error, 9, "$lookup argument 'let' must be an object, is type %s",
                          tm_type_name(bson_iter_type(it)));
   }
   bson_iter_init(&v, &let);
   while (bson_iter_next(&v)) {
      l->let_names = bson_realloc(l->let_names, (l->n_let + 1) * sizeof(char *));
      l->let_exprs = bson_realloc(l->let_exprs, (l->n_let + 1) * sizeof(tm_expr_t *));
      l->let_names[l->n_let] = bson_strdup(bson_iter_key(&v));
      l->let_exprs[l->n_let] = NULL;
      l->n_let++;
      if (!tm_vars_check_name(bson_iter_key(&v), error) ||
          !(l->let_exprs[l->n_let - 1] = tm_expr_parse(bson_iter_value(&v), error))) {
         return false;
      }
   }
   return true;
}

/* The sub-pipeline, parsed with the `let` names in scope. */
static bool
parse_pipeline(lookup_t *l, const bson_iter_t *it, bson_error_t *error)
{
   bson_t arr;
   size_t declared = 0;
   bool ok = true;
   if (!BSON_ITER_HOLDS_ARRAY(it) || !tm_value_as_bson(bson_iter_value((bson_iter_t *)it), &arr)) {
      return tm_error_set(error, 14, "'pipeline' option must be specified as an array");
   }
   while (ok && declared < l->n_let) {
      ok = tm_vars_declare(l->let_names[declared], error) && ++declared;
   }
   if (ok) {
      l->pipeline = tm_pipeline_new(&arr, error);
      ok = l->pipeline != NULL;
   }
   tm_vars_undeclare(declared);
   return ok;
}

static bool
parse_string_arg(const bson_iter_t *it, char **out, bson_error_t *error)
{
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      return tm_error_set(error, 9, "$lookup argument '%s' must be a string, is type %s",
                          bson_iter_key(it), tm_type_name(bson_iter_type(it)));
   }
   bson_free(*out);
   *out = bson_strdup(bson_iter_utf8(it, NULL));
   return true;
}

static bool
parse_args(lookup_t *l, const bson_t *spec, bson_iter_t *let, bson_iter_t *pipeline, bool *has_let,
           bool *has_pipeline, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      char **target = strcmp(k, "from") == 0           ? &l->from
                      : strcmp(k, "as") == 0           ? &l->as
                      : strcmp(k, "localField") == 0   ? &l->local
                      : strcmp(k, "foreignField") == 0 ? &l->foreign
                                                       : NULL;
      if (strcmp(k, "let") == 0) {
         *let = it;
         *has_let = true;
      } else if (strcmp(k, "pipeline") == 0) {
         *pipeline = it;
         *has_pipeline = true;
      } else if (!target) {
         return tm_error_set(error, 9, "unknown argument to $lookup: %s", k);
      } else if (!parse_string_arg(&it, target, error)) {
         return false;
      }
   }
   return true;
}

bool
tm_stage_lookup_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   lookup_t *l = bson_malloc0(sizeof *l);
   bson_t doc;
   bson_iter_t let, pipeline;
   bool has_let = false, has_pipeline = false;
   *state = l;
   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 9, "the $lookup specification must be an Object");
   }
   if (!parse_args(l, &doc, &let, &pipeline, &has_let, &has_pipeline, error)) {
      return false;
   }
   if (!l->as || !*l->as) {
      return tm_error_set(error, 9, "must specify 'as' field for a $lookup");
   }
   if (!l->from) {
      return tm_error_set(error, 9, "must specify 'from' field for a $lookup");
   }
   if (!l->local != !l->foreign) {
      return tm_error_set(error, 9,
                          has_pipeline ? "$lookup requires both or neither of 'localField' and "
                                         "'foreignField' to be specified"
                                       : "$lookup requires either 'pipeline' or both "
                                         "'localField' and 'foreignField' to be specified");
   }
   if (!has_pipeline && !l->local) {
      return tm_error_set(error, 9,
                          "$lookup requires either 'pipeline' or both 'localField' "
                          "and 'foreignField' to be specified");
   }
   if (has_let && !has_pipeline) {
      return tm_error_set(error, 9,
                          "$lookup with a 'let' argument must also specify "
                          "'pipeline'");
   }
   return (!has_let || parse_let(l, &let, error)) &&
          (!has_pipeline || parse_pipeline(l, &pipeline, error));
}

/* ---- running ---------------------------------------------------------------------------- */

typedef struct {
   bson_t *values;
   uint32_t n;
} values_t;

static bool
collect_value(const bson_value_t *value, int32_t index, void *ctx)
{
   values_t *v = ctx;
   char buf[16];
   const char *key;
   if (value && value->value_type != BSON_TYPE_ARRAY) {
      bson_uint32_to_string(v->n++, &key, buf, sizeof buf);
      bson_append_value(v->values, key, -1, value);
   }
   return false;
}

/* {foreignField: {$in: [the local values]}}; a missing local field matches null/missing. */
static tm_matcher_t *
equality_matcher(const lookup_t *l, const bson_t *doc, bson_error_t *error)
{
   tm_path_t path;
   bson_t filter = BSON_INITIALIZER, cond, values;
   values_t v = {&values, 0};
   bson_append_document_begin(&filter, l->foreign, -1, &cond);
   bson_append_array_begin(&cond, "$in", 3, &values);
   tm_path_parse(l->local, &path);
   tm_path_visit(doc, &path, true, collect_value, &v);
   tm_path_destroy(&path);
   if (v.n == 0) {
      bson_append_null(&values, "0", 1);
   }
   bson_append_array_end(&cond, &values);
   bson_append_document_end(&filter, &cond);
   tm_matcher_t *m = tm_matcher_new(&filter, error);
   bson_destroy(&filter);
   return m;
}

/* The `as` array for one input document. */
static bool
lookup_one(const lookup_t *l, bson_t **foreign, size_t n_foreign, bson_t **doc, bson_error_t *error)
{
   bson_t **candidates = bson_malloc((n_foreign + 1) * sizeof(bson_t *)), **res = NULL;
   size_t n = 0, n_res = 0, bound = 0;
   bson_value_t *vals = bson_malloc0((l->n_let + 1) * sizeof *vals);
   tm_matcher_t *m = l->local ? equality_matcher(l, *doc, error) : NULL;
   bool ok = !l->local || m;
   for (size_t i = 0; ok && i < n_foreign; i++) {
      if (!m || tm_matcher_match(m, foreign[i], NULL)) {
         candidates[n++] = foreign[i];
      }
   }
   for (size_t i = 0; ok && i < l->n_let; i++) {
      ok = tm_expr_eval(l->let_exprs[i], *doc, &vals[i], error);
   }
   while (ok && bound < l->n_let) {
      ok = tm_vars_bind(l->let_names[bound], &vals[bound], error) && ++bound;
   }
   if (ok && l->pipeline) {
      ok = tm_pipeline_exec(l->pipeline, candidates, n, &res, &n_res, error);
   }
   tm_vars_unbind(bound);
   if (ok) {
      bson_t arr = BSON_INITIALIZER;
      bson_value_t v;
      for (size_t i = 0; i < (l->pipeline ? n_res : n); i++) {
         char buf[16];
         const char *key;
         bson_uint32_to_string((uint32_t)i, &key, buf, sizeof buf);
         bson_append_document(&arr, key, -1, l->pipeline ? res[i] : candidates[i]);
      }
      tm_value_from_bson(&arr, BSON_TYPE_ARRAY, &v);
      tm_doc_set_path(doc, l->as, &v);
      bson_value_destroy(&v);
   }
   for (size_t i = 0; i < l->n_let; i++) {
      bson_value_destroy(&vals[i]);
   }
   bson_free(vals);
   tm_docs_free(res, n_res);
   tm_matcher_destroy(m);
   bson_free(candidates);
   return ok;
}

bool
tm_stage_lookup_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   const lookup_t *l = state;
   const tm_collections_t *env = tm_pipeline_collections();
   bson_t **foreign = NULL;
   size_t n_foreign = 0;
   bool ok = true;
   if (!env) {
      return tm_error_set(error, 2,
                          "$lookup is not supported by test-mongod here (no "
                          "collections to read)");
   }
   if (!env->fn(env->ctx, l->from, &foreign, &n_foreign, error)) {
      return false;
   }
   for (size_t i = 0; ok && i < docs->n; i++) {
      ok = lookup_one(l, foreign, n_foreign, &docs->docs[i], error);
   }
   bson_free(foreign);
   return ok;
}
