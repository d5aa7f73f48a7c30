/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Stages that rewrite documents field by field: $addFields / $set, $unwind, $replaceRoot /
 * $replaceWith (they edit through the update tree, tree.h); and $skip, $limit, $count.
 */
#include <math.h>
#include <string.h>

#include "expr.h"
#include "pipeline-private.h"
#include "tree.h"

/* Sets (or with a NULL value removes) a dotted path, replacing non-documents on the way. */
static void
tree_set(tm_tnode_t *root, const char *dotted, const bson_value_t *v)
{
   tm_path_t path;
   tm_tnode_t *node = root;

   tm_path_parse(dotted, &path);
   for (size_t i = 0; i < path.n; i++) {
      size_t idx;
      tm_tnode_t *child = tm_tree_child(node, path.parts[i], &idx);
      bool last = i + 1 == path.n;
      if (last && !v) {
         if (child && node->value.value_type == BSON_TYPE_DOCUMENT) {
            tm_tree_destroy(tm_tree_detach(node, idx));
         }
         break;
      }
      if (!child) {
         if (!v) {
            break;
         }
         child = tm_tnode_new(path.parts[i], NULL);
         tm_tree_insert(node, node->n, child);
      }
      if (last) {
         tm_tree_set_value(child, v);
      } else if (child->value.value_type != BSON_TYPE_DOCUMENT) {
         tm_tree_set_empty(child, BSON_TYPE_DOCUMENT);
      }
      node = child;
   }
   tm_path_destroy(&path);
}

void
tm_doc_set_path(bson_t **doc, const char *dotted, const bson_value_t *value)
{
   tm_tnode_t *root = tm_tree_new(*doc);
   bson_t *out = bson_new();
   tm_tree_expand(root);
   tree_set(root, dotted, value);
   tm_tree_to_bson(root, out);
   tm_tree_destroy(root);
   bson_destroy(*doc);
   *doc = out;
}

typedef struct {
   char **paths;
   tm_expr_t **exprs;
   size_t n;
} fields_t;

static void
fields_clear(fields_t *f)
{
   for (size_t i = 0; i < f->n; i++) {
      bson_free(f->paths[i]);
      tm_expr_destroy(f->exprs[i]);
   }
   bson_free(f->paths);
   bson_free(f->exprs);
}

/* Flattens {a: {b: expr}} into "a.b": expr; operator documents are expressions. */
static bool
fields_parse(fields_t *f, const bson_t *spec, const char *prefix, bson_error_t *error)
{
   bson_iter_t it;

   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const bson_value_t *v = bson_iter_value(&it);
      char *path = prefix ? bson_strdup_printf("%s.%s", prefix, bson_iter_key(&it))
                          : bson_strdup(bson_iter_key(&it));
      bson_t sub;
      if (bson_iter_key(&it)[0] == '$') {
         bson_free(path);
         return tm_error_set(error, 16410, "FieldPath field names may not start with '$'.");
      }
      if (v->value_type == BSON_TYPE_DOCUMENT && !tm_is_operator_doc(v) &&
          tm_value_as_bson(v, &sub) && !bson_empty(&sub)) {
         bool ok = fields_parse(f, &sub, path, error);
         bson_free(path);
         if (!ok) {
            return false;
         }
         continue;
      }
      f->paths = bson_realloc(f->paths, (f->n + 1) * sizeof(char *));
      f->exprs = bson_realloc(f->exprs, (f->n + 1) * sizeof(tm_expr_t *));
      f->paths[f->n] = path;
      if (!(f->exprs[f->n] = tm_expr_parse(v, error))) {
         bson_free(path);
         return false;
      }
      f->n++;
   }
   return true;
}

/* Whether every field the stage sets is a new top-level field of @doc (and set once): the
 * result is then @doc with the values appended in order, as the tree would build it. A
 * change stream's partition stage adds one such field to every event, and rebuilding each
 * event through the tree was a tenth of the server's work on a busy stream. */
static bool
appends_only(const fields_t *f, const bson_t *doc)
{
   bson_iter_t it;
   for (size_t i = 0; i < f->n; i++) {
      if (strchr(f->paths[i], '.') || bson_iter_init_find(&it, doc, f->paths[i])) {
         return false;
      }
      for (size_t j = 0; j < i; j++) {
         if (strcmp(f->paths[i], f->paths[j]) == 0) {
            return false;
         }
      }
   }
   return true;
}

