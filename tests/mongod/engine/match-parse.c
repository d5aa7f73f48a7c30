/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing and validating query filters into matcher trees.
 */
#include <string.h>

#include "expr.h"
#include "jsonschema-private.h"
#include "match-private.h"

tm_mnode_t *
tm_mnode_new(tm_node_kind_t kind)
{
   tm_mnode_t *n = bson_malloc0(sizeof *n);

   n->kind = kind;
   return n;
}

void
tm_mnode_destroy(tm_mnode_t *n)
{
   if (!n) {
      return;
   }
   for (size_t i = 0; i < n->n_kids; i++) {
      tm_mnode_destroy(n->kids[i]);
   }
   bson_free(n->kids);
   tm_expr_destroy(n->expr);
   tm_schema_destroy(n->schema);
   if (n->re) {
      regfree(n->re);
      bson_free(n->re);
   }
   for (size_t i = 0; n->in_re && i < n->in_n; i++) {
      if (n->in_re[i]) {
         regfree(n->in_re[i]);
         bson_free(n->in_re[i]);
      }
   }
   bson_free(n->in_re);
   bson_free(n->in_vals);
   bson_free(n->in_strs);
   tm_path_destroy(&n->path);
   bson_free(n);
}

void
tm_mnode_add(tm_mnode_t *parent, tm_mnode_t *kid)
{
   parent->kids = bson_realloc(parent->kids, (parent->n_kids + 1) * sizeof(tm_mnode_t *));
   parent->kids[parent->n_kids++] = kid;
}

/* Field paths of the predicates being parsed; NULL in value mode ($elemMatch on values). */
typedef struct {
   const char *path;
} pctx_t;

static bool parse_into(tm_mnode_t *parent, const bson_t *filter, bson_error_t *error);
static bool parse_ops(tm_mnode_t *parent, const pctx_t *p, const bson_t *ops, bson_error_t *error);

static tm_mnode_t *
leaf_new(const pctx_t *p, tm_op_t op, const bson_value_t *operand)
{
   tm_mnode_t *n = tm_mnode_new(TM_N_LEAF);

   n->op = op;
   n->operand = *operand;
   if (p->path) {
      n->has_path = true;
      tm_path_parse(p->path, &n->path);
   }
   return n;
}

static tm_mnode_t *
wrap(tm_node_kind_t kind, tm_mnode_t *kid)
{
   tm_mnode_t *n = tm_mnode_new(kind);

   tm_mnode_add(n, kid);
   return n;
}

static tm_mnode_t *
eq_leaf(const pctx_t *p, const bson_value_t *v, bson_error_t *error)
{
   tm_mnode_t *n = leaf_new(p, TM_OP_EQ, v);

   if (v->value_type == BSON_TYPE_REGEX) {
      n->re = tm_regex_new(v->value.v_regex.regex, v->value.v_regex.options, error);
      if (!n->re) {
         tm_mnode_destroy(n);
         return NULL;
      }
   }
   return n;
}

static bool
parse_regex(tm_mnode_t *parent, const pctx_t *p, const bson_t *ops, bson_error_t *error)
{
   bson_iter_t it;
   const char *pattern = NULL, *options = NULL;
   const bson_value_t *operand = NULL;
   tm_mnode_t *n;

   bson_iter_init(&it, ops);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "$regex") == 0) {
         operand = bson_iter_value(&it);
         if (BSON_ITER_HOLDS_UTF8(&it)) {
            pattern = bson_iter_utf8(&it, NULL);
         } else if (BSON_ITER_HOLDS_REGEX(&it)) {
            pattern = bson_iter_regex(&it, &options);
         } else {
            return tm_error_set(error, 2, "$regex has to be a string");
         }
      } else if (strcmp(bson_iter_key(&it), "$options") == 0) {
         if (!BSON_ITER_HOLDS_UTF8(&it)) {
            return tm_error_set(error, 2, "$options has to be a string");
         }
         options = bson_iter_utf8(&it, NULL);
      }
   }
   if (!pattern) {
      return tm_error_set(error, 2, "$options needs a $regex");
   }
   n = leaf_new(p, TM_OP_REGEX, operand);
   tm_mnode_add(parent, n);
   n->re = tm_regex_new(pattern, options, error);
   return n->re != NULL;
}

