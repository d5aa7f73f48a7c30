/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Array operators: $push (with $each $position $sort $slice), $addToSet, $pull, $pullAll,
 * $pop. What they report in the update description differs: see tm_mark_t.
 */
#include <stdlib.h>
#include <string.h>

#include "update-private.h"

static bool
not_array(tm_apply_t *ctx, const tm_action_t *act, const char *key, const tm_tnode_t *node)
{
   const char *type = tm_type_name(node->value.value_type);
   char *id;
   bool r;

   switch (act->op) {
   case TM_U_PUSH:
      id = tm_apply_id_json(ctx);
      r = tm_error_set(ctx->error, 2,
                       "The field '%s' must be an array but is of type %s in document %s", key,
                       type, id);
      bson_free(id);
      return r;
   case TM_U_ADD_TO_SET:
      return tm_error_set(ctx->error, 2,
                          "Cannot apply $addToSet to non-array field. Field named '%s' has "
                          "non-array type %s",
                          key, type);
   case TM_U_POP:
      return tm_error_set(ctx->error, 14, "Path '%s' contains an element of non-array type '%s'",
                          key, type);
   default:
      return tm_error_set(ctx->error, 2, "Cannot apply %s to a non-array value", act->op_name);
   }
}

/* Calls fn for each value an operand adds: the $each elements, or the operand itself. */
static void
each_value(const tm_action_t *act, void (*fn)(tm_tnode_t *arr, const bson_value_t *v, void *c),
           tm_tnode_t *arr, void *c)
{
   bson_t view;
   bson_iter_t it;

   if (!act->has_each) {
      fn(arr, &act->operand, c);
      return;
   }
   if (tm_value_as_bson(&act->each, &view) && bson_iter_init(&it, &view)) {
      while (bson_iter_next(&it)) {
         fn(arr, bson_iter_value(&it), c);
      }
   }
}

static void
insert_at(tm_tnode_t *arr, const bson_value_t *v, void *c)
{
   size_t *at = c;

   tm_tree_insert(arr, (*at)++, tm_tnode_new(NULL, v));
}

static int
element_cmp(const void *x, const void *y, void *c)
{
   const tm_action_t *act = c;
   const tm_tnode_t *a = *(tm_tnode_t *const *)x, *b = *(tm_tnode_t *const *)y;
   int r;

   if (act->sort_by) {
      bson_t da = BSON_INITIALIZER, db = BSON_INITIALIZER;
      /* Non-document elements sort as if they had none of the fields. */
      if (a->value.value_type == BSON_TYPE_DOCUMENT) {
         tm_value_as_bson(&a->value, &da);
      }
      if (b->value.value_type == BSON_TYPE_DOCUMENT) {
         tm_value_as_bson(&b->value, &db);
      }
      r = tm_sort_compare(act->sort_by, &da, &db);
   } else {
      r = tm_value_compare(&a->value, &b->value) * act->sort_dir;
   }
   /* qsort is not stable; break ties by the original position. */
   return r ? r : (a->append_from < b->append_from ? -1 : 1);
}

static bool
slice(tm_tnode_t *arr, int64_t n)
{
   size_t keep = (size_t)(n < 0 ? -n : n);
   bool trimmed = arr->n > keep;

   while (arr->n > keep) {
      tm_tree_destroy(tm_tree_detach(arr, n < 0 ? 0 : arr->n - 1));
   }
   return trimmed;
}

/* Marks an array rewritten as a whole, unless its bytes did not change. */
static void
mark_whole(tm_tnode_t *arr, bool had_raw, const bson_value_t *old)
{
   bson_t tmp;
   bson_value_t now;
   bool same = false;

   if (had_raw) {
      tm_tree_value(arr, &tmp, &now);
      same = tm_value_binary_equal(&now, old);
      bson_destroy(&tmp);
   }
   if (!same && arr->mark == TM_MARK_NONE) {
      tm_tree_mark(arr, TM_MARK_WHOLE);
   }
}

/* The common case, appending to an untouched array, leaves the existing elements as bytes:
 * pushing one event onto a long array costs one node, not one per element. */
static bool
push_append_only(const tm_action_t *act, tm_tnode_t *arr)
{
   size_t old_n, at;

   if (arr->expanded || act->has_sort || act->has_slice || act->has_position) {
      return false;
   }
   old_n = tm_tree_append_only(arr);
   at = 0;
   each_value(act, insert_at, arr, &at);
   if (old_n > 0 && arr->n > 0) {
      arr->append_from = old_n;
      tm_tree_mark(arr, TM_MARK_APPEND);
   } else if (old_n == 0 && arr->n > 0) {
      tm_tree_mark(arr, TM_MARK_WHOLE);
   }
   return true;
}

static bool
op_push(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *arr, bool created)
{
   bool had_raw = !arr->expanded, trimmed = false;
   bson_value_t old = arr->value;
   size_t old_n, at;

   if (!created && push_append_only(act, arr)) {
      return true;
   }
   tm_tree_expand(arr);
   old_n = at = arr->n;
   if (act->has_position) {
      int64_t p = act->position < 0 ? (int64_t)old_n + act->position : act->position;
      at = p < 0 ? 0 : ((size_t)p > old_n ? old_n : (size_t)p);
   }
   const size_t insert_from = at;
   each_value(act, insert_at, arr, &at);
   if (act->has_sort) {
      for (size_t i = 0; i < arr->n; i++) {
         arr->kids[i]->append_from = i; /* scratch: original position for a stable sort */
      }
      qsort_r(arr->kids, arr->n, sizeof(tm_tnode_t *), element_cmp, (void *)act);
   }
   if (act->has_slice) {
      trimmed = slice(arr, act->slice);
   }
   if (created) {
      return true;
   }
   /* Plain appends to a non-empty array are reported element by element ("a.3"); anything
    * that moves or drops existing elements reports the whole array. */
   if (old_n > 0 && !act->has_sort && insert_from == old_n && !trimmed) {
      if (arr->n > old_n && arr->mark == TM_MARK_NONE) {
         arr->append_from = old_n;
         tm_tree_mark(arr, TM_MARK_APPEND);
      }
   } else {
      mark_whole(arr, had_raw, &old);
   }
   return true;
}

