/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Evaluating a parsed filter against documents (MongoDB 6.0 semantics: array fan-out,
 * type-bracketed comparisons, null matching missing).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "jsonschema-private.h"
#include "match-private.h"

bool
tm_regex_match(const regex_t *re, const bson_value_t *v)
{
   if (v->value_type == BSON_TYPE_UTF8 || v->value_type == BSON_TYPE_SYMBOL) {
      return regexec(re, v->value.v_utf8.str, 0, NULL, 0) == 0;
   }
   return false;
}

static bool
eq_value(const bson_value_t *operand, const regex_t *re, const bson_value_t *v)
{
   if (!v) {
      return operand->value_type == BSON_TYPE_NULL;
   }
   if (re) {
      /* A regex operand matches strings, and a stored regex with the same pattern. */
      return tm_regex_match(re, v) ||
             (v->value_type == BSON_TYPE_REGEX && tm_value_equal(operand, v));
   }
   if (operand->value_type == BSON_TYPE_NULL) {
      return v->value_type == BSON_TYPE_NULL || v->value_type == BSON_TYPE_UNDEFINED;
   }
   return tm_value_equal(operand, v);
}

static bool
compare_value(const tm_mnode_t *n, const bson_value_t *v)
{
   bson_value_t null_v;
   int bo = tm_type_bracket(n->operand.value_type);
   int r;

   if (!v) {
      /* Missing compares as null ({$gte: null} and {$lte: null} match it). */
      null_v.value_type = BSON_TYPE_NULL;
      v = &null_v;
   }
   /* Comparisons are type-bracketed, except against MinKey/MaxKey which bound everything. */
   if (tm_type_bracket(v->value_type) != bo && n->operand.value_type != BSON_TYPE_MINKEY &&
       n->operand.value_type != BSON_TYPE_MAXKEY) {
      return false;
   }
   r = tm_value_compare(v, &n->operand);
   switch (n->op) {
   case TM_OP_GT:
      return r > 0;
   case TM_OP_GTE:
      return r >= 0;
   case TM_OP_LT:
      return r < 0;
   default:
      return r <= 0;
   }
}

static bool
type_value(const tm_mnode_t *n, const bson_value_t *v)
{
   if (!v) {
      return false;
   }
   for (size_t i = 0; i < n->n_types; i++) {
      if (n->types[i] == 0 ? tm_value_is_number(v) : (int32_t)v->value_type == n->types[i]) {
         return true;
      }
      if (n->types[i] == -1 && v->value_type == BSON_TYPE_MINKEY) {
         return true;
      }
   }
   return false;
}

static bool
size_value(const tm_mnode_t *n, const bson_value_t *v)
{
   bson_t view;

   if (!v || v->value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(v, &view)) {
      return false;
   }
   return (int64_t)bson_count_keys(&view) == n->size_or_divisor;
}

static bool
mod_value(const tm_mnode_t *n, const bson_value_t *v)
{
   double d;

   if (!v || !tm_value_is_number(v)) {
      return false;
   }
   d = tm_value_as_double(v);
   if (isnan(d) || isinf(d)) {
      return false;
   }
   /* MongoDB truncates the value towards zero before taking the remainder. */
   return ((int64_t)d) % n->size_or_divisor == n->remainder;
}

/* $in. A string equals only string operands (sorted at parse time: binary search) and
 * matches only regex operands besides; any other value can equal only operands that are not
 * strings (null: a null operand). */
static bool
in_value(const tm_mnode_t *n, const bson_value_t *v)
{
   bool is_string = v && tm_type_bracket(v->value_type) == TM_BRACKET_STRING;
   if (is_string && n->in_strs_n > 0 &&
       bsearch(v, n->in_strs, n->in_strs_n, sizeof(bson_value_t), tm_string_order)) {
      return true;
   }
   if (is_string && n->in_n_re == 0) {
      return false;
   }
   for (size_t i = 0; i < n->in_n; i++) {
      const regex_t *re = n->in_re ? n->in_re[i] : NULL;
      if (is_string ? !re : tm_type_bracket(n->in_vals[i].value_type) == TM_BRACKET_STRING) {
         continue;
      }
      if (eq_value(&n->in_vals[i], re, v)) {
         return true;
      }
   }
   return false;
}

static bool
leaf_value(const tm_mnode_t *n, const bson_value_t *v)
{
   switch (n->op) {
   case TM_OP_EQ:
      return eq_value(&n->operand, n->re, v);
   case TM_OP_GT:
   case TM_OP_GTE:
   case TM_OP_LT:
   case TM_OP_LTE:
      return compare_value(n, v);
   case TM_OP_IN:
      return in_value(n, v);
   case TM_OP_EXISTS:
      return v != NULL;
   case TM_OP_TYPE:
      return type_value(n, v);
   case TM_OP_SIZE:
      return size_value(n, v);
   case TM_OP_REGEX:
      return v && (tm_regex_match(n->re, v) ||
                   (v->value_type == BSON_TYPE_REGEX && tm_value_equal(&n->operand, v)));
   case TM_OP_MOD:
      return mod_value(n, v);
   default:
      return false;
   }
}

