/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Aggregation expressions: field paths ("$a.b"), $$ROOT / $$CURRENT / $$REMOVE, $$NOW /
 * $$CLUSTER_TIME (expr-env.c), literals,
 * object and array expressions, and the cheap operators listed in expr-ops.c.
 *
 * Results are owned bson_value_t (free with bson_value_destroy); "missing" is a result of
 * type BSON_TYPE_EOD.
 */
#ifndef TM_EXPR_H
#define TM_EXPR_H

#include "engine-private.h"

#ifndef TM_EXPR_T_DEFINED
#define TM_EXPR_T_DEFINED
typedef struct _tm_expr_t tm_expr_t;
#endif

/* Parses an expression; `spec` must outlive the expression (values are borrowed). */
tm_expr_t *
tm_expr_parse(const bson_value_t *spec, bson_error_t *error);
void
tm_expr_destroy(tm_expr_t *expr);
/* Evaluates against `root` ($$ROOT and $$CURRENT). `out` is always set (EOD on failure). */
bool
tm_expr_eval(const tm_expr_t *expr, const bson_t *root, bson_value_t *out, bson_error_t *error);

/* Truthiness as $cond / $and see it: false, null, missing, undefined and 0 are false. */
bool
tm_value_truthy(const bson_value_t *v);
/* Copies `v` into `out` (owned); EOD stays EOD. */
void
tm_value_dup(const bson_value_t *v, bson_value_t *out);
/* Takes ownership of `b`'s bytes as a document or array value. */
void
tm_value_from_bson(bson_t *b, bson_type_t type, bson_value_t *out);

/* ---- expr-env.c ---- */

/* $$NOW of the running command (see tm_command_clock_set). */
void
tm_expr_now(bson_value_t *out);
/* $$CLUSTER_TIME of the running command, or 51144 if none is set. */
bool
tm_expr_cluster_time(bson_value_t *out, bson_error_t *error);
/* True if the server was started without the operator `name` (with its '$'). */
bool
tm_expr_is_disabled(const char *name);

/* ---- expr-arith.c ---- */

typedef bool (*tm_expr_op_fn)(const bson_value_t *args, size_t n, bson_value_t *out,
                              bson_error_t *error);

/* Sets a number of `type` (int32 results that overflow widen to int64, then double). */
void
tm_value_set_number(bson_type_t type, long double r, bson_value_t *out);
/* $add, $subtract, $multiply, $divide: tm_expr_op_fn for the operator table. */
bool
tm_expr_add(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool
tm_expr_subtract(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool
tm_expr_multiply(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool
tm_expr_divide(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);

/* ---- expr-ops.c ---- */

/* Looks up an operator; sets the accepted argument counts (max -1 = any). NULL if unknown.
 * $cond, $and, $or, $ifNull are evaluated lazily by expr.c and have no function here. */
tm_expr_op_fn
tm_expr_op_lookup(const char *name, int *min_args, int *max_args);

#endif /* TM_EXPR_H */
