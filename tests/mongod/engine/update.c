/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Applying parsed updates: path resolution (positional $, $[], $[id]), the _id rule,
 * replacement documents, and the change-stream update description.
 */
#include <stdio.h>
#include <string.h>

#include "update-private.h"

char *
tm_tnode_path(const tm_tnode_t *node)
{
   const tm_tnode_t *chain[256];
   size_t n = 0;
   bson_string_t *s = bson_string_new(NULL);

   for (const tm_tnode_t *p = node; p && p->parent && n < 256; p = p->parent) {
      chain[n++] = p;
   }
   while (n-- > 0) {
      const tm_tnode_t *p = chain[n];
      if (s->len) {
         bson_string_append_c(s, '.');
      }
      if (p->key) {
         bson_string_append(s, p->key);
      } else {
         for (size_t i = 0; i < p->parent->n; i++) {
            if (p->parent->kids[i] == p) {
               bson_string_append_printf(s, "%zu", p->parent->raw_n + i);
               break;
            }
         }
      }
   }
   return bson_string_free(s, false);
}

char *
tm_apply_id_json(const tm_apply_t *ctx)
{
   bson_value_t id;
   char *json, *out;

   if (!tm_path_get(ctx->doc, "_id", &id)) {
      return bson_strdup("{}");
   }
   json = tm_value_to_json(&id);
   out = bson_strdup_printf("{_id: %s}", json);
   bson_free(json);
   return out;
}

static char *
element_json(const tm_tnode_t *node)
{
   bson_t tmp;
   bson_value_t v;
   char *json, *path, *out;

   tm_tree_value(node, &tmp, &v);
   json = tm_value_to_json(&v);
   bson_destroy(&tmp);
   path = node->key ? bson_strdup(node->key) : tm_tnode_path(node);
   out = bson_strdup_printf("{%s: %s}", path, json);
   bson_free(json);
   bson_free(path);
   return out;
}

tm_tnode_t *
tm_apply_create(tm_apply_t *ctx, tm_tnode_t *container, const char *key)
{
   size_t idx;
   tm_tnode_t *kid;

   tm_tree_expand(container);
   if (container->value.value_type != BSON_TYPE_ARRAY) {
      kid = tm_tnode_new(key, NULL);
      tm_tree_insert(container, container->n, kid);
      tm_tree_mark(kid, TM_MARK_CREATED);
      return kid;
   }
   if (!tm_path_is_index(key, &idx)) {
      char *elem = element_json(container);
      tm_error_set(ctx->error, 28, "Cannot create field '%s' in element %s", key, elem);
      bson_free(elem);
      return NULL;
   }
   /* Setting past the end pads the array with nulls, each reported as a new element. */
   while (container->n <= idx) {
      kid = tm_tnode_new(NULL, NULL);
      tm_tree_insert(container, container->n, kid);
      tm_tree_mark(kid, TM_MARK_CREATED);
   }
   return container->kids[idx];
}

void
tm_apply_remove(tm_apply_t *ctx, tm_tnode_t *container, size_t index)
{
   char *path = tm_tnode_path(container->kids[index]);
   char key[16];
   const char *k;

   bson_uint32_to_string(ctx->n_removed++, &k, key, sizeof key);
   bson_append_utf8(ctx->removed, k, -1, path, -1);
   bson_free(path);
   tm_tree_destroy(tm_tree_detach(container, index));
   for (tm_tnode_t *p = container; p && !p->dirty; p = p->parent) {
      p->dirty = true;
   }
}

void
tm_apply_set(tm_tnode_t *node, const bson_value_t *value)
{
   bson_t tmp;
   bson_value_t cur;
   bool same;

   tm_tree_value(node, &tmp, &cur);
   same = tm_value_binary_equal(&cur, value);
   bson_destroy(&tmp);
   if (!same) {
      tm_tree_set_value(node, value);
      if (node->mark == TM_MARK_NONE) {
         tm_tree_mark(node, TM_MARK_SET);
      }
   }
}

static bool resolve(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *node, size_t i);

static bool
leaf(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *node, const char *key)
{
   tm_tnode_t *child = tm_tree_child(node, key, NULL);

   switch (act->op) {
   case TM_U_PUSH:
   case TM_U_ADD_TO_SET:
   case TM_U_PULL:
   case TM_U_PULL_ALL:
   case TM_U_POP:
      return tm_apply_array_op(ctx, act, node, key, child);
   default:
      return tm_apply_scalar_op(ctx, act, node, key, child);
   }
}

static const tm_array_filter_t *
find_filter(const tm_update_t *u, const char *part)
{
   size_t len = strlen(part) - 3;

   for (size_t f = 0; f < u->n_filters; f++) {
      if (strlen(u->filters[f].id) == len && strncmp(u->filters[f].id, part + 2, len) == 0) {
         return &u->filters[f];
      }
   }
   return NULL;
}

