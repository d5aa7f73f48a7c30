/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The matcher's parsed form, shared by match-parse.c (building) and match.c (evaluating).
 */
#ifndef TM_MATCH_PRIVATE_H
#define TM_MATCH_PRIVATE_H

#include <regex.h>

#include "engine-private.h"

typedef enum {
   TM_N_AND,
   TM_N_OR,
   TM_N_NOR,
   TM_N_NOT,
   TM_N_FALSE,    /* matches nothing ({$all: []}) */
   TM_N_LEAF,     /* one operator on one path */
   TM_N_ELEM_OBJ, /* {$elemMatch: {field: ...}}: elements matched as documents */
   TM_N_ELEM_VAL, /* {$elemMatch: {$gt: ...}}: elements matched as values */
   TM_N_EXPR,     /* {$expr: <aggregation expression>} */
   TM_N_SCHEMA,   /* {$jsonSchema: {...}} (jsonschema-*.c) */
} tm_node_kind_t;

typedef enum {
   TM_OP_EQ,
   TM_OP_GT,
   TM_OP_GTE,
   TM_OP_LT,
   TM_OP_LTE,
   TM_OP_IN,
   TM_OP_EXISTS,
   TM_OP_TYPE,
   TM_OP_SIZE,
   TM_OP_REGEX,
   TM_OP_MOD,
} tm_op_t;

typedef struct _tm_mnode_t tm_mnode_t;
#ifndef TM_EXPR_T_DEFINED
#define TM_EXPR_T_DEFINED
typedef struct _tm_expr_t tm_expr_t;
#endif
typedef struct _tm_schema_t tm_schema_t;

struct _tm_mnode_t {
   tm_node_kind_t kind;
   tm_op_t op;
   bool has_path; /* false inside a value $elemMatch: the leaf applies to the element */
   tm_path_t path;
   bson_value_t operand; /* borrowed from the matcher's copy of the filter */
   regex_t *re;          /* TM_OP_REGEX, or an $eq whose operand is a regex */
   regex_t **in_re;      /* TM_OP_IN: one compiled regex per regex element, else NULL */
   bson_value_t *in_vals;
   size_t in_n;
   bson_value_t *in_strs; /* TM_OP_IN: its string operands (in_vals' bracket 15), sorted */
   size_t in_strs_n;
   size_t in_n_re;    /* TM_OP_IN: how many of in_re are set */
   int32_t types[32]; /* TM_OP_TYPE; 0 stands for "number" */
   size_t n_types;
   int64_t size_or_divisor, remainder;
   tm_expr_t *expr;     /* TM_N_EXPR */
   tm_schema_t *schema; /* TM_N_SCHEMA */
   tm_mnode_t **kids;   /* AND/OR/NOR/NOT children; ELEM_*: the element predicate (kids[0]) */
   size_t n_kids;
};

struct _tm_matcher_t {
   bson_t *filter;
   tm_mnode_t *root;
};

tm_mnode_t *tm_mnode_new(tm_node_kind_t kind);
void tm_mnode_destroy(tm_mnode_t *n);
void tm_mnode_add(tm_mnode_t *parent, tm_mnode_t *kid);

/* Parses a query document into an AND node (document mode). */
tm_mnode_t *tm_match_parse_doc(const bson_t *filter, bson_error_t *error);

/* Parses operators ({$gt: 1, $lt: 5}) applying to a value itself (value mode). */
tm_mnode_t *tm_match_parse_value(const bson_t *ops, bson_error_t *error);
/* A value-mode node matching values equal to `v` (a regex `v` matches strings). */
tm_mnode_t *tm_match_value_eq(const bson_value_t *v, bson_error_t *error);
/* Evaluates a value-mode node against one value. */
bool tm_mnode_match_value(const tm_mnode_t *n, const bson_value_t *v);

/* Evaluates a document-mode node against `doc`. */
bool tm_mnode_match_doc(const tm_mnode_t *n, const bson_t *doc, int32_t *pos);

/* Regex match of a string value against a compiled pattern. */
bool tm_regex_match(const regex_t *re, const bson_value_t *v);
/* Compiles a MongoDB (PCRE-flavoured) pattern with POSIX extended regex; false with 2 set. */
bool tm_regex_compile(regex_t *re, const char *pattern, const char *options, bson_error_t *error);

/* match-leaf.c: compiled regex (NULL with *error set) and operand parsers for a leaf whose
 * `operand` is set; they fill the leaf's fields or fail with MongoDB's code. */
regex_t *tm_regex_new(const char *pattern, const char *options, bson_error_t *error);
bool tm_match_parse_in(tm_mnode_t *n, const char *op, bson_error_t *error);
/* qsort/bsearch order of two string (or symbol) values: tm_value_compare's, for strings. */
int tm_string_order(const void *a, const void *b);
bool tm_match_parse_type(tm_mnode_t *n, bson_error_t *error);
/* $type's alias names ("int", "number" ...): the type code (0 for "number", -1 minKey,
 * 127 maxKey), false if unknown. */
bool tm_type_alias(const char *name, int32_t *code);
bool tm_match_parse_size(tm_mnode_t *n, bson_error_t *error);
bool tm_match_parse_mod(tm_mnode_t *n, bson_error_t *error);

#endif /* TM_MATCH_PRIVATE_H */