static void
add_unique(tm_tnode_t *arr, const bson_value_t *v, void *c)
{
   for (size_t i = 0; i < arr->n; i++) {
      if (tm_value_equal(&arr->kids[i]->value, v)) {
         return;
      }
   }
   tm_tree_insert(arr, arr->n, tm_tnode_new(NULL, v));
}

static bool
op_add_to_set(const tm_action_t *act, tm_tnode_t *arr, bool created)
{
   bool had_raw = !arr->expanded;
   bson_value_t old = arr->value;
   size_t old_n;

   tm_tree_expand(arr);
   old_n = arr->n;
   each_value(act, add_unique, arr, NULL);
   if (!created && arr->n > old_n) {
      mark_whole(arr, had_raw, &old);
   }
   return true;
}

static bool
pull_matches(const tm_action_t *act, const bson_value_t *v)
{
   bson_t view;

   if (act->op == TM_U_PULL_ALL) {
      bson_iter_t it;
      if (tm_value_as_bson(&act->operand, &view) && bson_iter_init(&it, &view)) {
         while (bson_iter_next(&it)) {
            if (tm_value_equal(bson_iter_value(&it), v)) {
               return true;
            }
         }
      }
      return false;
   }
   if (act->cond_doc_mode) {
      return v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &view) &&
             tm_mnode_match_doc(act->cond, &view, NULL);
   }
   return tm_mnode_match_value(act->cond, v);
}

/* $pull from an array still in its bytes: the elements kept are copied as bytes into a new
 * array that the update owns (ctx->owned), instead of one tree node per element that is
 * matched, freed or serialised again. The relay clears events this way from documents that
 * may hold many. Removing an element always changes the array, so it is marked whole. */
static bool
pull_raw(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *arr, const bson_t *view)
{
   bson_iter_t it;
   bson_t *kept = bson_sized_new(view->len);
   uint32_t n = 0;
   bool removed = false;

   bson_iter_init(&it, view);
   while (bson_iter_next(&it)) {
      char buf[16];
      const char *key;
      if (pull_matches(act, bson_iter_value(&it))) {
         removed = true;
         continue;
      }
      bson_uint32_to_string(n++, &key, buf, sizeof buf);
      bson_append_iter(kept, key, -1, &it);
   }
   if (!removed) {
      bson_destroy(kept);
      return true;
   }
   ctx->owned = bson_realloc(ctx->owned, (ctx->n_owned + 1) * sizeof(bson_t *));
   ctx->owned[ctx->n_owned++] = kept;
   bson_value_t now = {.value_type = BSON_TYPE_ARRAY};
   now.value.v_doc.data = (uint8_t *)bson_get_data(kept);
   now.value.v_doc.data_len = kept->len;
   tm_tree_set_value(arr, &now);
   if (arr->mark == TM_MARK_NONE) {
      tm_tree_mark(arr, TM_MARK_WHOLE);
   }
   return true;
}

static bool
op_pull(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *arr)
{
   size_t kept = 0, n;
   bson_t view;

   if (!arr->expanded && tm_value_as_bson(&arr->value, &view)) {
      return pull_raw(ctx, act, arr, &view);
   }
   tm_tree_expand(arr);
   n = arr->n;
   /* Compact in one pass so that pulling from a large array stays linear. */
   for (size_t i = 0; i < n; i++) {
      tm_tnode_t *kid = arr->kids[i];
      if (pull_matches(act, &kid->value)) {
         tm_tree_destroy(kid);
      } else {
         arr->kids[kept++] = kid;
      }
   }
   arr->n = kept;
   if (kept != n && arr->mark == TM_MARK_NONE) {
      tm_tree_mark(arr, TM_MARK_WHOLE);
   }
   return true;
}

static bool
op_pop(const tm_action_t *act, tm_tnode_t *arr)
{
   bool had_raw = !arr->expanded;
   bson_value_t old = arr->value;

   tm_tree_expand(arr);
   if (arr->n == 0) {
      return true;
   }
   tm_tree_destroy(tm_tree_detach(arr, act->pop > 0 ? arr->n - 1 : 0));
   mark_whole(arr, had_raw, &old);
   return true;
}

bool
tm_apply_array_op(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
                  tm_tnode_t *node)
{
   bool created = false;

   if (!node) {
      if (!tm_uop_creates(act->op)) {
         return true;
      }
      node = tm_apply_create(ctx, container, key);
      if (!node) {
         return false;
      }
      tm_tree_set_empty(node, BSON_TYPE_ARRAY);
      created = true;
   } else if (node->value.value_type != BSON_TYPE_ARRAY) {
      return not_array(ctx, act, key, node);
   }
   switch (act->op) {
   case TM_U_PUSH:
      return op_push(ctx, act, node, created);
   case TM_U_ADD_TO_SET:
      return op_add_to_set(act, node, created);
   case TM_U_PULL:
   case TM_U_PULL_ALL:
      return op_pull(ctx, act, node);
   default:
      return op_pop(act, node);
   }
}