static bool
filter_matches(const tm_array_filter_t *f, const tm_tnode_t *kid)
{
   bson_t tmp, wrapper = BSON_INITIALIZER;
   bson_value_t v;
   bool ok;

   tm_tree_value(kid, &tmp, &v);
   bson_append_value(&wrapper, f->id, -1, &v);
   ok = tm_matcher_match(f->matcher, &wrapper, NULL);
   bson_destroy(&wrapper);
   bson_destroy(&tmp);
   return ok;
}

/* $[] and $[id]: apply the rest of the path to every (matching) element. */
static bool
resolve_each(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *node, size_t i)
{
   const char *part = act->path.parts[i];
   const tm_array_filter_t *f = strcmp(part, "$[]") == 0 ? NULL : find_filter(ctx->update, part);
   bool last = i + 1 == act->path.n;
   char buf[16];
   const char *key;

   if (node->value.value_type != BSON_TYPE_ARRAY) {
      char *elem = element_json(node);
      tm_error_set(ctx->error, 2, "Cannot apply array updates to non-array element %s", elem);
      bson_free(elem);
      return false;
   }
   tm_tree_expand(node);
   for (size_t j = 0; j < node->n; j++) {
      tm_tnode_t *kid = node->kids[j];
      if (f && !filter_matches(f, kid)) {
         continue;
      }
      tm_apply_note_hit(ctx, node, j);
      bson_uint32_to_string((uint32_t)j, &key, buf, sizeof buf);
      if (last) {
         if (!leaf(ctx, act, node, key)) {
            return false;
         }
      } else if (!tm_tnode_is_container(kid)) {
         if (tm_uop_creates(act->op)) {
            char *elem = element_json(kid);
            tm_error_set(ctx->error, 28, "Cannot create field '%s' in element %s",
                         act->path.parts[i + 1], elem);
            bson_free(elem);
            return false;
         }
      } else if (!resolve(ctx, act, kid, i + 1)) {
         return false;
      }
   }
   return true;
}

static bool
resolve(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *node, size_t i)
{
   const char *part = act->path.parts[i];
   char buf[16];
   tm_tnode_t *child;

   if (strcmp(part, "$") == 0) {
      if (ctx->positional < 0) {
         return tm_error_set(ctx->error, 2,
                             "The positional operator did not find the match needed from the "
                             "query.");
      }
      snprintf(buf, sizeof buf, "%d", (int)ctx->positional);
      part = buf;
   } else if (strncmp(part, "$[", 2) == 0) {
      return resolve_each(ctx, act, node, i);
   }
   if (i + 1 == act->path.n) {
      return leaf(ctx, act, node, part);
   }
   child = tm_tree_child(node, part, NULL);
   if (!child) {
      if (!tm_uop_creates(act->op)) {
         return true;
      }
      if (strncmp(act->path.parts[i + 1], "$[", 2) == 0) {
         char *path = tm_tnode_path(node);
         tm_error_set(ctx->error, 2,
                      "The path '%s%s%s' must exist in the document in order to apply array "
                      "updates.",
                      path, *path ? "." : "", part);
         bson_free(path);
         return false;
      }
      child = tm_apply_create(ctx, node, part);
      if (!child) {
         return false;
      }
      tm_tree_set_empty(child, BSON_TYPE_DOCUMENT);
   } else if (!tm_tnode_is_container(child)) {
      if (strncmp(act->path.parts[i + 1], "$[", 2) == 0) {
         return resolve_each(ctx, act, child, i + 1); /* fails: not an array */
      }
      if (tm_uop_creates(act->op)) {
         char *elem = element_json(child);
         tm_error_set(ctx->error, 28, "Cannot create field '%s' in element %s",
                      act->path.parts[i + 1], elem);
         bson_free(elem);
         return false;
      }
      return true;
   }
   return resolve(ctx, act, child, i + 1);
}

/* Detaches the $rename source into ctx->moving (NULL if it does not exist). */
static bool
rename_source(tm_apply_t *ctx, const tm_action_t *act)
{
   tm_tnode_t *node = ctx->root, *child = NULL;
   size_t idx = 0;

   ctx->moving = NULL;
   for (size_t i = 0; i < act->from.n; i++) {
      if (node->value.value_type == BSON_TYPE_ARRAY) {
         return tm_error_set(ctx->error, 2,
                             "The source field cannot be an array element, '%s' in doc with %s",
                             act->from.dotted, act->from.dotted);
      }
      child = tm_tree_child(node, act->from.parts[i], &idx);
      if (!child) {
         return true;
      }
      if (i + 1 < act->from.n) {
         if (!tm_tnode_is_container(child)) {
            return true;
         }
         node = child;
      }
   }
   tm_tree_expand(child); /* keep its content reachable once detached */
   ctx->moving = tm_tree_detach(node, idx);
   ctx->moving->parent = NULL;
   {
      char key[16];
      const char *k;
      bson_uint32_to_string(ctx->n_removed++, &k, key, sizeof key);
      bson_append_utf8(ctx->removed, k, -1, act->from.dotted, -1);
   }
   for (tm_tnode_t *p = node; p && !p->dirty; p = p->parent) {
      p->dirty = true;
   }
   return true;
}

