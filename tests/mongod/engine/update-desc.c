/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The change description of a modifier update, as MongoDB 6.0's oplog records it: every
 * marked node of the update tree is logged with its path (update.c and the operator files
 * mark them), except where an array was updated through `$[]` / `$[id]`. There MongoDB's
 * UpdateArrayNode decides for the whole array (update_array_node.cpp): if at most one
 * element matched any of those paths, the element's own changes are logged as usual
 * ("a.1.x"); if several matched, the children do not log themselves and the array node logs
 * either the one element that actually changed ("a.1": whole element) or, when more than
 * one changed, the whole array ("a": [...]). Matched but unchanged elements count as matched.
 */
#include <string.h>

#include "update-private.h"

void
tm_apply_note_hit(tm_apply_t *ctx, tm_tnode_t *array, size_t index)
{
   tm_array_hits_t *h = NULL;

   for (size_t i = 0; i < ctx->n_hits; i++) {
      if (ctx->hits[i].array == array) {
         h = &ctx->hits[i];
      }
   }
   if (!h) {
      ctx->hits = bson_realloc(ctx->hits, (ctx->n_hits + 1) * sizeof *ctx->hits);
      h = &ctx->hits[ctx->n_hits++];
      memset(h, 0, sizeof *h);
      h->array = array;
   }
   if (index >= h->n_hit) {
      h->hit = bson_realloc(h->hit, (index + 1) * sizeof *h->hit);
      memset(h->hit + h->n_hit, 0, (index + 1 - h->n_hit) * sizeof *h->hit);
      h->n_hit = index + 1;
   }
   h->hit[index] = true;
}

void
tm_apply_free_hits(tm_apply_t *ctx)
{
   for (size_t i = 0; i < ctx->n_hits; i++) {
      bson_free(ctx->hits[i].hit);
   }
   bson_free(ctx->hits);
   ctx->hits = NULL;
   ctx->n_hits = 0;
}

static bool
changed(const tm_tnode_t *node)
{
   return node->mark != TM_MARK_NONE || node->dirty;
}

/* Applies UpdateArrayNode's rule to one array (see the file comment). */
static void
log_array(const tm_array_hits_t *h)
{
   size_t matched = 0, n_changed = 0;
   tm_tnode_t *last = NULL;

   for (size_t i = 0; i < h->n_hit && i < h->array->n; i++) {
      if (!h->hit[i]) {
         continue;
      }
      matched++;
      if (changed(h->array->kids[i])) {
         n_changed++;
         last = h->array->kids[i];
      }
   }
   if (matched <= 1 || n_changed == 0) {
      return; /* the element logged itself, or nothing changed */
   }
   tm_tree_mark(n_changed > 1 ? h->array : last, TM_MARK_SET);
}

static void
desc_walk(const tm_tnode_t *node, const char *prefix, bson_t *out)
{
   char buf[16];
   const char *key;

   for (size_t i = 0; i < node->n; i++) {
      const tm_tnode_t *kid = node->kids[i];
      char *path;
      if (kid->mark == TM_MARK_NONE && !kid->dirty) {
         continue;
      }
      if (node->value.value_type == BSON_TYPE_ARRAY) {
         bson_uint32_to_string((uint32_t)i, &key, buf, sizeof buf);
      } else {
         key = kid->key;
      }
      path = prefix ? bson_strdup_printf("%s.%s", prefix, key) : bson_strdup(key);
      if (kid->mark == TM_MARK_APPEND) {
         for (size_t j = kid->append_from; j < kid->raw_n + kid->n; j++) {
            char *elem = bson_strdup_printf("%s.%zu", path, j);
            tm_tree_append(out, elem, kid->kids[j - kid->raw_n]);
            bson_free(elem);
         }
      } else if (kid->mark != TM_MARK_NONE) {
         tm_tree_append(out, path, kid);
      } else {
         desc_walk(kid, path, out);
      }
      bson_free(path);
   }
}

void
tm_apply_describe(tm_apply_t *ctx, tm_update_desc_t *desc)
{
   for (size_t i = 0; i < ctx->n_hits; i++) {
      log_array(&ctx->hits[i]);
   }
   tm_apply_free_hits(ctx);
   desc_walk(ctx->root, NULL, &desc->updated_fields);
   bson_concat(&desc->removed_fields, ctx->removed);
}
