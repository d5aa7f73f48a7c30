/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsed updates, shared by update-parse.c, update.c and the operator files.
 */
#ifndef TM_UPDATE_PRIVATE_H
#define TM_UPDATE_PRIVATE_H

#include "match-private.h"
#include "tree.h"

typedef enum {
   TM_U_SET,
   TM_U_SET_ON_INSERT,
   TM_U_UNSET,
   TM_U_INC,
   TM_U_MUL,
   TM_U_MIN,
   TM_U_MAX,
   TM_U_CURRENT_DATE,
   TM_U_RENAME,
   TM_U_PUSH,
   TM_U_ADD_TO_SET,
   TM_U_PULL,
   TM_U_PULL_ALL,
   TM_U_POP,
   TM_U_BIT,
} tm_uop_t;

typedef struct {
   tm_uop_t op;
   const char *op_name;
   tm_path_t path; /* target; for $rename the destination */
   tm_path_t from; /* $rename source */
   bson_value_t operand;
   /* $push / $addToSet: the values to add (an array when has_each) */
   bool has_each;
   bson_value_t each;
   bool has_position, has_slice, has_sort;
   int64_t position, slice;
   int sort_dir;       /* {$sort: 1 | -1} on whole elements */
   tm_sort_t *sort_by; /* {$sort: {field: 1}} on document elements */
   /* $pull with a condition */
   tm_mnode_t *cond;
   bool cond_doc_mode;
   /* $currentDate: timestamp instead of date; $pop: 1 or -1 */
   bool timestamp;
   int pop;
} tm_action_t;

typedef struct {
   char *id;
   tm_matcher_t *matcher;
   bool used;
} tm_array_filter_t;

struct _tm_update_t {
   bson_t *spec;
   bool replacement;
   bool pipeline;
   tm_pipeline_t *pipe; /* pipeline-style updates, parsed once */
   tm_action_t *actions;
   size_t n;
   tm_array_filter_t *filters;
   size_t n_filters;
};

/* An array updated through `$[]` or `$[id]` paths, and which of its elements any of those
 * paths matched (see update-desc.c: the oplog then logs elements or the whole array). */
typedef struct {
   tm_tnode_t *array;
   bool *hit;
   size_t n_hit;
} tm_array_hits_t;

/* The state of one tm_update_apply call. */
typedef struct {
   const tm_update_t *update;
   const bson_t *doc;
   int32_t positional;
   bool is_insert;
   tm_tnode_t *root;
   bson_t *removed; /* removedFields array being built */
   uint32_t n_removed;
   bson_error_t *error;
   tm_tnode_t *moving; /* $rename: the detached source, placed at the destination */
   tm_array_hits_t *hits;
   size_t n_hits;
   bson_t **owned; /* values the tree borrows that the update built (a $pull's kept elements) */
   size_t n_owned;
} tm_apply_t;

/* True if the operator creates missing paths (everything but $unset, $pull*, $pop). */
bool tm_uop_creates(tm_uop_t op);

/* Applies a leaf operator at `container`[key]; `node` is the existing child or NULL. */
bool tm_apply_scalar_op(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container,
                        const char *key, tm_tnode_t *node);
bool tm_apply_array_op(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container,
                       const char *key, tm_tnode_t *node);

/* Creates container[key] (padding arrays with nulls) marked CREATED; NULL with 28 set if the
 * container cannot hold the field. */
tm_tnode_t *tm_apply_create(tm_apply_t *ctx, tm_tnode_t *container, const char *key);
/* Removes container's kid at `index` and records its path in removedFields. */
void tm_apply_remove(tm_apply_t *ctx, tm_tnode_t *container, size_t index);
/* Records that an array-filter path matched element `index` of `array`. */
void tm_apply_note_hit(tm_apply_t *ctx, tm_tnode_t *array, size_t index);
/* Fills `desc` from the marked tree and the removed paths (update-desc.c), then frees the
 * hit records. */
void tm_apply_describe(tm_apply_t *ctx, tm_update_desc_t *desc);
void tm_apply_free_hits(tm_apply_t *ctx);

/* Dotted path of a node in the tree, for messages and removedFields; caller frees. */
char *tm_tnode_path(const tm_tnode_t *node);
/* Replaces node's value, marking it SET, unless it is binary-equal already. */
void tm_apply_set(tm_tnode_t *node, const bson_value_t *value);
/* "{_id: 1}"-style rendering of the document's _id for messages; caller frees. */
char *tm_apply_id_json(const tm_apply_t *ctx);

/* Validates and pre-parses the operand of one field of an operator ($push modifiers, $pull
 * conditions, ...). */
bool tm_action_parse_operand(tm_action_t *a, const char *field, bson_error_t *error);

/* Pipeline-style update ([{$set: ...}, ...]) (diff.c): parses and checks the stages of
 * u->spec into u->pipe; applying runs them, then diffs old and new. */
bool tm_update_parse_pipeline(tm_update_t *u, bson_error_t *error);
bool tm_update_apply_pipeline(const tm_update_t *u, const bson_t *doc, bson_t *out,
                              tm_update_desc_t *desc, bson_error_t *error);

bool tm_update_parse_ops(tm_update_t *u, bson_error_t *error);

#endif /* TM_UPDATE_PRIVATE_H */
