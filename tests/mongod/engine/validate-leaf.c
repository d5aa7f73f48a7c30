/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Validation errors of single query operators (validate.c walks the filter): clauses as
 * they stand in a filter document, and the leaf explanations of doc_validation_error.cpp,
 * {operatorName, specifiedAs, reason, consideredValue(s) ...}, with the reason worded for a
 * clause that failed or, under $not / $nor ("inverted"), one that matched.
 */
#include <string.h>

#include "expr.h"
#include "match-private.h"
#include "validate-private.h"

/* At most this many values are listed as consideredValues (MongoDB's default for
 * internalQueryMaxDocValidationErrorConsideredValues). */
#define MAX_CONSIDERED 10

void
tm_clause_filter(const tm_clause_t *c, bson_t *f)
{
   bson_t ops;
   bson_init(f);
   if (!c->op) {
      bson_append_value(f, c->key, -1, &c->value);
      return;
   }
   bson_append_document_begin(f, c->key, -1, &ops);
   bson_append_value(&ops, c->op, -1, &c->value);
   if (c->options.value_type != BSON_TYPE_EOD) {
      bson_append_value(&ops, "$options", -1, &c->options);
   }
   bson_append_document_end(f, &ops);
}

bool
tm_clause_matches(const tm_clause_t *c, const bson_t *doc)
{
   bson_t f;
   tm_clause_filter(c, &f);
   tm_matcher_t *m = tm_matcher_new(&f, NULL);
   bool ok = m && tm_matcher_match(m, doc, NULL);
   tm_matcher_destroy(m);
   bson_destroy(&f);
   return ok;
}

size_t
tm_clauses_of(const bson_t *filter, tm_clause_t *out, size_t cap)
{
   bson_iter_t it, ops;
   size_t n = 0;
   bson_iter_init(&it, filter);
   while (bson_iter_next(&it) && n < cap) {
      const char *key = bson_iter_key(&it);
      if (strcmp(key, "$comment") == 0) {
         continue;
      }
      bson_t sub;
      bool op_doc = key[0] != '$' && tm_is_operator_doc(bson_iter_value(&it)) &&
                    tm_value_as_bson(bson_iter_value(&it), &sub) && !bson_has_field(&sub, "$ref");
      if (!op_doc) {
         out[n++] = (tm_clause_t){key, NULL, *bson_iter_value(&it), {0}};
         continue;
      }
      bool regex_done = false;
      bson_iter_init(&ops, &sub);
      while (bson_iter_next(&ops) && n < cap) {
         const char *op = bson_iter_key(&ops);
         bool is_regex = strcmp(op, "$regex") == 0 || strcmp(op, "$options") == 0;
         if (is_regex) {
            bson_iter_t r, o;
            if (regex_done) {
               continue;
            }
            regex_done = true;
            bson_iter_init_find(&r, &sub, "$regex");
            bool has_options = bson_iter_init_find(&o, &sub, "$options");
            out[n++] = (tm_clause_t){key, "$regex", *bson_iter_value(&r), {0}};
            if (has_options) {
               out[n - 1].options = *bson_iter_value(&o);
            }
            continue;
         }
         out[n++] = (tm_clause_t){key, op, *bson_iter_value(&ops), {0}};
      }
   }
   return n;
}

static void
specified_as(const tm_clause_t *c, bson_t *out)
{
   bson_t f;
   tm_clause_filter(c, &f);
   BSON_APPEND_DOCUMENT(out, "specifiedAs", &f);
   bson_destroy(&f);
}

typedef struct {
   bson_t arr;
   uint32_t n;
   bool exists;
   bool leaf_arrays; /* keep an array at the end as one value (no traversal) */
} values_t;

static bool
collect(const bson_value_t *v, int32_t index, void *ctx)
{
   values_t *vals = ctx;
   char key[16];
   const char *k;
   (void)index;
   if (!v) {
      return false;
   }
   vals->exists = true;
   if (v->value_type == BSON_TYPE_ARRAY && !vals->leaf_arrays) {
      return false; /* its elements were visited already */
   }
   bson_uint32_to_string(vals->n++, &k, key, sizeof key);
   bson_append_value(&vals->arr, k, -1, v);
   return false;
}

static void
values_at(const bson_t *doc, const char *dotted, bool traverse, values_t *vals)
{
   tm_path_t path;
   bson_init(&vals->arr);
   vals->n = 0;
   vals->exists = false;
   vals->leaf_arrays = !traverse;
   if (tm_path_parse(dotted, &path)) {
      tm_path_visit(doc, &path, traverse, collect, vals);
   }
   tm_path_destroy(&path);
}

