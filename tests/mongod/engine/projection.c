/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Projections, for find ({a: 1, "b.c": 1} / {a: 0}) and for $project (which may also
 * compute fields with expressions). Both share one tree of per-field nodes.
 */
#include <string.h>

#include "expr.h"
#include "projection-private.h"

typedef enum { P_INCLUDE, P_EXCLUDE, P_EXPR, P_SUB } pkind_t;

typedef struct _pnode_t pnode_t;

struct _pnode_t {
   char *name;
   pkind_t kind;
   tm_expr_t *expr;
   pnode_t **kids;
   size_t n;
};

struct _tm_projection_t {
   bson_t *spec;
   pnode_t root;
   int mode; /* 0 undecided, 1 inclusion, -1 exclusion */
   bool exclude_id;
   bool agg;
};

static void
pnode_clear(pnode_t *n)
{
   for (size_t i = 0; i < n->n; i++) {
      pnode_clear(n->kids[i]);
      bson_free(n->kids[i]);
   }
   bson_free(n->kids);
   bson_free(n->name);
   tm_expr_destroy(n->expr);
}

static pnode_t *
kid_find(const pnode_t *n, const char *name)
{
   for (size_t i = 0; i < n->n; i++) {
      if (strcmp(n->kids[i]->name, name) == 0) {
         return n->kids[i];
      }
   }
   return NULL;
}

static pnode_t *
kid_add(pnode_t *n, const char *name, pkind_t kind)
{
   pnode_t *k = bson_malloc0(sizeof *k);

   k->name = bson_strdup(name);
   k->kind = kind;
   n->kids = bson_realloc(n->kids, (n->n + 1) * sizeof(pnode_t *));
   n->kids[n->n++] = k;
   return k;
}

static bool
set_mode(tm_projection_t *p, pkind_t kind, const char *path, bson_error_t *error)
{
   int want = kind == P_EXCLUDE ? -1 : 1;

   if (p->mode == 0 || p->mode == want) {
      p->mode = want;
      return true;
   }
   if (kind == P_EXPR) {
      return tm_error_set(error, 31252,
                          "Invalid $project :: caused by :: Cannot use expression other than "
                          "$meta in exclusion projection");
   }
   return want < 0 ? tm_error_set(error, 31254,
                                  "Cannot do exclusion on field %s in inclusion projection", path)
                   : tm_error_set(error, 31253,
                                  "Cannot do inclusion on field %s in exclusion projection", path);
}

static bool parse_level(tm_projection_t *p, pnode_t *level, const bson_t *spec, const char *prefix,
                        bson_error_t *error);

static bool
parse_value(tm_projection_t *p, pnode_t *node, const bson_value_t *v, const char *path,
            bson_error_t *error)
{
   bool top_id = strcmp(path, "_id") == 0;
   bson_t sub;

   if (v->value_type == BSON_TYPE_BOOL || tm_value_is_number(v)) {
      node->kind = tm_value_truthy(v) ? P_INCLUDE : P_EXCLUDE;
      if (top_id) {
         p->exclude_id = node->kind == P_EXCLUDE;
         return true;
      }
      return set_mode(p, node->kind, path, error);
   }
   if (v->value_type == BSON_TYPE_DOCUMENT && !tm_is_operator_doc(v)) {
      tm_value_as_bson(v, &sub);
      if (bson_empty(&sub)) {
         return tm_error_set(error, 51270,
                             "An empty sub-projection is not a valid value. Found empty object "
                             "at path %s",
                             path);
      }
      node->kind = P_SUB;
      return parse_level(p, node, &sub, path, error);
   }
   if (v->value_type == BSON_TYPE_DOCUMENT && !p->agg) {
      bson_t ops;
      bson_iter_t it;
      tm_value_as_bson(v, &ops);
      bson_iter_init(&it, &ops);
      bson_iter_next(&it);
      if (strcmp(bson_iter_key(&it), "$slice") == 0 ||
          strcmp(bson_iter_key(&it), "$elemMatch") == 0 ||
          strcmp(bson_iter_key(&it), "$meta") == 0) {
         return tm_error_set(error, 2, "projection operator %s is not supported by the test server",
                             bson_iter_key(&it));
      }
   }
   node->kind = P_EXPR;
   node->expr = tm_expr_parse(v, error);
   return node->expr && set_mode(p, P_EXPR, path, error);
}

