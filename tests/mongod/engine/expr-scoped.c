/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The expression operators that bind variables: $filter {input, as, cond, limit},
 * $map {input, as, in}, $reduce {input, initialValue, in} ($$value, $$this) and
 * $let {vars, in}. Their sub-expressions are parsed with the names declared and evaluated
 * with them bound (vars.c). Argument checks, error codes and messages follow MongoDB 6.0's
 * ExpressionFilter / ExpressionMap / ExpressionReduce / ExpressionLet.
 */
#include <string.h>

#include "expr.h"

typedef struct {
   const char *name;
   int not_object, unknown, type_error; /* error codes */
   const char *const *fields;           /* accepted argument fields */
} scoped_op_t;

static const char *const filter_fields[] = {"input", "as", "cond", "limit", NULL};
static const char *const map_fields[] = {"input", "as", "in", NULL};
static const char *const reduce_fields[] = {"input", "initialValue", "in", NULL};
static const char *const let_fields[] = {"vars", "in", NULL};

static const scoped_op_t scoped_ops[] = {
   {"$filter", 28646, 28647, 28651, filter_fields},
   {"$map", 16878, 16879, 16883, map_fields},
   {"$reduce", 40075, 40076, 40080, reduce_fields},
   {"$let", 16874, 16875, 0, let_fields},
};

static const scoped_op_t *
find_op(const char *name)
{
   for (size_t i = 0; i < sizeof scoped_ops / sizeof scoped_ops[0]; i++) {
      if (strcmp(scoped_ops[i].name, name) == 0) {
         return &scoped_ops[i];
      }
   }
   return NULL;
}

bool
tm_expr_is_scoped(const char *name)
{
   return find_op(name) != NULL;
}

/* The argument document's fields, checked against the operator's list. */
static bool
get_fields(const scoped_op_t *op, const bson_value_t *arg, bson_t *doc, bson_error_t *error)
{
   bson_iter_t it;
   if (arg->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(arg, doc)) {
      if (op->not_object == 40075) {
         return tm_error_set(error, 40075, "$reduce requires an object as an argument, found: %s",
                             tm_type_name(arg->value_type));
      }
      return tm_error_set(error, op->not_object, "%s only supports an object as its argument",
                          op->name);
   }
   bson_iter_init(&it, doc);
   while (bson_iter_next(&it)) {
      bool known = false;
      for (int i = 0; op->fields[i]; i++) {
         known = known || strcmp(op->fields[i], bson_iter_key(&it)) == 0;
      }
      if (!known) {
         return tm_error_set(error, op->unknown,
                             op->unknown == 40076 ? "%s found an unknown argument: %s"
                                                  : "Unrecognized parameter to %s: %s",
                             op->name, bson_iter_key(&it));
      }
   }
   return true;
}

/* Parses doc[field] as an argument (slot `slot` of e). Missing: error `code` (0: optional,
 * the slot stays NULL). */
static bool
parse_field(tm_expr_t *e, const bson_t *doc, const char *field, int code, bson_error_t *error)
{
   bson_iter_t it;
   tm_expr_t *sub = NULL;
   if (bson_iter_init_find(&it, doc, field)) {
      if (!(sub = tm_expr_parse(bson_iter_value(&it), error))) {
         return false;
      }
   } else if (code == 40077 || code == 40078 || code == 40079) {
      return tm_error_set(error, code, "$reduce requires '%s' to be specified", field);
   } else if (code) {
      return tm_error_set(error, code, "Missing '%s' parameter to %s", field, e->op);
   }
   tm_expr_add_arg(e, sub, NULL);
   return true;
}

/* Parses `field` with `names` (count n) declared. */
static bool
parse_scoped_field(tm_expr_t *e, const bson_t *doc, const char *field, int code,
                   const char *const *names, size_t n, bson_error_t *error)
{
   size_t declared = 0;
   bool ok = true;
   while (ok && declared < n) {
      ok = tm_vars_declare(names[declared], error) && ++declared;
   }
   ok = ok && parse_field(e, doc, field, code, error);
   tm_vars_undeclare(declared);
   return ok;
}

static bool
parse_as(tm_expr_t *e, const bson_t *doc, bson_error_t *error)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, "as")) {
      e->var = bson_strdup("this");
      return true;
   }
   if (!BSON_ITER_HOLDS_UTF8(&it)) {
      return tm_error_set(error, 16866, "empty variable names are not allowed");
   }
   e->var = bson_strdup(bson_iter_utf8(&it, NULL));
   return tm_vars_check_name(e->var, error);
}

