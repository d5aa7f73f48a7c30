/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Upsert seeding: the document an upsert starts from, built from a filter's equalities.
 */
#include <stdlib.h>
#include <string.h>

#include "tree.h"

typedef struct {
   const char *path;
   bson_value_t value;
} eq_t;

typedef struct {
   eq_t *items;
   size_t n, cap;
} eqs_t;

static void
eqs_add(eqs_t *e, const char *path, const bson_value_t *v)
{
   if (e->n == e->cap) {
      e->cap = e->cap ? e->cap * 2 : 8;
      e->items = bson_realloc(e->items, e->cap * sizeof(eq_t));
   }
   e->items[e->n].path = path;
   e->items[e->n].value = *v;
   e->n++;
}

/* Collects `{field: value}` and `{field: {$eq: value}}` of a filter and of its $and. */
static void
collect(const bson_t *filter, eqs_t *e)
{
   bson_iter_t it;

   if (!bson_iter_init(&it, filter)) {
      return;
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const bson_value_t *v = bson_iter_value(&it);
      bson_t sub;
      if (strcmp(key, "$and") == 0 && BSON_ITER_HOLDS_ARRAY(&it)) {
         bson_iter_t arr;
         bson_iter_recurse(&it, &arr);
         while (bson_iter_next(&arr)) {
            if (tm_value_as_bson(bson_iter_value(&arr), &sub)) {
               collect(&sub, e);
            }
         }
      } else if (key[0] == '$' || v->value_type == BSON_TYPE_REGEX) {
         continue;
      } else if (v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &sub)) {
         bson_iter_t ops;
         bson_iter_init(&ops, &sub);
         if (!bson_iter_next(&ops) || bson_iter_key(&ops)[0] != '$') {
            eqs_add(e, key, v);
         } else if (bson_iter_init_find(&ops, &sub, "$eq")) {
            eqs_add(e, key, bson_iter_value(&ops));
         }
      } else {
         eqs_add(e, key, v);
      }
   }
}

static int
eq_cmp(const void *x, const void *y)
{
   const eq_t *a = x, *b = y;

   /* _id first, then the other paths in lexicographic order (as MongoDB 5.0+ builds it). */
   if (strcmp(a->path, "_id") == 0 || strcmp(b->path, "_id") == 0) {
      return strcmp(a->path, "_id") == 0 ? -1 : 1;
   }
   return strcmp(a->path, b->path);
}

static bool
check_conflicts(const eqs_t *e, bson_error_t *error)
{
   for (size_t i = 0; i + 1 < e->n; i++) {
      const char *a = e->items[i].path, *b = e->items[i + 1].path;
      size_t la = strlen(a);
      if (strcmp(a, b) == 0) {
         return tm_error_set(error, 54,
                             "cannot infer query fields to set, path '%s' is matched twice", a);
      }
      if (strncmp(a, b, la) == 0 && b[la] == '.') {
         return tm_error_set(error, 54,
                             "cannot infer query fields to set, both paths '%s' and '%s' are "
                             "matched",
                             b, a);
      }
   }
   return true;
}

static void
set_path(tm_tnode_t *root, const char *dotted, const bson_value_t *v)
{
   tm_path_t path;
   tm_tnode_t *node = root;

   tm_path_parse(dotted, &path);
   for (size_t i = 0; i < path.n; i++) {
      tm_tnode_t *child = tm_tree_child(node, path.parts[i], NULL);
      if (!child) {
         child = tm_tnode_new(path.parts[i], NULL);
         tm_tree_insert(node, node->n, child);
         tm_tree_set_empty(child, BSON_TYPE_DOCUMENT);
      }
      if (i + 1 == path.n) {
         tm_tree_set_value(child, v);
      }
      node = child;
   }
   tm_path_destroy(&path);
}

bool
tm_filter_upsert_seed(const bson_t *filter, bson_t *seed, bson_error_t *error)
{
   eqs_t e = {NULL, 0, 0};
   bson_t empty = BSON_INITIALIZER;
   tm_tnode_t *root;
   bool ok = false;

   if (filter) {
      collect(filter, &e);
   }
   if (e.n) {
      qsort(e.items, e.n, sizeof(eq_t), eq_cmp);
   }
   if (!check_conflicts(&e, error)) {
      goto done;
   }
   root = tm_tree_new(&empty);
   tm_tree_expand(root);
   for (size_t i = 0; i < e.n; i++) {
      set_path(root, e.items[i].path, &e.items[i].value);
   }
   tm_tree_to_bson(root, seed);
   tm_tree_destroy(root);
   ok = true;
done:
   bson_free(e.items);
   return ok;
}