/* Adds one (possibly dotted) field of a projection spec to `level`. */
static bool
parse_field(tm_projection_t *p, pnode_t *level, const char *key, const bson_value_t *v,
            const char *prefix, bson_error_t *error)
{
   tm_path_t path = {0};
   pnode_t *node = level;
   char *full = prefix ? bson_strdup_printf("%s.%s", prefix, key) : bson_strdup(key);
   bool ok = false;

   if (key[0] == '$' || !tm_path_parse(key, &path)) {
      tm_error_set(error, 16410, "FieldPath field names may not start with '$' or be empty: %s",
                   full);
      tm_path_destroy(&path);
      bson_free(full);
      return false;
   }
   if (strcmp(path.parts[path.n - 1], "$") == 0) {
      tm_error_set(error, 2, "positional projection ('%s') is not supported by the test server",
                   full);
      goto done;
   }
   for (size_t i = 0; i < path.n; i++) {
      pnode_t *k = kid_find(node, path.parts[i]);
      if (k && (i + 1 == path.n || k->kind != P_SUB)) {
         tm_error_set(error, 31250, "Path collision at %s", full);
         goto done;
      }
      node = k ? k : kid_add(node, path.parts[i], P_SUB);
   }
   ok = parse_value(p, node, v, full, error);
done:
   tm_path_destroy(&path);
   bson_free(full);
   return ok;
}

static bool
parse_level(tm_projection_t *p, pnode_t *level, const bson_t *spec, const char *prefix,
            bson_error_t *error)
{
   bson_iter_t it;

   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      if (!parse_field(p, level, bson_iter_key(&it), bson_iter_value(&it), prefix, error)) {
         return false;
      }
   }
   return true;
}

tm_projection_t *
tm_projection_new_ex(const bson_t *spec, bool agg, bson_error_t *error)
{
   tm_projection_t *p = bson_malloc0(sizeof *p);

   p->agg = agg;
   p->spec = spec ? bson_copy(spec) : bson_new();
   if (!parse_level(p, &p->root, p->spec, NULL, error)) {
      tm_projection_destroy(p);
      return NULL;
   }
   return p;
}

tm_projection_t *
tm_projection_new(const bson_t *projection, bson_error_t *error)
{
   return tm_projection_new_ex(projection, false, error);
}

void
tm_projection_destroy(tm_projection_t *projection)
{
   if (!projection) {
      return;
   }
   pnode_clear(&projection->root);
   bson_destroy(projection->spec);
   bson_free(projection);
}

bool
tm_projection_is_empty(const tm_projection_t *p)
{
   return p->root.n == 0 && !p->exclude_id;
}

typedef struct {
   const tm_projection_t *p;
   const bson_t *root;
   bson_error_t *error;
   bool failed;
} actx_t;

static void incl_level(actx_t *c, const pnode_t *level, const bson_t *src, bson_t *out, bool top);
static void excl_level(actx_t *c, const pnode_t *level, const bson_t *src, bson_t *out, bool top);

/* Applies a sub-projection to each element of an array: documents are projected, nested
 * arrays recursed into, and other values dropped (inclusion) or kept (exclusion). */
static void
apply_array(actx_t *c, const pnode_t *level, const bson_value_t *v, bson_t *out, bool incl)
{
   bson_t arr, child;
   bson_iter_t it;
   uint32_t k = 0;

   tm_value_as_bson(v, &arr);
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      char buf[16];
      const char *key;
      bson_t sub;
      bson_uint32_to_string(k, &key, buf, sizeof buf);
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         tm_value_as_bson(bson_iter_value(&it), &sub);
         bson_append_document_begin(out, key, -1, &child);
         if (incl) {
            incl_level(c, level, &sub, &child, false);
         } else {
            excl_level(c, level, &sub, &child, false);
         }
         bson_append_document_end(out, &child);
      } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_append_array_begin(out, key, -1, &child);
         apply_array(c, level, bson_iter_value(&it), &child, incl);
         bson_append_array_end(out, &child);
      } else if (!incl) {
         bson_append_value(out, key, -1, bson_iter_value(&it));
      } else {
         continue;
      }
      k++;
   }
}

static bool
has_expr(const pnode_t *n)
{
   if (n->kind == P_EXPR) {
      return true;
   }
   for (size_t i = 0; i < n->n; i++) {
      if (has_expr(n->kids[i])) {
         return true;
      }
   }
   return false;
}