static bool
parse_let(tm_expr_t *e, const bson_t *doc, bson_error_t *error)
{
   bson_iter_t it, vars;
   bson_t vdoc;
   size_t n = 0;
   bool ok = true;
   if (!bson_iter_init_find(&it, doc, "vars")) {
      return tm_error_set(error, 16876, "Missing 'vars' parameter to $let");
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !tm_value_as_bson(bson_iter_value(&it), &vdoc)) {
      return tm_error_set(error, 10065, "invalid parameter: expected an object (vars)");
   }
   /* The variables' expressions see the outer scope only; `in` sees them all. */
   bson_iter_init(&vars, &vdoc);
   while (ok && bson_iter_next(&vars)) {
      tm_expr_t *sub = NULL;
      ok = tm_vars_check_name(bson_iter_key(&vars), error) &&
           (sub = tm_expr_parse(bson_iter_value(&vars), error)) != NULL;
      if (ok) {
         tm_expr_add_arg(e, sub, bson_iter_key(&vars));
      }
   }
   while (ok && n < e->n_args) {
      ok = tm_vars_declare(e->keys[n], error) && ++n;
   }
   if (ok && !bson_has_field(doc, "in")) {
      ok = tm_error_set(error, 16877, "Missing 'in' parameter to $let");
   }
   if (ok && bson_iter_init_find(&it, doc, "in")) {
      tm_expr_t *in = tm_expr_parse(bson_iter_value(&it), error);
      ok = in != NULL;
      if (ok) {
         tm_expr_add_arg(e, in, "");
      }
   }
   tm_vars_undeclare(n);
   return ok;
}

tm_expr_t *
tm_expr_parse_scoped(const char *name, const bson_value_t *arg, bson_error_t *error)
{
   static const char *const reduce_names[] = {"value", "this"};
   const scoped_op_t *op = find_op(name);
   tm_expr_t *e = tm_expr_new(E_SCOPED);
   bson_t doc;
   bool ok;
   e->op = name;
   ok = get_fields(op, arg, &doc, error);
   if (ok && strcmp(name, "$let") == 0) {
      ok = parse_let(e, &doc, error);
   } else if (ok && strcmp(name, "$reduce") == 0) {
      ok = parse_field(e, &doc, "input", 40077, error) &&
           parse_field(e, &doc, "initialValue", 40078, error) &&
           parse_scoped_field(e, &doc, "in", 40079, reduce_names, 2, error);
   } else if (ok) {
      bool filter = strcmp(name, "$filter") == 0;
      const char *as = NULL;
      ok = parse_as(e, &doc, error) && parse_field(e, &doc, "input", filter ? 28648 : 16880, error);
      as = e->var;
      ok = ok && parse_scoped_field(e, &doc, filter ? "cond" : "in", filter ? 28650 : 16882, &as, 1,
                                    error);
      ok = ok && (!filter || parse_scoped_field(e, &doc, "limit", 0, &as, 1, error));
   }
   if (!ok) {
      tm_expr_destroy(e);
      return NULL;
   }
   return e;
}

/* ---- evaluation ------------------------------------------------------------------------ */

static void
arr_append(bson_t *arr, uint32_t *n, const bson_value_t *v)
{
   char buf[16];
   const char *key;
   bson_uint32_to_string((*n)++, &key, buf, sizeof buf);
   if (v->value_type == BSON_TYPE_EOD) {
      bson_append_null(arr, key, -1);
   } else {
      bson_append_value(arr, key, -1, v);
   }
}

/* Evaluates the input array into *input (the caller destroys it unless this fails or sets
 * *done). A nullish input makes the result null: *done is then true. */
static bool
eval_input(const tm_expr_t *e, const bson_t *root, bson_value_t *input, bson_value_t *out,
           bool *done, bson_error_t *error)
{
   const scoped_op_t *op = find_op(e->op);
   *done = false;
   if (!tm_expr_eval(e->args[0], root, input, error)) {
      return false;
   }
   bson_type_t t = input->value_type;
   if (t == BSON_TYPE_EOD || t == BSON_TYPE_NULL || t == BSON_TYPE_UNDEFINED) {
      bson_value_destroy(input);
      out->value_type = BSON_TYPE_NULL;
      *done = true;
      return true;
   }
   if (t != BSON_TYPE_ARRAY) {
      bool reduce = op->type_error == 40080;
      tm_error_set(error, op->type_error,
                   reduce ? "%s requires that 'input' be an array, found: %s"
                          : "input to %s must be an array not %s",
                   e->op, tm_type_name(t));
      bson_value_destroy(input);
      return false;
   }
   return true;
}

