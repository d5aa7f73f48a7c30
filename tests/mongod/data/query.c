/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Selecting a collection's documents for reads and writes (the O(1) path for _id equality,
 * hinted indexes), sorting a selection, hint and collation checks, views refused for writes,
 * _id placement. Pure functions over the store; callers hold the server lock.
 */
#include "data/query.h"

#include <stdlib.h>
#include <string.h>

/* True if `filter` pins _id to one value by equality, so a hash lookup finds the only
 * candidate (which the matcher then checks against the whole filter). */
static bool
id_equality(const bson_t *filter, bson_value_t *id)
{
   bson_iter_t it, sub;
   if (!filter || !bson_iter_init_find(&it, filter, "_id")) {
      return false;
   }
   bson_type_t t = bson_iter_type(&it);
   if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX) {
      return false;
   }
   if (t == BSON_TYPE_DOCUMENT) {
      if (!bson_iter_recurse(&it, &sub)) {
         return false;
      }
      if (bson_iter_next(&sub) && bson_iter_key(&sub)[0] == '$') {
         if (strcmp(bson_iter_key(&sub), "$eq") != 0 || bson_iter_next(&sub)) {
            return false;
         }
         bson_iter_recurse(&it, &sub);
         bson_iter_next(&sub);
         t = bson_iter_type(&sub);
         if (t == BSON_TYPE_ARRAY || t == BSON_TYPE_REGEX) {
            return false;
         }
         *id = *bson_iter_value(&sub);
         return true;
      }
   }
   *id = *bson_iter_value(&it);
   return true;
}

static void
add(md_selection_t *sel, size_t *cap, md_doc_t *d, int32_t pos)
{
   if (sel->n == *cap) {
      *cap = *cap ? *cap * 2 : 16;
      sel->docs = realloc(sel->docs, *cap * sizeof *sel->docs);
      sel->positional = realloc(sel->positional, *cap * sizeof *sel->positional);
   }
   sel->docs[sel->n] = d;
   sel->positional[sel->n++] = pos;
}

void
md_select(md_coll_t *coll, const md_index_t *hint, const tm_matcher_t *m, const bson_t *filter,
          size_t limit, md_selection_t *sel)
{
   size_t cap = 0;
   bson_value_t id;
   int32_t pos = -1;
   memset(sel, 0, sizeof *sel);
   if (!coll) {
      return;
   }
   if (!coll->is_snapshot && id_equality(filter, &id)) {
      md_doc_t *d = md_coll_find_id(coll, &id);
      if (d && (!hint || md_index_contains(hint, d->bson)) && tm_matcher_match(m, d->bson, &pos)) {
         add(sel, &cap, d, pos);
      }
      return;
   }
   for (md_doc_t *d = coll->head; d && (limit == 0 || sel->n < limit); d = d->next) {
      pos = -1;
      if ((!hint || md_index_contains(hint, d->bson)) && tm_matcher_match(m, d->bson, &pos)) {
         add(sel, &cap, d, pos);
      }
   }
}

void
md_selection_destroy(md_selection_t *sel)
{
   free(sel->docs);
   free(sel->positional);
   memset(sel, 0, sizeof *sel);
}

typedef struct {
   md_doc_t *doc;
   int32_t pos;
   size_t order;
} item_t;

static int
cmp_items(const void *a, const void *b, void *ctx)
{
   const item_t *x = a, *y = b;
   int c = tm_sort_compare(ctx, x->doc->bson, y->doc->bson);
   if (c == 0) {
      c = x->order < y->order ? -1 : x->order > y->order;
   }
   return c;
}

void
md_selection_sort(md_selection_t *sel, const tm_sort_t *sort)
{
   if (!sort || sel->n < 2) {
      return;
   }
   item_t *items = malloc(sel->n * sizeof *items);
   for (size_t i = 0; i < sel->n; i++) {
      items[i] = (item_t){sel->docs[i], sel->positional[i], i};
   }
   qsort_r(items, sel->n, sizeof *items, cmp_items, (void *)sort);
   for (size_t i = 0; i < sel->n; i++) {
      sel->docs[i] = items[i].doc;
      sel->positional[i] = items[i].pos;
   }
   free(items);
}