static bool
check_id(const bson_t *doc, const bson_t *out, bson_error_t *error)
{
   bson_value_t before, after;

   if (!tm_path_get(doc, "_id", &before)) {
      return true;
   }
   if (!tm_path_get(out, "_id", &after) || !tm_value_binary_equal(&before, &after)) {
      return tm_error_set(error, 66,
                          "Performing an update on the path '_id' would modify the immutable "
                          "field '_id'");
   }
   return true;
}

static bool
apply_replacement(const tm_update_t *u, const bson_t *doc, bson_t *out, bson_error_t *error)
{
   bson_value_t old_id, new_id;
   bson_iter_t it;
   bool has_old = tm_path_get(doc, "_id", &old_id);
   bool has_new = tm_path_get(u->spec, "_id", &new_id);

   if (has_old && has_new && !tm_value_binary_equal(&old_id, &new_id)) {
      char *json = tm_value_to_json(&new_id);
      tm_error_set(error, 66,
                   "After applying the update, the (immutable) field '_id' was found to have "
                   "been altered to _id: %s",
                   json);
      bson_free(json);
      return false;
   }
   /* _id stays the first field, whether it came from the old document or the new one. */
   if (has_new || has_old) {
      bson_append_value(out, "_id", 3, has_new ? &new_id : &old_id);
   }
   bson_iter_init(&it, u->spec);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "_id") != 0) {
         bson_append_value(out, bson_iter_key(&it), -1, bson_iter_value(&it));
      }
   }
   return true;
}

static bool
apply_ops(const tm_update_t *u, tm_apply_t *ctx)
{
   for (size_t i = 0; i < u->n; i++) {
      const tm_action_t *act = &u->actions[i];
      bool ok;
      if (act->op == TM_U_SET_ON_INSERT && !ctx->is_insert) {
         continue;
      }
      if (act->op == TM_U_RENAME) {
         if (!rename_source(ctx, act)) {
            return false;
         }
         if (!ctx->moving) {
            continue;
         }
      }
      ok = resolve(ctx, act, ctx->root, 0);
      tm_tree_destroy(ctx->moving);
      ctx->moving = NULL;
      if (!ok) {
         return false;
      }
   }
   return true;
}

bool
tm_update_apply(const tm_update_t *update, const bson_t *doc, int32_t positional, bool is_insert,
                bson_t *out, bool *modified, tm_update_desc_t *desc, bson_error_t *error)
{
   tm_apply_t ctx = {.update = update,
                     .doc = doc,
                     .positional = positional,
                     .is_insert = is_insert,
                     .error = error};
   bson_t removed = BSON_INITIALIZER;
   bool ok = false;

   bson_init(out);
   *modified = false;
   if (update->replacement) {
      ok = apply_replacement(update, doc, out, error);
      goto done;
   }
   if (update->pipeline) {
      ok = tm_update_apply_pipeline(update, doc, out, desc, error);
      goto done;
   }
   ctx.root = tm_tree_new(doc);
   ctx.removed = &removed;
   tm_tree_expand(ctx.root);
   if (!apply_ops(update, &ctx)) {
      goto done;
   }
   tm_tree_to_bson(ctx.root, out);
   if (!check_id(doc, out, error)) {
      goto done;
   }
   if (desc) {
      tm_apply_describe(&ctx, desc);
   }
   ok = true;
done:
   if (ok) {
      *modified = out->len != doc->len || memcmp(bson_get_data(out), bson_get_data(doc), doc->len);
   }
   tm_apply_free_hits(&ctx);
   tm_tree_destroy(ctx.root);
   for (size_t i = 0; i < ctx.n_owned; i++) {
      bson_destroy(ctx.owned[i]);
   }
   bson_free(ctx.owned);
   bson_destroy(&removed);
   return ok;
}

void
tm_update_desc_init(tm_update_desc_t *desc)
{
   bson_init(&desc->updated_fields);
   bson_init(&desc->removed_fields);
   bson_init(&desc->truncated_arrays);
}

void
tm_update_desc_destroy(tm_update_desc_t *desc)
{
   if (!desc) {
      return;
   }
   bson_destroy(&desc->updated_fields);
   bson_destroy(&desc->removed_fields);
   bson_destroy(&desc->truncated_arrays);
}