static bool
add_fields_one(const fields_t *f, bson_t **doc, bson_error_t *error)
{
   bool append = appends_only(f, *doc);
   tm_tnode_t *root = append ? NULL : tm_tree_new(*doc);
   bson_value_t *vals = bson_malloc0((f->n + 1) * sizeof(bson_value_t));
   bson_t *out = NULL;
   bool ok = true;

   if (root) {
      tm_tree_expand(root);
   }
   /* Every expression sees the input document, so evaluate all before editing. */
   for (size_t i = 0; i < f->n && ok; i++) {
      ok = tm_expr_eval(f->exprs[i], *doc, &vals[i], error);
   }
   if (ok && append) {
      /* A missing value (EOD) adds nothing, as tree_set with NULL does. */
      out = bson_copy(*doc);
      for (size_t i = 0; i < f->n; i++) {
         if (vals[i].value_type != BSON_TYPE_EOD) {
            bson_append_value(out, f->paths[i], -1, &vals[i]);
         }
      }
   } else if (ok) {
      for (size_t i = 0; i < f->n; i++) {
         tree_set(root, f->paths[i], vals[i].value_type == BSON_TYPE_EOD ? NULL : &vals[i]);
      }
      out = bson_new();
      tm_tree_to_bson(root, out);
   }
   tm_tree_destroy(root);
   for (size_t i = 0; i < f->n; i++) {
      bson_value_destroy(&vals[i]);
   }
   bson_free(vals);
   if (out) {
      bson_destroy(*doc);
      *doc = out;
   }
   return ok;
}

void
tm_stage_add_fields_destroy(void *state)
{
   if (state) {
      fields_clear(state);
      bson_free(state);
   }
}

bool
tm_stage_add_fields_parse(const char *name, const bson_value_t *spec, void **state,
                          bson_error_t *error)
{
   fields_t *f;
   bson_t doc;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 40272, "%s specification stage must be an object", name);
   }
   f = bson_malloc0(sizeof *f);
   *state = f;
   if (!fields_parse(f, &doc, NULL, error)) {
      char context[64];
      bson_snprintf(context, sizeof context, "Invalid %s", name);
      return tm_error_add_context(error, context);
   }
   return true;
}

bool
tm_stage_add_fields_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   bool ok = true;

   for (size_t i = 0; ok && i < docs->n; i++) {
      ok = add_fields_one(state, &docs->docs[i], error);
   }
   return ok;
}

typedef struct {
   const char *path;       /* without the leading '$' */
   const char *index_name; /* includeArrayIndex or NULL */
   bool preserve;
} unwind_t;

static bool
unwind_parse(const bson_value_t *spec, unwind_t *u, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   const bson_value_t *path = spec;

   memset(u, 0, sizeof *u);
   if (spec->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(spec, &doc)) {
      path = NULL;
      bson_iter_init(&it, &doc);
      while (bson_iter_next(&it)) {
         const char *k = bson_iter_key(&it);
         if (strcmp(k, "path") == 0) {
            path = bson_iter_value(&it);
         } else if (strcmp(k, "includeArrayIndex") == 0 && BSON_ITER_HOLDS_UTF8(&it)) {
            u->index_name = bson_iter_utf8(&it, NULL);
         } else if (strcmp(k, "preserveNullAndEmptyArrays") == 0 && BSON_ITER_HOLDS_BOOL(&it)) {
            u->preserve = bson_iter_bool(&it);
         } else {
            return tm_error_set(error, 28811, "unrecognized option to $unwind stage: %s", k);
         }
      }
   }
   if (!path || path->value_type != BSON_TYPE_UTF8) {
      return tm_error_set(error, 28812, "no path specified to $unwind stage");
   }
   if (path->value.v_utf8.str[0] != '$' || !path->value.v_utf8.str[1]) {
      return tm_error_set(error, 28818,
                          "path option to $unwind stage should be prefixed with a '$': %s",
                          path->value.v_utf8.str);
   }
   u->path = path->value.v_utf8.str + 1;
   return true;
}

/* Emits a copy of `doc` with the unwound path set to `elem` (NULL: unchanged). */
static void
unwind_emit(const unwind_t *u, const bson_t *doc, const bson_value_t *elem, int64_t index,
            tm_docs_t *out)
{
   tm_tnode_t *root = tm_tree_new(doc);
   bson_value_t idx;
   bson_t *res = bson_new();

   tm_tree_expand(root);
   if (elem) {
      tree_set(root, u->path, elem);
   }
   if (u->index_name) {
      idx.value_type = index < 0 ? BSON_TYPE_NULL : BSON_TYPE_INT64;
      idx.value.v_int64 = index;
      tree_set(root, u->index_name, &idx);
   }
   tm_tree_to_bson(root, res);
   tm_tree_destroy(root);
   tm_docs_push(out, res);
}

void
tm_stage_unwind_destroy(void *state)
{
   bson_free(state);
}

bool
tm_stage_unwind_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   *state = bson_malloc0(sizeof(unwind_t));
   return unwind_parse(spec, *state, error);
}

