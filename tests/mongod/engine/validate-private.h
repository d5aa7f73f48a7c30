/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Shared by validate.c (walking a validator's filter) and validate-leaf.c (explaining one
 * operator): a clause of a filter document.
 */
#ifndef TM_VALIDATE_PRIVATE_H
#define TM_VALIDATE_PRIVATE_H

#include "engine-private.h"

typedef struct {
   const char *key;      /* "$and", "$expr", "$jsonSchema" ... or a field path */
   const char *op;       /* for a field: "$gt", "$regex" ...; NULL for {path: value} */
   bson_value_t value;   /* the operand (its data borrowed from the filter) */
   bson_value_t options; /* $options next to $regex, EOD if none */
} tm_clause_t;

/* The clauses of a filter document, in order, at most `cap`; `$regex` with `$options` is
 * one clause, and {path: {$gt: 1, $lt: 5}} two. */
size_t tm_clauses_of(const bson_t *filter, tm_clause_t *out, size_t cap);
/* The clause as a filter of its own, {key: value} or {path: {op: value}} (initialised). */
void tm_clause_filter(const tm_clause_t *c, bson_t *f);
bool tm_clause_matches(const tm_clause_t *c, const bson_t *doc);
/* Explains a leaf clause (an operator on a path, or $expr) into `out`. */
void tm_explain_leaf(const tm_clause_t *c, const bson_t *doc, bool inverted, bson_t *out);

#endif /* TM_VALIDATE_PRIVATE_H */
