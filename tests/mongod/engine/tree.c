/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The mutable document tree used by updates (see tree.h).
 */
#include <stdio.h>
#include <string.h>

#include "tree.h"

tm_tnode_t *
tm_tnode_new(const char *key, const bson_value_t *value)
{
   tm_tnode_t *n = bson_malloc0(sizeof *n);

   n->key = key ? bson_strdup(key) : NULL;
   if (value) {
      n->value = *value;
   } else {
      n->value.value_type = BSON_TYPE_NULL;
   }
   return n;
}

tm_tnode_t *
tm_tree_new(const bson_t *doc)
{
   bson_value_t v;

   v.value_type = BSON_TYPE_DOCUMENT;
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   return tm_tnode_new(NULL, &v);
}

static void
drop_kids(tm_tnode_t *node)
{
   for (size_t i = 0; i < node->n; i++) {
      tm_tree_destroy(node->kids[i]);
   }
   bson_free(node->kids);
   node->kids = NULL;
   node->n = node->cap = 0;
   node->raw_n = 0;
   node->expanded = false;
}

void
tm_tree_destroy(tm_tnode_t *node)
{
   if (!node) {
      return;
   }
   drop_kids(node);
   bson_free(node->key);
   bson_free(node);
}

bool
tm_tnode_is_container(const tm_tnode_t *node)
{
   return node->value.value_type == BSON_TYPE_DOCUMENT || node->value.value_type == BSON_TYPE_ARRAY;
}

static void
reserve(tm_tnode_t *node, size_t n)
{
   if (n > node->cap) {
      node->cap = node->cap * 2 > n ? node->cap * 2 : n;
      node->kids = bson_realloc(node->kids, node->cap * sizeof(tm_tnode_t *));
   }
}

void
tm_tree_expand(tm_tnode_t *node)
{
   bson_t view;
   bson_iter_t it;
   bool is_array = node->value.value_type == BSON_TYPE_ARRAY;

   if (node->expanded || !tm_tnode_is_container(node)) {
      return;
   }
   node->expanded = true;
   if (!tm_value_as_bson(&node->value, &view) || !bson_iter_init(&it, &view)) {
      return;
   }
   reserve(node, bson_count_keys(&view));
   while (bson_iter_next(&it)) {
      tm_tnode_t *kid = tm_tnode_new(is_array ? NULL : bson_iter_key(&it), bson_iter_value(&it));
      kid->parent = node;
      node->kids[node->n++] = kid;
   }
}

size_t
tm_tree_append_only(tm_tnode_t *node)
{
   bson_t view;

   if (node->expanded) {
      return node->raw_n + node->n;
   }
   node->expanded = true;
   node->raw_n = tm_value_as_bson(&node->value, &view) ? bson_count_keys(&view) : 0;
   return node->raw_n;
}

tm_tnode_t *
tm_tree_child(tm_tnode_t *node, const char *key, size_t *index)
{
   size_t i;

   tm_tree_expand(node);
   if (!node->expanded) {
      return NULL;
   }
   if (node->value.value_type == BSON_TYPE_ARRAY) {
      if (!tm_path_is_index(key, &i) || i >= node->n) {
         return NULL;
      }
      if (index) {
         *index = i;
      }
      return node->kids[i];
   }
   for (i = 0; i < node->n; i++) {
      if (strcmp(node->kids[i]->key, key) == 0) {
         if (index) {
            *index = i;
         }
         return node->kids[i];
      }
   }
   return NULL;
}

void
tm_tree_insert(tm_tnode_t *node, size_t at, tm_tnode_t *kid)
{
   tm_tree_expand(node);
   reserve(node, node->n + 1);
   if (at > node->n) {
      at = node->n;
   }
   memmove(node->kids + at + 1, node->kids + at, (node->n - at) * sizeof(tm_tnode_t *));
   node->kids[at] = kid;
   node->n++;
   kid->parent = node;
}

tm_tnode_t *
tm_tree_detach(tm_tnode_t *node, size_t at)
{
   tm_tnode_t *kid = node->kids[at];

   memmove(node->kids + at, node->kids + at + 1, (node->n - at - 1) * sizeof(tm_tnode_t *));
   node->n--;
   kid->parent = NULL;
   return kid;
}

void
tm_tree_set_value(tm_tnode_t *node, const bson_value_t *value)
{
   drop_kids(node);
   node->value = *value;
}

void
tm_tree_set_empty(tm_tnode_t *node, bson_type_t type)
{
   drop_kids(node);
   node->value.value_type = type;
   node->value.value.v_doc.data = NULL;
   node->value.value.v_doc.data_len = 0;
   node->expanded = true;
}

void
tm_tree_mark(tm_tnode_t *node, tm_mark_t mark)
{
   node->mark = mark;
   for (tm_tnode_t *p = node->parent; p && !p->dirty; p = p->parent) {
      p->dirty = true;
   }
}

static void
append_kids(bson_t *out, const tm_tnode_t *node)
{
   char buf[16];
   const char *key;

   if (node->raw_n) {
      /* The raw elements already carry their keys "0" .. "raw_n - 1". */
      bson_t view;
      if (tm_value_as_bson(&node->value, &view)) {
         bson_concat(out, &view);
      }
   }
   for (size_t i = 0; i < node->n; i++) {
      if (node->value.value_type == BSON_TYPE_ARRAY) {
         bson_uint32_to_string((uint32_t)(node->raw_n + i), &key, buf, sizeof buf);
      } else {
         key = node->kids[i]->key;
      }
      tm_tree_append(out, key, node->kids[i]);
   }
}

void
tm_tree_append(bson_t *out, const char *key, const tm_tnode_t *node)
{
   bson_t child;

   if (!node->expanded) {
      bson_append_value(out, key, -1, &node->value);
      return;
   }
   if (node->value.value_type == BSON_TYPE_ARRAY) {
      bson_append_array_begin(out, key, -1, &child);
      append_kids(&child, node);
      bson_append_array_end(out, &child);
   } else {
      bson_append_document_begin(out, key, -1, &child);
      append_kids(&child, node);
      bson_append_document_end(out, &child);
   }
}

void
tm_tree_to_bson(const tm_tnode_t *node, bson_t *out)
{
   if (!node->expanded) {
      bson_t view;
      if (tm_value_as_bson(&node->value, &view)) {
         bson_concat(out, &view);
      }
      return;
   }
   append_kids(out, node);
}

void
tm_tree_value(const tm_tnode_t *node, bson_t *tmp, bson_value_t *value)
{
   bson_init(tmp);
   if (!node->expanded) {
      *value = node->value;
      return;
   }
   tm_tree_to_bson(node, tmp);
   value->value_type = node->value.value_type;
   value->value.v_doc.data = (uint8_t *)bson_get_data(tmp);
   value->value.v_doc.data_len = tmp->len;
}
