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

/* A strict operator: its arguments are evaluated first. */
typedef bool (*tm_expr_op_fn)(const bson_value_t *args, size_t n, bson_value_t *out,
                              bson_error_t *error);

/* The system variables a field path may start at ($$ROOT/$$CURRENT, $$NOW, $$CLUSTER_TIME). */
enum { TM_SYSVAR_ROOT, TM_SYSVAR_NOW, TM_SYSVAR_CLUSTER_TIME };

/* The parsed form, shared by expr.c and expr-scoped.c. */
typedef enum {
   E_LITERAL,
   E_FIELD,  /* "$a.b", "$$ROOT.a", "$$CURRENT", "$$NOW" (sysvar) */
   E_REMOVE, /* "$$REMOVE" */
   E_OBJECT,
   E_ARRAY,
   E_OP,
   E_VAR,    /* "$$name", "$$name.a.b": a user variable (vars.c) */
   E_SCOPED, /* $filter, $map, $reduce, $let: operators that bind variables (expr-scoped.c) */
} ekind_t;

struct _tm_expr_t {
   ekind_t kind;
   bson_value_t literal;
   tm_path_t path; /* E_FIELD; n == 0 means the whole root (or system variable) */
   int sysvar;     /* E_FIELD: TM_SYSVAR_ROOT, or the system variable the path starts at */
   char **keys;    /* E_OBJECT */
   tm_expr_t **args;
   size_t n_args;
   const char *op; /* E_OP / E_SCOPED name, borrowed from the spec */
   tm_expr_op_fn fn;
   char *var; /* E_VAR: the variable; E_SCOPED: the `as` name */
};

/* Parses an expression; `spec` must outlive the expression (values are borrowed).
 * Variables ($$name) must be declared (vars.c) while they are parsed. */
tm_expr_t *tm_expr_parse(const bson_value_t *spec, bson_error_t *error);
void tm_expr_destroy(tm_expr_t *expr);
/* Evaluates against `root` ($$ROOT and $$CURRENT). `out` is always set (EOD on failure). */
bool tm_expr_eval(const tm_expr_t *expr, const bson_t *root, bson_value_t *out,
                  bson_error_t *error);

/* Truthiness as $cond / $and see it: false, null, missing, undefined and 0 are false. */
bool tm_value_truthy(const bson_value_t *v);
/* Copies `v` into `out` (owned); EOD stays EOD. */
void tm_value_dup(const bson_value_t *v, bson_value_t *out);
/* Takes ownership of `b`'s bytes as a document or array value. */
void tm_value_from_bson(bson_t *b, bson_type_t type, bson_value_t *out);

/* ---- expr-env.c ---- */

/* $$NOW of the running command (see tm_command_clock_set). */
void tm_expr_now(bson_value_t *out);
/* $$CLUSTER_TIME of the running command, or 51144 if none is set. */
bool tm_expr_cluster_time(bson_value_t *out, bson_error_t *error);
/* True if the server was started without the operator `name` (with its '$'). */
bool tm_expr_is_disabled(const char *name);

/* ---- expr-arith.c ---- */

/* Sets a number of `type` (int32 results that overflow widen to int64, then double). */
void tm_value_set_number(bson_type_t type, long double r, bson_value_t *out);
/* $add, $subtract, $multiply, $divide: tm_expr_op_fn for the operator table. */
bool tm_expr_add(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool tm_expr_subtract(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool tm_expr_multiply(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);
bool tm_expr_divide(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error);

/* ---- expr-ops.c ---- */

/* Looks up an operator; sets the accepted argument counts (max -1 = any). NULL if unknown.
 * $cond, $and, $or, $ifNull are evaluated lazily by expr.c and have no function here. */
tm_expr_op_fn tm_expr_op_lookup(const char *name, int *min_args, int *max_args);

/* ---- expr.c internals for expr-scoped.c ---- */

void tm_expr_add_arg(tm_expr_t *e, tm_expr_t *arg, const char *key);
tm_expr_t *tm_expr_new(int kind);

/* ---- expr-scoped.c: $filter, $map, $reduce, $let ---- */

/* True if `name` is one of them. */
bool tm_expr_is_scoped(const char *name);
tm_expr_t *tm_expr_parse_scoped(const char *name, const bson_value_t *arg, bson_error_t *error);
bool tm_expr_eval_scoped(const tm_expr_t *e, const bson_t *root, bson_value_t *out,
                         bson_error_t *error);

/* ---- expr-more.c: array and accumulator-style operators ---- */

/* Like tm_expr_op_lookup, for $slice $first $last $mergeObjects $toLong $max $min $sum $avg. */
tm_expr_op_fn tm_expr_op_lookup_more(const char *name, int *min_args, int *max_args);
/* True if MongoDB 6.0 has this expression operator (so an unimplemented one is refused as
 * unsupported, not as unknown: 168 is MongoDB's answer only for names it does not know). */
bool tm_expr_op_known_to_mongodb(const char *name);

/* ---- vars.c ---- */

/* 16869 / 16870 / 16871 unless `name` is a valid user variable name. */
bool tm_vars_check_name(const char *name, bson_error_t *error);
/* Parse-time scope: names `$$name` may refer to. `name` must outlive the declaration. */
bool tm_vars_declare(const char *name, bson_error_t *error);
void tm_vars_undeclare(size_t count);
bool tm_vars_is_declared(const char *name, size_t len);
/* Evaluation-time values; `name` and `value` are borrowed until the matching unbind. */
bool tm_vars_bind(const char *name, const bson_value_t *value, bson_error_t *error);
void tm_vars_unbind(size_t count);
/* The innermost binding of `name`, or NULL. */
const bson_value_t *tm_vars_lookup(const char *name);

#endif /* TM_EXPR_H */