bool
tm_is_operator_doc(const bson_value_t *v)
{
   bson_t doc;
   bson_iter_t it;

   return v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &doc) &&
          bson_iter_init(&it, &doc) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$';
}

static bool
parse_elem_match(tm_mnode_t *parent, const pctx_t *p, const bson_value_t *v, bson_error_t *error)
{
   bson_t sub;
   tm_mnode_t *n, *pred;
   pctx_t value_ctx = {NULL};
   bson_iter_t it;
   bool value_mode;

   if (v->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(v, &sub)) {
      return tm_error_set(error, 2, "$elemMatch needs an Object");
   }
   /* {$elemMatch: {$gt: 1}} matches elements as values; {$elemMatch: {a: 1}} and the
    * logical operators match them as documents. */
   value_mode = bson_iter_init(&it, &sub) && bson_iter_next(&it) && bson_iter_key(&it)[0] == '$' &&
                strcmp(bson_iter_key(&it), "$and") != 0 && strcmp(bson_iter_key(&it), "$or") != 0 &&
                strcmp(bson_iter_key(&it), "$nor") != 0;
   n = leaf_new(p, TM_OP_EQ, v);
   n->kind = value_mode ? TM_N_ELEM_VAL : TM_N_ELEM_OBJ;
   tm_mnode_add(parent, n);
   pred = tm_mnode_new(TM_N_AND);
   tm_mnode_add(n, pred);
   return value_mode ? parse_ops(pred, &value_ctx, &sub, error) : parse_into(pred, &sub, error);
}

static bool
parse_all(tm_mnode_t *parent, const pctx_t *p, const bson_value_t *v, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;
   tm_mnode_t *and;

   if (v->value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(v, &arr)) {
      return tm_error_set(error, 2, "$all needs an array");
   }
   if (bson_count_keys(&arr) == 0) {
      tm_mnode_add(parent, tm_mnode_new(TM_N_FALSE));
      return true;
   }
   and = tm_mnode_new(TM_N_AND);
   tm_mnode_add(parent, and);
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      const bson_value_t *e = bson_iter_value(&it);
      if (tm_is_operator_doc(e)) {
         bson_t sub;
         bson_iter_t first;
         tm_value_as_bson(e, &sub);
         bson_iter_init(&first, &sub);
         bson_iter_next(&first);
         if (strcmp(bson_iter_key(&first), "$elemMatch") != 0) {
            return tm_error_set(error, 2, "no $ expressions in $all");
         }
         if (!parse_elem_match(and, p, bson_iter_value(&first), error)) {
            return false;
         }
         continue;
      }
      tm_mnode_t *leaf = eq_leaf(p, e, error);
      if (!leaf) {
         return false;
      }
      tm_mnode_add(and, leaf);
   }
   return true;
}

static bool
parse_not(tm_mnode_t *parent, const pctx_t *p, const bson_value_t *v, bson_error_t *error)
{
   bson_t sub;
   tm_mnode_t *and = tm_mnode_new(TM_N_AND);

   tm_mnode_add(parent, wrap(TM_N_NOT, and));
   if (v->value_type == BSON_TYPE_REGEX) {
      tm_mnode_t *leaf = eq_leaf(p, v, error);
      if (!leaf) {
         return false;
      }
      tm_mnode_add(and, leaf);
      return true;
   }
   if (v->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(v, &sub)) {
      return tm_error_set(error, 2, "$not needs a regex or a document");
   }
   if (bson_empty(&sub)) {
      return tm_error_set(error, 2, "$not cannot be empty");
   }
   if (!tm_is_operator_doc(v)) {
      bson_iter_t first;
      bson_iter_init(&first, &sub);
      bson_iter_next(&first);
      return tm_error_set(error, 2, "unknown operator: %s", bson_iter_key(&first));
   }
   return parse_ops(and, p, &sub, error);
}

static bool
parse_leaf_op(tm_mnode_t *parent, const pctx_t *p, tm_op_t op, const char *name,
              const bson_value_t *v, bool negate, bson_error_t *error)
{
   tm_mnode_t *n = leaf_new(p, op, v);

   tm_mnode_add(parent, negate ? wrap(TM_N_NOT, n) : n);
   switch (op) {
   case TM_OP_IN:
      return tm_match_parse_in(n, name, error);
   case TM_OP_TYPE:
      return tm_match_parse_type(n, error);
   case TM_OP_SIZE:
      return tm_match_parse_size(n, error);
   case TM_OP_MOD:
      return tm_match_parse_mod(n, error);
   default:
      if (v->value_type == BSON_TYPE_REGEX && op != TM_OP_EQ) {
         return tm_error_set(error, 2, "Can't have RegEx as arg to predicate over field '%s'.",
                             p->path ? p->path : "");
      }
      return true;
   }
}