static void
append_considered(values_t *vals, bson_t *out)
{
   bson_iter_t it;
   if (vals->n == 1) {
      bson_iter_init(&it, &vals->arr);
      bson_iter_next(&it);
      bson_append_value(out, "consideredValue", -1, bson_iter_value(&it));
      return;
   }
   bson_t arr;
   uint32_t i = 0;
   BSON_APPEND_ARRAY_BEGIN(out, "consideredValues", &arr);
   bson_iter_init(&it, &vals->arr);
   while (bson_iter_next(&it) && i < MAX_CONSIDERED) {
      char key[16];
      const char *k;
      bson_uint32_to_string(i++, &k, key, sizeof key);
      bson_append_value(&arr, k, -1, bson_iter_value(&it));
   }
   bson_append_array_end(out, &arr);
   if (vals->n > MAX_CONSIDERED) {
      BSON_APPEND_BOOL(out, "consideredValuesTruncated", true);
   }
}

/* consideredType or consideredTypes (a sorted set of names). */
static void
append_types(values_t *vals, bson_t *out)
{
   const char *names[MAX_CONSIDERED + 1];
   size_t n = 0;
   bson_iter_t it;
   bson_iter_init(&it, &vals->arr);
   while (bson_iter_next(&it) && n <= MAX_CONSIDERED) {
      const char *name = tm_type_name(bson_iter_type(&it));
      size_t at = 0;
      while (at < n && strcmp(names[at], name) < 0) {
         at++;
      }
      if (at == n || strcmp(names[at], name) != 0) {
         memmove(&names[at + 1], &names[at], (n - at) * sizeof names[0]);
         names[at] = name;
         n++;
      }
   }
   if (n == 1) {
      BSON_APPEND_UTF8(out, "consideredType", names[0]);
   } else if (n > 1) {
      bson_t arr;
      BSON_APPEND_ARRAY_BEGIN(out, "consideredTypes", &arr);
      for (size_t i = 0; i < n; i++) {
         char key[16];
         const char *k;
         bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
         bson_append_utf8(&arr, k, -1, names[i], -1);
      }
      bson_append_array_end(out, &arr);
   }
}

typedef struct {
   const char *name;            /* operatorName */
   const char *normal;          /* reason when the clause failed */
   const char *inverted;        /* reason when it matched (under $not / $nor) */
   const char *const *expected; /* sorted type names it applies to, or NULL */
   bool traverse;               /* implicit array traversal at the leaf */
} leaf_kind_t;

static const char *const numbers[] = {"decimal", "double", "int", "long", NULL};
static const char *const regexes[] = {"regex", "string", "symbol", NULL};
static const char *const arrays[] = {"array", NULL};

static const leaf_kind_t leaf_kinds[] = {
   {"$eq", "comparison failed", "comparison succeeded", NULL, true},
   {"$gt", "comparison failed", "comparison succeeded", NULL, true},
   {"$gte", "comparison failed", "comparison succeeded", NULL, true},
   {"$lt", "comparison failed", "comparison succeeded", NULL, true},
   {"$lte", "comparison failed", "comparison succeeded", NULL, true},
   {"$in", "no matching value found in array", "matching value found in array", NULL, true},
   {"$regex", "regular expression did not match", "regular expression did match", regexes, true},
   {"$mod", "$mod did not evaluate to expected remainder",
    "$mod did evaluate to expected remainder", numbers, true},
   {"$size", "array length was not equal to given size", "array length was equal to given size",
    arrays, false},
   {"$elemMatch", "array did not satisfy the child predicate",
    "array did satisfy the child predicate", arrays, false},
   {"$all", "array did not contain all specified values", "array did contain all specified values",
    NULL, false},
};

static bool
has_expected_type(values_t *vals, const char *const *expected)
{
   bson_iter_t it;
   bson_iter_init(&it, &vals->arr);
   while (bson_iter_next(&it)) {
      for (size_t i = 0; expected[i]; i++) {
         if (strcmp(tm_type_name(bson_iter_type(&it)), expected[i]) == 0) {
            return true;
         }
      }
   }
   return false;
}