static bool value_match(const tm_mnode_t *n, const bson_value_t *v, int32_t *pos);

/* Element-wise $elemMatch on one array value; *pos receives the matching element's index. */
static bool
elem_match(const tm_mnode_t *n, const bson_value_t *v, int32_t *pos)
{
   bson_t view, elem;
   bson_iter_t it;
   int32_t j = 0;

   if (!v || v->value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(v, &view) ||
       !bson_iter_init(&it, &view)) {
      return false;
   }
   for (; bson_iter_next(&it); j++) {
      const bson_value_t *e = bson_iter_value(&it);
      bool ok;
      if (n->kind == TM_N_ELEM_OBJ) {
         ok = tm_value_as_bson(e, &elem) && tm_mnode_match_doc(n->kids[0], &elem, NULL);
      } else {
         ok = value_match(n->kids[0], e, NULL);
      }
      if (ok) {
         *pos = j;
         return true;
      }
   }
   return false;
}

/* Value mode: the node applies to `v` itself (inside a value $elemMatch). */
static bool
value_match(const tm_mnode_t *n, const bson_value_t *v, int32_t *pos)
{
   int32_t ignored;

   switch (n->kind) {
   case TM_N_AND:
      for (size_t i = 0; i < n->n_kids; i++) {
         if (!value_match(n->kids[i], v, NULL)) {
            return false;
         }
      }
      return true;
   case TM_N_OR:
   case TM_N_NOR:
      for (size_t i = 0; i < n->n_kids; i++) {
         if (value_match(n->kids[i], v, NULL)) {
            return n->kind == TM_N_OR;
         }
      }
      return n->kind == TM_N_NOR;
   case TM_N_NOT:
      return !value_match(n->kids[0], v, NULL);
   case TM_N_FALSE:
      return false;
   case TM_N_LEAF:
      return leaf_value(n, v);
   default:
      return elem_match(n, v, pos ? pos : &ignored);
   }
}

typedef struct {
   const tm_mnode_t *node;
   int32_t pos;
} visit_ctx_t;

static bool
leaf_visit(const bson_value_t *value, int32_t index, void *ctx)
{
   visit_ctx_t *c = ctx;
   int32_t elem = -1;

   if (c->node->kind == TM_N_LEAF ? leaf_value(c->node, value)
                                  : elem_match(c->node, value, &elem)) {
      c->pos = index >= 0 ? index : elem;
      return true;
   }
   return false;
}

static bool
path_match(const tm_mnode_t *n, const bson_t *doc, int32_t *pos)
{
   visit_ctx_t c = {n, -1};
   /* $size, $exists and $elemMatch look at an array as a whole, never at its elements. */
   bool expand = n->kind == TM_N_LEAF && n->op != TM_OP_SIZE && n->op != TM_OP_EXISTS;

   if (!tm_path_visit(doc, &n->path, expand, leaf_visit, &c)) {
      return false;
   }
   if (pos && *pos < 0) {
      *pos = c.pos;
   }
   return true;
}

/* $expr: the expression's truthiness; an evaluation error (e.g. $divide by zero) does not
 * match, since matching cannot fail once the filter parsed. */
static bool
expr_match(const tm_mnode_t *n, const bson_t *doc)
{
   bson_value_t v;
   bool ok;

   if (!tm_expr_eval(n->expr, doc, &v, NULL)) {
      return false;
   }
   ok = tm_value_truthy(&v);
   bson_value_destroy(&v);
   return ok;
}

bool
tm_mnode_match_doc(const tm_mnode_t *n, const bson_t *doc, int32_t *pos)
{
   switch (n->kind) {
   case TM_N_AND:
      for (size_t i = 0; i < n->n_kids; i++) {
         if (!tm_mnode_match_doc(n->kids[i], doc, pos)) {
            return false;
         }
      }
      return true;
   case TM_N_OR:
      for (size_t i = 0; i < n->n_kids; i++) {
         if (tm_mnode_match_doc(n->kids[i], doc, pos)) {
            return true;
         }
      }
      return false;
   case TM_N_NOR:
      for (size_t i = 0; i < n->n_kids; i++) {
         if (tm_mnode_match_doc(n->kids[i], doc, NULL)) {
            return false;
         }
      }
      return true;
   case TM_N_NOT:
      return !tm_mnode_match_doc(n->kids[0], doc, NULL);
   case TM_N_FALSE:
      return false;
   case TM_N_EXPR:
      return expr_match(n, doc);
   case TM_N_SCHEMA:
      return tm_schema_match_doc(n->schema, doc);
   default:
      return path_match(n, doc, pos);
   }
}

bool
tm_matcher_match(const tm_matcher_t *matcher, const bson_t *doc, int32_t *positional)
{
   int32_t pos = -1;
   bool ok = tm_mnode_match_doc(matcher->root, doc, &pos);

   if (positional) {
      *positional = ok ? pos : -1;
   }
   return ok;
}

bool
tm_mnode_match_value(const tm_mnode_t *n, const bson_value_t *v)
{
   return value_match(n, v, NULL);
}