/* {$natural: 1}: a collection scan, which is what test-mongod does anyway. Returns the
 * direction, or 0 if `v` is not a $natural hint. */
static int
natural_direction(const bson_value_t *v)
{
   bson_iter_t it;
   if (!bson_iter_init_from_data(&it, v->value.v_doc.data, v->value.v_doc.data_len) ||
       !bson_iter_next(&it) || strcmp(bson_iter_key(&it), "$natural") != 0) {
      return 0;
   }
   return BSON_ITER_HOLDS_NUMBER(&it) && bson_iter_as_int64(&it) < 0 ? -1 : 1;
}

bool
md_check_hint(const md_coll_t *coll, const bson_t *spec, const md_index_t **hinted,
              bson_error_t *error)
{
   bson_iter_t it;
   const md_index_t *ix;
   if (hinted) {
      *hinted = NULL;
   }
   if (!bson_iter_init_find(&it, spec, "hint")) {
      return true;
   }
   const bson_value_t *v = bson_iter_value(&it);
   if (v->value_type != BSON_TYPE_UTF8 && v->value_type != BSON_TYPE_DOCUMENT) {
      return tm_error_set(error, 9, "hint must be a string or an object");
   }
   if (v->value_type == BSON_TYPE_DOCUMENT && v->value.v_doc.data_len <= 5) {
      return true; /* {} means no hint */
   }
   int natural = v->value_type == BSON_TYPE_DOCUMENT ? natural_direction(v) : 0;
   if (natural < 0) {
      return tm_error_set(error, 2,
                          "hint {$natural: -1} (reverse natural order) is not "
                          "supported by test-mongod");
   }
   if (natural > 0) {
      return true;
   }
   if (!coll || (ix = md_coll_find_index(coll, v))) {
      if (hinted && coll) {
         *hinted = ix;
      }
      return true;
   }
   return tm_error_set(error, 2,
                       "error processing query: planner returned error :: caused by "
                       ":: hint provided does not correspond to an existing index");
}

bool
md_check_collation(const bson_t *spec, bson_error_t *error)
{
   bson_iter_t it, sub;
   if (!bson_iter_init_find(&it, spec, "collation")) {
      return true;
   }
   if (BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &sub) &&
       bson_iter_find(&sub, "locale") && BSON_ITER_HOLDS_UTF8(&sub) &&
       strcmp(bson_iter_utf8(&sub, NULL), "simple") == 0) {
      return true;
   }
   return tm_error_set(error, 2,
                       "collation is not supported by test-mongod (only "
                       "{locale: \"simple\"})");
}

/* Whether "_id" is the first key of @doc and its only one: the document is then already in
 * the form md_doc_with_id_first gives, and a plain copy makes it (element by element, it was
 * 6% of the server's work per update). */
static bool
id_first_and_only(const bson_t *doc)
{
   bson_iter_t it;
   if (!bson_iter_init(&it, doc) || !bson_iter_next(&it) ||
       strcmp(bson_iter_key(&it), "_id") != 0) {
      return false;
   }
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "_id") == 0) {
         return false;
      }
   }
   return true;
}

bson_t *
md_doc_with_id_first(const bson_t *doc, const bson_value_t *id)
{
   bson_iter_t it;
   if (id_first_and_only(doc)) {
      return bson_copy(doc);
   }
   bson_t *out = bson_new();
   if (bson_iter_init_find(&it, doc, "_id")) {
      bson_append_value(out, "_id", 3, bson_iter_value(&it));
   } else if (id) {
      bson_append_value(out, "_id", 3, id);
   } else {
      bson_oid_t oid;
      bson_oid_init(&oid, NULL);
      BSON_APPEND_OID(out, "_id", &oid);
   }
   bson_copy_to_excluding_noinit(doc, out, "_id", NULL);
   return out;
}

bool
md_check_not_view(const md_coll_t *coll, bson_error_t *error)
{
   if (coll && coll->view_on) {
      return tm_error_set(error, 166, "Namespace %s.%s is a view, not a collection", coll->db->name,
                          coll->name);
   }
   return true;
}