static void
incl_field(actx_t *c, const pnode_t *kid, bson_iter_t *it, bson_t *out)
{
   bson_t sub, child;
   const char *key = bson_iter_key(it);

   if (kid->kind == P_INCLUDE) {
      bson_append_value(out, key, -1, bson_iter_value(it));
   } else if (BSON_ITER_HOLDS_DOCUMENT(it)) {
      tm_value_as_bson(bson_iter_value(it), &sub);
      bson_append_document_begin(out, key, -1, &child);
      incl_level(c, kid, &sub, &child, false);
      bson_append_document_end(out, &child);
   } else if (BSON_ITER_HOLDS_ARRAY(it)) {
      bson_append_array_begin(out, key, -1, &child);
      apply_array(c, kid, bson_iter_value(it), &child, true);
      bson_append_array_end(out, &child);
   }
}

/* Computed fields come after the included ones, in the order of the specification. */
static void
incl_computed(actx_t *c, const pnode_t *level, const bson_t *src, bson_t *out)
{
   for (size_t i = 0; i < level->n && !c->failed; i++) {
      const pnode_t *kid = level->kids[i];
      bson_iter_t it;
      if (kid->kind == P_EXPR) {
         bson_value_t v;
         if (!tm_expr_eval(kid->expr, c->root, &v, c->error)) {
            c->failed = true;
            return;
         }
         if (v.value_type != BSON_TYPE_EOD) {
            bson_append_value(out, kid->name, -1, &v);
         }
         bson_value_destroy(&v);
      } else if (kid->kind == P_SUB && has_expr(kid) &&
                 !(bson_iter_init_find(&it, src, kid->name) &&
                   (BSON_ITER_HOLDS_DOCUMENT(&it) || BSON_ITER_HOLDS_ARRAY(&it)))) {
         bson_t empty = BSON_INITIALIZER, child;
         bson_append_document_begin(out, kid->name, -1, &child);
         incl_computed(c, kid, &empty, &child);
         bson_append_document_end(out, &child);
      }
   }
}

static void
incl_level(actx_t *c, const pnode_t *level, const bson_t *src, bson_t *out, bool top)
{
   bson_iter_t it;

   bson_iter_init(&it, src);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const pnode_t *kid = kid_find(level, key);
      if (top && strcmp(key, "_id") == 0 &&
          (!kid || kid->kind == P_INCLUDE || kid->kind == P_EXCLUDE)) {
         if (!c->p->exclude_id) {
            bson_append_value(out, key, -1, bson_iter_value(&it));
         }
         continue;
      }
      if (kid && kid->kind != P_EXPR && kid->kind != P_EXCLUDE) {
         incl_field(c, kid, &it, out);
      }
   }
   incl_computed(c, level, src, out);
}

static void
excl_level(actx_t *c, const pnode_t *level, const bson_t *src, bson_t *out, bool top)
{
   bson_iter_t it;

   bson_iter_init(&it, src);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const pnode_t *kid = kid_find(level, key);
      bson_t sub, child;
      if (top && strcmp(key, "_id") == 0 && c->p->exclude_id) {
         continue;
      }
      if (!kid || kid->kind == P_INCLUDE) {
         bson_append_value(out, key, -1, bson_iter_value(&it));
      } else if (kid->kind == P_EXCLUDE) {
         continue;
      } else if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         tm_value_as_bson(bson_iter_value(&it), &sub);
         bson_append_document_begin(out, key, -1, &child);
         excl_level(c, kid, &sub, &child, false);
         bson_append_document_end(out, &child);
      } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_append_array_begin(out, key, -1, &child);
         apply_array(c, kid, bson_iter_value(&it), &child, false);
         bson_append_array_end(out, &child);
      } else {
         bson_append_value(out, key, -1, bson_iter_value(&it));
      }
   }
}

bool
tm_projection_apply_ex(const tm_projection_t *p, const bson_t *doc, bson_t *out,
                       bson_error_t *error)
{
   actx_t c = {p, doc, error, false};

   bson_init(out);
   if (p->mode > 0 || (p->mode == 0 && !p->exclude_id && p->root.n > 0)) {
      incl_level(&c, &p->root, doc, out, true);
   } else {
      excl_level(&c, &p->root, doc, out, true);
   }
   return !c.failed;
}

void
tm_projection_apply(const tm_projection_t *projection, const bson_t *doc, bson_t *out)
{
   bson_error_t error;

   if (!tm_projection_apply_ex(projection, doc, out, &error)) {
      /* Expressions in find projections that fail leave the fields out. */
      return;
   }
}