static const struct {
   const char *name;
   tm_op_t op;
   bool negate;
} leaf_ops[] = {
   {"$eq", TM_OP_EQ, false},     {"$ne", TM_OP_EQ, true},    {"$gt", TM_OP_GT, false},
   {"$gte", TM_OP_GTE, false},   {"$lt", TM_OP_LT, false},   {"$lte", TM_OP_LTE, false},
   {"$in", TM_OP_IN, false},     {"$nin", TM_OP_IN, true},   {"$type", TM_OP_TYPE, false},
   {"$size", TM_OP_SIZE, false}, {"$mod", TM_OP_MOD, false},
};

static bool
parse_op(tm_mnode_t *parent, const pctx_t *p, const char *name, const bson_value_t *v,
         bson_error_t *error)
{
   for (size_t i = 0; i < sizeof leaf_ops / sizeof leaf_ops[0]; i++) {
      if (strcmp(name, leaf_ops[i].name) == 0) {
         if (strcmp(name, "$ne") == 0 && v->value_type == BSON_TYPE_REGEX) {
            return tm_error_set(error, 2, "Can't have regex as arg to $ne.");
         }
         return parse_leaf_op(parent, p, leaf_ops[i].op, name, v, leaf_ops[i].negate, error);
      }
   }
   if (strcmp(name, "$exists") == 0) {
      bool truthy = v->value_type == BSON_TYPE_BOOL ? v->value.v_bool
                    : tm_value_is_number(v)         ? tm_value_as_double(v) != 0
                                                    : v->value_type != BSON_TYPE_NULL;
      return parse_leaf_op(parent, p, TM_OP_EXISTS, name, v, !truthy, error);
   }
   if (strcmp(name, "$all") == 0) {
      return parse_all(parent, p, v, error);
   }
   if (strcmp(name, "$elemMatch") == 0) {
      return parse_elem_match(parent, p, v, error);
   }
   if (strcmp(name, "$not") == 0) {
      return parse_not(parent, p, v, error);
   }
   if (strcmp(name, "$regex") == 0 || strcmp(name, "$options") == 0) {
      return true; /* handled once per operator document by parse_regex */
   }
   if (strcmp(name, "$comment") == 0) {
      return true;
   }
   return tm_error_set(error, 2, "unknown operator: %s", name);
}

static bool
parse_ops(tm_mnode_t *parent, const pctx_t *p, const bson_t *ops, bson_error_t *error)
{
   bson_iter_t it;
   bool has_regex = false;

   bson_iter_init(&it, ops);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      if (strcmp(key, "$regex") == 0 || strcmp(key, "$options") == 0) {
         has_regex = true;
      }
      if (!parse_op(parent, p, key, bson_iter_value(&it), error)) {
         return false;
      }
   }
   return has_regex ? parse_regex(parent, p, ops, error) : true;
}

static bool
parse_logical(tm_mnode_t *parent, const char *op, const bson_value_t *v, bson_error_t *error)
{
   bson_t arr, sub;
   bson_iter_t it;
   tm_node_kind_t kind = op[1] == 'a' ? TM_N_AND : (op[1] == 'o' ? TM_N_OR : TM_N_NOR);
   tm_mnode_t *n = tm_mnode_new(kind);

   tm_mnode_add(parent, n);
   if (v->value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(v, &arr)) {
      return tm_error_set(error, 2, "%s must be an array", op);
   }
   if (bson_empty(&arr)) {
      return tm_error_set(error, 2, "$and/$or/$nor must be a nonempty array");
   }
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      tm_mnode_t *and;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !tm_value_as_bson(bson_iter_value(&it), &sub)) {
         return tm_error_set(error, 2, "$or/$and/$nor entries need to be full objects");
      }
      and = tm_mnode_new(TM_N_AND);
      tm_mnode_add(n, and);
      if (!parse_into(and, &sub, error)) {
         return false;
      }
   }
   return true;
}