static void
path_leaf(const tm_clause_t *c, const leaf_kind_t *k, const char *name, const bson_t *doc,
          bool inverted, bson_t *out)
{
   values_t vals;
   BSON_APPEND_UTF8(out, "operatorName", name);
   specified_as(c, out);
   values_at(doc, c->key, k->traverse, &vals);
   if (!vals.exists) {
      BSON_APPEND_UTF8(out, "reason", "field was missing");
   } else if (k->expected && !has_expected_type(&vals, k->expected)) {
      bson_t arr;
      BSON_APPEND_UTF8(out, "reason", "type did not match");
      append_types(&vals, out);
      if (k->expected[1]) {
         BSON_APPEND_ARRAY_BEGIN(out, "expectedTypes", &arr);
         for (uint32_t i = 0; k->expected[i]; i++) {
            char key[16];
            const char *kk;
            bson_uint32_to_string(i, &kk, key, sizeof key);
            bson_append_utf8(&arr, kk, -1, k->expected[i], -1);
         }
         bson_append_array_end(out, &arr);
      } else {
         BSON_APPEND_UTF8(out, "expectedType", k->expected[0]);
      }
   } else {
      BSON_APPEND_UTF8(out, "reason", inverted ? k->inverted : k->normal);
   }
   if (vals.exists) {
      append_considered(&vals, out);
   }
   bson_destroy(&vals.arr);
}

static void
type_leaf(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   values_t vals;
   BSON_APPEND_UTF8(out, "operatorName", "$type");
   specified_as(c, out);
   values_at(doc, c->key, true, &vals);
   if (!vals.exists) {
      BSON_APPEND_UTF8(out, "reason", "field was missing");
   } else {
      BSON_APPEND_UTF8(out, "reason", inverted ? "type did match" : "type did not match");
      append_considered(&vals, out);
      append_types(&vals, out);
   }
   bson_destroy(&vals.arr);
}

static void
exists_leaf(const tm_clause_t *c, bool inverted, bson_t *out)
{
   BSON_APPEND_UTF8(out, "operatorName", "$exists");
   specified_as(c, out);
   /* {$exists: false} is NOT(exists): it failed because the path does exist. */
   if (!tm_value_truthy(&c->value)) {
      inverted = !inverted;
   }
   BSON_APPEND_UTF8(out, "reason", inverted ? "path does exist" : "path does not exist");
}

static void
expr_clause(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   bson_error_t error = {0};
   bson_value_t result;
   BSON_APPEND_UTF8(out, "operatorName", "$expr");
   specified_as(c, out);
   tm_expr_t *e = tm_expr_parse(&c->value, &error);
   if (e && tm_expr_eval(e, doc, &result, &error)) {
      BSON_APPEND_UTF8(out, "reason",
                       inverted ? "expression did match" : "expression did not match");
      if (result.value_type != BSON_TYPE_EOD) {
         bson_append_value(out, "expressionResult", -1, &result);
      }
      bson_value_destroy(&result);
   } else {
      bson_t details;
      char name[32];
      const char *known = tm_code_name((int32_t)error.code);
      if (known) {
         bson_strncpy(name, known, sizeof name);
      } else {
         snprintf(name, sizeof name, "Location%u", error.code);
      }
      BSON_APPEND_UTF8(out, "reason", "failed to evaluate aggregation expression");
      BSON_APPEND_DOCUMENT_BEGIN(out, "details", &details);
      BSON_APPEND_INT32(&details, "code", (int32_t)error.code);
      BSON_APPEND_UTF8(&details, "codeName", name);
      BSON_APPEND_UTF8(&details, "errmsg", error.message);
      bson_append_document_end(out, &details);
   }
   tm_expr_destroy(e);
}

void
tm_explain_leaf(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   const char *op = c->op ? c->op : c->value.value_type == BSON_TYPE_REGEX ? "$regex" : "$eq";
   const char *name = op;
   if (strcmp(c->key, "$expr") == 0) {
      expr_clause(c, doc, inverted, out);
      return;
   }
   if (strcmp(op, "$type") == 0) {
      type_leaf(c, doc, inverted, out);
      return;
   }
   if (strcmp(op, "$exists") == 0) {
      exists_leaf(c, inverted, out);
      return;
   }
   /* $ne and $nin are NOT($eq) and NOT($in) under their own names. */
   if (strcmp(op, "$ne") == 0 || strcmp(op, "$nin") == 0) {
      op = op[2] == 'e' ? "$eq" : "$in";
      inverted = !inverted;
   }
   for (size_t i = 0; i < sizeof leaf_kinds / sizeof leaf_kinds[0]; i++) {
      if (strcmp(leaf_kinds[i].name, op) == 0) {
         path_leaf(c, &leaf_kinds[i], name, doc, inverted, out);
         return;
      }
   }
   /* An operator the matcher accepts but this table does not explain. */
   BSON_APPEND_UTF8(out, "operatorName", name);
   specified_as(c, out);
}