bool
tm_stage_unwind_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   const unwind_t *u = state;
   tm_docs_t out = {NULL, 0, 0};

   for (size_t i = 0; i < docs->n; i++) {
      bson_value_t v;
      bson_t arr;
      bson_iter_t it;
      bool found = tm_path_get(docs->docs[i], u->path, &v);
      if (found && v.value_type == BSON_TYPE_ARRAY && tm_value_as_bson(&v, &arr) &&
          !bson_empty(&arr)) {
         int64_t j = 0;
         bson_iter_init(&it, &arr);
         while (bson_iter_next(&it)) {
            unwind_emit(u, docs->docs[i], bson_iter_value(&it), j++, &out);
         }
      } else if (found && v.value_type != BSON_TYPE_ARRAY && v.value_type != BSON_TYPE_NULL) {
         unwind_emit(u, docs->docs[i], NULL, -1, &out); /* a scalar unwinds to itself */
      } else if (u->preserve) {
         unwind_emit(u, docs->docs[i], NULL, -1, &out);
      }
   }
   tm_docs_clear(docs);
   bson_free(docs->docs);
   *docs = out;
   return true;
}

void
tm_stage_replace_root_destroy(void *state)
{
   tm_expr_destroy(state);
}

bool
tm_stage_replace_root_parse(const char *name, const bson_value_t *spec, void **state,
                            bson_error_t *error)
{
   const bson_value_t *root_spec = spec;
   bson_t doc;
   bson_iter_t it;

   if (strcmp(name, "$replaceRoot") == 0) {
      if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc) ||
          !bson_iter_init_find(&it, &doc, "newRoot")) {
         return tm_error_set(error, 40231, "no newRoot specified for the $replaceRoot stage");
      }
      root_spec = bson_iter_value(&it);
   }
   *state = tm_expr_parse(root_spec, error);
   return *state != NULL;
}

bool
tm_stage_replace_root_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   bool ok = true;

   for (size_t i = 0; ok && i < docs->n; i++) {
      bson_value_t v;
      bson_t view;
      if (!(ok = tm_expr_eval(state, docs->docs[i], &v, error))) {
         break;
      }
      if (v.value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(&v, &view)) {
         ok = tm_error_set(error, 40228,
                           "'newRoot' expression must evaluate to an object, but resulting value "
                           "was of type %s",
                           tm_type_name(v.value_type));
      } else {
         bson_destroy(docs->docs[i]);
         docs->docs[i] = bson_copy(&view);
      }
      bson_value_destroy(&v);
   }
   return ok;
}

typedef struct {
   bool skip;
   size_t n;
} skip_limit_t;

bool
tm_stage_skip_limit_parse(const char *name, const bson_value_t *spec, void **state,
                          bson_error_t *error)
{
   bool skip = strcmp(name, "$skip") == 0;
   double d = tm_value_is_number(spec) ? tm_value_as_double(spec) : NAN;
   skip_limit_t *sl;

   if (isnan(d) || d != floor(d)) {
      return tm_error_set(error, skip ? 15972 : 15957, "the %s must be specified as a number",
                          skip ? "skip" : "limit");
   }
   if (d < 0 || (!skip && d == 0)) {
      return tm_error_set(error, skip ? 5107200 : 15958, "the %s must be %s",
                          skip ? "skip" : "limit", skip ? "non-negative" : "positive");
   }
   sl = bson_malloc0(sizeof *sl);
   sl->skip = skip;
   sl->n = d > 1e18 ? (size_t)1e18 : (size_t)d;
   *state = sl;
   return true;
}

bool
tm_stage_skip_limit_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   const skip_limit_t *sl = state;
   size_t n = sl->n > docs->n ? docs->n : sl->n;

   if (sl->skip) {
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

bool
tm_stage_count_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   const char *field;

   if (spec->value_type != BSON_TYPE_UTF8) {
      return tm_error_set(error, 40156, "the count field must be a non-empty string");
   }
   field = spec->value.v_utf8.str;
   if (!field[0]) {
      return tm_error_set(error, 40157, "the count field must be a non-empty string");
   }
   if (field[0] == '$') {
      return tm_error_set(error, 40158, "the count field cannot be a $-prefixed path");
   }
   if (strchr(field, '.')) {
      return tm_error_set(error, 40160, "the count field cannot contain '.'");
   }
   *state = bson_strdup(field);
   return true;
}

bool
tm_stage_count_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   size_t n = docs->n;
   bson_t *out;

   tm_docs_clear(docs);
   if (n > 0) {
      out = bson_new();
      if (n <= INT32_MAX) {
         bson_append_int32(out, state, -1, (int32_t)n);
      } else {
         bson_append_int64(out, state, -1, (int64_t)n);
      }
      tm_docs_push(docs, out);
   }
   return true;
}
