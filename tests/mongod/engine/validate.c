/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Why a document fails a collection validator: the errInfo `details` of MongoDB 6.0's
 * DocumentValidationFailure (doc_validation_error.cpp). A filter with one clause is
 * explained by that clause, several by an implicit {operatorName: "$and"}; $and, $or and
 * $nor list the clauses that decide the outcome with their index; $not and $nor explain
 * their children "inverted" (why they matched). Leaves are in validate-leaf.c, $jsonSchema
 * in jsonschema-error.c.
 *
 * The walk follows the filter document itself and evaluates each clause on its own with a
 * small matcher; it runs only for documents that failed validation.
 */
#include <string.h>

#include "jsonschema-private.h"
#include "match-private.h"
#include "validate-private.h"

#define MAX_CLAUSES 256

static void explain_filter(const bson_t *filter, const bson_t *doc, bool inverted, bson_t *out);

typedef struct {
   bson_t arr;
   uint32_t n;
} entries_t;

static void
add_entry(entries_t *e, int32_t index, const bson_t *details)
{
   char key[16];
   const char *k;
   bson_t entry;
   bson_uint32_to_string(e->n++, &k, key, sizeof key);
   bson_append_document_begin(&e->arr, k, -1, &entry);
   BSON_APPEND_INT32(&entry, "index", index);
   BSON_APPEND_DOCUMENT(&entry, "details", details);
   bson_append_document_end(&e->arr, &entry);
}

/* Which children a list operator reports: an AND that failed its failing clauses, one that
 * matched (inverted) all of them; an OR the reverse; a NOR flips its children. */
static bool
reported(const char *op, bool inverted, bool child_matches)
{
   if (strcmp(op, "$or") == 0) {
      return inverted ? child_matches : true;
   }
   if (strcmp(op, "$nor") == 0) {
      return inverted ? true : child_matches;
   }
   return inverted ? true : !child_matches;
}

static const char *
list_field(const char *op, bool inverted)
{
   bool satisfied = strcmp(op, "$nor") == 0 ? !inverted : inverted;
   return satisfied ? "clausesSatisfied" : "clausesNotSatisfied";
}

static bool
filter_matches(const bson_t *filter, const bson_t *doc)
{
   tm_matcher_t *m = tm_matcher_new(filter, NULL);
   bool ok = m && tm_matcher_match(m, doc, NULL);
   tm_matcher_destroy(m);
   return ok;
}

/* $and / $or / $nor with an array of filter documents. */
static void
explain_list(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   bson_t arr, sub, details;
   bson_iter_t it;
   entries_t e = {.n = 0};
   bool child_inverted = strcmp(c->key, "$nor") == 0 ? !inverted : inverted;
   int32_t index = 0;
   bson_init(&e.arr);
   tm_value_as_bson(&c->value, &arr);
   bson_iter_init(&it, &arr);
   for (; bson_iter_next(&it); index++) {
      tm_value_as_bson(bson_iter_value(&it), &sub);
      if (reported(c->key, inverted, filter_matches(&sub, doc))) {
         bson_init(&details);
         explain_filter(&sub, doc, child_inverted, &details);
         add_entry(&e, index, &details);
         bson_destroy(&details);
      }
   }
   BSON_APPEND_UTF8(out, "operatorName", c->key);
   BSON_APPEND_ARRAY(out, list_field(c->key, inverted), &e.arr);
   bson_destroy(&e.arr);
}

/* {path: {$not: <operators or regex>}}: the child explained with the opposite sense. */
static void
explain_not(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   bson_t child, details;
   bson_init(&child);
   bson_append_value(&child, c->key, -1, &c->value);
   bson_init(&details);
   explain_filter(&child, doc, !inverted, &details);
   BSON_APPEND_UTF8(out, "operatorName", "$not");
   BSON_APPEND_DOCUMENT(out, "details", &details);
   bson_destroy(&details);
   bson_destroy(&child);
}

static void
explain_clause(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out)
{
   if (strcmp(c->key, "$and") == 0 || strcmp(c->key, "$or") == 0 || strcmp(c->key, "$nor") == 0) {
      explain_list(c, doc, inverted, out);
   } else if (strcmp(c->key, "$jsonSchema") == 0) {
      tm_schema_t *s = tm_schema_parse(&c->value, NULL);
      if (s) {
         tm_schema_explain(s, doc, inverted, out);
      }
      tm_schema_destroy(s);
   } else if (c->op && strcmp(c->op, "$not") == 0) {
      explain_not(c, doc, inverted, out);
   } else {
      tm_explain_leaf(c, doc, inverted, out);
   }
}

static void
explain_filter(const bson_t *filter, const bson_t *doc, bool inverted, bson_t *out)
{
   tm_clause_t *clauses = bson_malloc(MAX_CLAUSES * sizeof *clauses);
   size_t n = tm_clauses_of(filter, clauses, MAX_CLAUSES);
   if (n == 1) {
      explain_clause(&clauses[0], doc, inverted, out);
      bson_free(clauses);
      return;
   }
   /* Several clauses are an implicit $and. */
   entries_t e = {.n = 0};
   bson_t details;
   bson_init(&e.arr);
   for (size_t i = 0; i < n; i++) {
      if (reported("$and", inverted, tm_clause_matches(&clauses[i], doc))) {
         bson_init(&details);
         explain_clause(&clauses[i], doc, inverted, &details);
         add_entry(&e, (int32_t)i, &details);
         bson_destroy(&details);
      }
   }
   BSON_APPEND_UTF8(out, "operatorName", "$and");
   BSON_APPEND_ARRAY(out, list_field("$and", inverted), &e.arr);
   bson_destroy(&e.arr);
   bson_free(clauses);
}

void
tm_validation_details(const tm_matcher_t *validator, const bson_t *doc, bson_t *details)
{
   bson_init(details);
   explain_filter(validator->filter, doc, false, details);
}
