/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A mutable document tree for updates. bson_t cannot be edited in place, so an update
 * loads the document into this tree, edits it, and serialises it once. Subtrees are expanded
 * lazily: an untouched subdocument or array stays a borrowed raw value, so pushing one
 * element onto a large array costs one node per element and one copy on serialisation.
 *
 * Values are borrowed (from the input document or the update specification, which both
 * outlive the tree) or plain scalars computed in place; the tree never owns value bytes.
 */
#ifndef TM_TREE_H
#define TM_TREE_H

#include "engine-private.h"

typedef enum {
   TM_MARK_NONE,
   TM_MARK_SET,     /* existing path given a new value: reported as "path" */
   TM_MARK_CREATED, /* path that did not exist: reported with its whole subtree */
   TM_MARK_WHOLE,   /* array rewritten ($pull, $addToSet, ...): the whole array */
   TM_MARK_APPEND,  /* elements appended from `append_from`: "path.N" per new element */
} tm_mark_t;

typedef struct _tm_tnode_t tm_tnode_t;

struct _tm_tnode_t {
   char *key;          /* field name; NULL for array elements (their key is the index) */
   bson_value_t value; /* scalar, or document/array bytes while not expanded */
   bool expanded;      /* document/array whose content is in kids */
   tm_tnode_t **kids;
   size_t n, cap;
   tm_tnode_t *parent;
   tm_mark_t mark;
   bool dirty; /* some descendant carries a mark */
   size_t append_from;
   /* Arrays that are only appended to keep their existing elements as raw bytes in `value`:
    * the first raw_n elements are there, kids follow them. See tm_tree_append_only. */
   size_t raw_n;
};

tm_tnode_t *tm_tree_new(const bson_t *doc);
tm_tnode_t *tm_tnode_new(const char *key, const bson_value_t *value);
void tm_tree_destroy(tm_tnode_t *node);
/* Makes a document/array node's content editable; no-op for other nodes. */
void tm_tree_expand(tm_tnode_t *node);
bool tm_tnode_is_container(const tm_tnode_t *node);
/* Child by field name (documents) or index string (arrays); NULL if absent. */
tm_tnode_t *tm_tree_child(tm_tnode_t *node, const char *key, size_t *index);
/* Appends (documents: with `key`) or inserts at `at` (arrays; at <= n). Takes `kid`. */
void tm_tree_insert(tm_tnode_t *node, size_t at, tm_tnode_t *kid);
/* Detaches and returns the kid at `at`. */
tm_tnode_t *tm_tree_detach(tm_tnode_t *node, size_t at);
/* Replaces the node's content by a (borrowed) value, dropping any kids. */
void tm_tree_set_value(tm_tnode_t *node, const bson_value_t *value);
/* Prepares an unexpanded array for appends without expanding its elements: they stay raw
 * (node->raw_n of them) and new kids are appended after them. Returns the element count.
 * Nothing else may edit the array afterwards (update conflict rules guarantee it). */
size_t tm_tree_append_only(tm_tnode_t *node);
/* Makes the node an empty, expanded document or array. */
void tm_tree_set_empty(tm_tnode_t *node, bson_type_t type);
/* Sets the node's mark and flags its ancestors dirty. */
void tm_tree_mark(tm_tnode_t *node, tm_mark_t mark);
/* Serialises a document node into `out` (initialised by the caller). */
void tm_tree_to_bson(const tm_tnode_t *node, bson_t *out);
/* Appends one node as `key` to `out`. */
void tm_tree_append(bson_t *out, const char *key, const tm_tnode_t *node);
/* The node's value as a bson value; document/array nodes are serialised into `tmp`
 * (initialised here, destroyed by the caller) when expanded. */
void tm_tree_value(const tm_tnode_t *node, bson_t *tmp, bson_value_t *value);

#endif /* TM_TREE_H */