/* $filter's limit: nullish means none; else a positive 32-bit integral value. */
static bool
eval_limit(const tm_expr_t *e, const bson_t *root, int64_t *limit, bson_error_t *error)
{
   bson_value_t v;
   *limit = -1;
   if (e->n_args < 3 || !e->args[2]) {
      return true;
   }
   if (!tm_expr_eval(e->args[2], root, &v, error)) {
      return false;
   }
   bool ok = true;
   if (v.value_type != BSON_TYPE_EOD && v.value_type != BSON_TYPE_NULL &&
       v.value_type != BSON_TYPE_UNDEFINED) {
      double d = tm_value_is_number(&v) ? tm_value_as_double(&v) : 0.5;
      if (d != (double)(int32_t)d) {
         char *json = tm_value_to_json(&v);
         ok = tm_error_set(error, 327391,
                           "$filter: limit must be represented as a 32-bit "
                           "integral value: %s",
                           json);
         bson_free(json);
      } else if (d <= 0) {
         ok = tm_error_set(error, 327392, "$filter: limit must be greater than 0: %d", (int)d);
      } else {
         *limit = (int64_t)d;
      }
   }
   bson_value_destroy(&v);
   return ok;
}

/* $filter and $map: one pass over the input with `as` bound to each element. */
static bool
eval_each(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bool filter = strcmp(e->op, "$filter") == 0, done, ok;
   bson_value_t input, elem = {0};
   int64_t limit = -1;
   if (!eval_input(e, root, &input, out, &done, error) || done) {
      return done;
   }
   if (filter && !eval_limit(e, root, &limit, error)) {
      bson_value_destroy(&input);
      return false;
   }
   bson_t in, arr = BSON_INITIALIZER;
   bson_iter_t it;
   uint32_t n = 0;
   ok = tm_vars_bind(e->var, &elem, error);
   size_t bound = ok ? 1 : 0;
   tm_value_as_bson(&input, &in);
   bson_iter_init(&it, &in);
   while (ok && bson_iter_next(&it) && (limit < 0 || n < limit)) {
      bson_value_t r;
      elem = *bson_iter_value(&it);
      ok = tm_expr_eval(e->args[1], root, &r, error);
      if (ok && !filter) {
         arr_append(&arr, &n, &r);
      } else if (ok && tm_value_truthy(&r)) {
         arr_append(&arr, &n, &elem);
      }
      bson_value_destroy(&r);
   }
   tm_vars_unbind(bound);
   bson_value_destroy(&input);
   if (!ok) {
      bson_destroy(&arr);
      return false;
   }
   tm_value_from_bson(&arr, BSON_TYPE_ARRAY, out);
   return true;
}

static bool
eval_reduce(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bool done, ok;
   bson_value_t input, acc, elem = {0};
   if (!eval_input(e, root, &input, out, &done, error) || done) {
      return done;
   }
   if (!tm_expr_eval(e->args[1], root, &acc, error)) {
      bson_value_destroy(&input);
      return false;
   }
   bson_t in;
   bson_iter_t it;
   size_t bound = 0;
   ok = tm_vars_bind("value", &acc, error) && ++bound && tm_vars_bind("this", &elem, error) &&
        ++bound;
   tm_value_as_bson(&input, &in);
   bson_iter_init(&it, &in);
   while (ok && bson_iter_next(&it)) {
      bson_value_t next;
      elem = *bson_iter_value(&it);
      ok = tm_expr_eval(e->args[2], root, &next, error);
      bson_value_destroy(&acc);
      acc = next; /* the binding points at `acc`, so it sees the new value */
   }
   tm_vars_unbind(bound);
   bson_value_destroy(&input);
   if (!ok) {
      bson_value_destroy(&acc);
      return false;
   }
   *out = acc;
   return true;
}

static bool
eval_let(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   size_t n = e->n_args - 1, done = 0, bound = 0;
   bson_value_t *vals = bson_malloc0((n + 1) * sizeof *vals);
   bool ok = true;
   for (; done < n && ok; done++) {
      ok = tm_expr_eval(e->args[done], root, &vals[done], error);
   }
   while (ok && bound < n) {
      ok = tm_vars_bind(e->keys[bound], &vals[bound], error) && ++bound;
   }
   ok = ok && tm_expr_eval(e->args[n], root, out, error);
   tm_vars_unbind(bound);
   for (size_t i = 0; i < done; i++) {
      bson_value_destroy(&vals[i]);
   }
   bson_free(vals);
   return ok;
}

bool
tm_expr_eval_scoped(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   if (strcmp(e->op, "$let") == 0) {
      return eval_let(e, root, out, error);
   }
   if (strcmp(e->op, "$reduce") == 0) {
      return eval_reduce(e, root, out, error);
   }
   return eval_each(e, root, out, error);
}