static bool
parse_top_operator(tm_mnode_t *parent, const char *key, const bson_value_t *v, bson_error_t *error)
{
   if (strcmp(key, "$and") == 0 || strcmp(key, "$or") == 0 || strcmp(key, "$nor") == 0) {
      return parse_logical(parent, key, v, error);
   }
   if (strcmp(key, "$comment") == 0) {
      return true;
   }
   if (strcmp(key, "$expr") == 0) {
      tm_mnode_t *n = tm_mnode_new(TM_N_EXPR);
      tm_mnode_add(parent, n);
      n->expr = tm_expr_parse(v, error);
      return n->expr != NULL;
   }
   if (strcmp(key, "$jsonSchema") == 0) {
      tm_mnode_t *n = tm_mnode_new(TM_N_SCHEMA);
      tm_mnode_add(parent, n);
      n->schema = tm_schema_parse(v, error);
      return n->schema != NULL;
   }
   if (strcmp(key, "$where") == 0 || strcmp(key, "$text") == 0 || strcmp(key, "$sampleRate") == 0) {
      return tm_error_set(error, 2, "%s is not supported by the test server", key);
   }
   return tm_error_set(error, 2, "unknown top level operator: %s", key);
}

/* {$ref: ..., $id: ...} is a DBRef value compared by equality, not an operator document. */
static bool
is_dbref(const bson_value_t *v)
{
   bson_t doc;
   bson_iter_t it;

   return tm_value_as_bson(v, &doc) && bson_iter_init(&it, &doc) && bson_iter_next(&it) &&
          strcmp(bson_iter_key(&it), "$ref") == 0;
}

static bool
parse_into(tm_mnode_t *parent, const bson_t *filter, bson_error_t *error)
{
   bson_iter_t it;

   if (!bson_iter_init(&it, filter)) {
      return tm_error_set(error, 2, "invalid filter document");
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const bson_value_t *v = bson_iter_value(&it);
      pctx_t p = {key};
      tm_path_t check;
      bool valid;

      if (key[0] == '$') {
         if (!parse_top_operator(parent, key, v, error)) {
            return false;
         }
         continue;
      }
      valid = tm_path_parse(key, &check);
      tm_path_destroy(&check);
      if (!valid) {
         return tm_error_set(error, 2, "Invalid path: '%s'", key);
      }
      if (tm_is_operator_doc(v) && !is_dbref(v)) {
         bson_t ops;
         tm_value_as_bson(v, &ops);
         if (!parse_ops(parent, &p, &ops, error)) {
            return false;
         }
      } else {
         tm_mnode_t *leaf = eq_leaf(&p, v, error);
         if (!leaf) {
            return false;
         }
         tm_mnode_add(parent, leaf);
      }
   }
   return true;
}

tm_mnode_t *
tm_match_parse_doc(const bson_t *filter, bson_error_t *error)
{
   tm_mnode_t *root = tm_mnode_new(TM_N_AND);

   if (!parse_into(root, filter, error)) {
      tm_mnode_destroy(root);
      return NULL;
   }
   return root;
}

tm_mnode_t *
tm_match_parse_value(const bson_t *ops, bson_error_t *error)
{
   tm_mnode_t *root = tm_mnode_new(TM_N_AND);
   pctx_t p = {NULL};

   if (!parse_ops(root, &p, ops, error)) {
      tm_mnode_destroy(root);
      return NULL;
   }
   return root;
}

tm_mnode_t *
tm_match_value_eq(const bson_value_t *v, bson_error_t *error)
{
   pctx_t p = {NULL};
   tm_mnode_t *leaf = eq_leaf(&p, v, error);
   tm_mnode_t *root;

   if (!leaf) {
      return NULL;
   }
   root = tm_mnode_new(TM_N_AND);
   tm_mnode_add(root, leaf);
   return root;
}

tm_matcher_t *
tm_matcher_new(const bson_t *filter, bson_error_t *error)
{
   tm_matcher_t *m = bson_malloc0(sizeof *m);

   m->filter = filter ? bson_copy(filter) : bson_new();
   m->root = tm_match_parse_doc(m->filter, error);
   if (!m->root) {
      tm_matcher_destroy(m);
      return NULL;
   }
   return m;
}

void
tm_matcher_destroy(tm_matcher_t *matcher)
{
   if (!matcher) {
      return;
   }
   tm_mnode_destroy(matcher->root);
   bson_destroy(matcher->filter);
   bson_free(matcher);
}
