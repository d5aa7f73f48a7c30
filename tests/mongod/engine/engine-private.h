/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Internals shared between the engine's modules. Nothing here is used by the server.
 */
#ifndef TM_ENGINE_PRIVATE_H
#define TM_ENGINE_PRIVATE_H

#include "engine.h"

/* ---- error.c ---- */

/* Prefixes the message with "<context> :: caused by :: ", as mongod's addContext does (e.g.
 * "Invalid $project"); the code stays. Returns false. */
bool tm_error_add_context(bson_error_t *error, const char *context);

/* ---- compare.c ---- */

/* MongoDB's canonical type bracket: values of different brackets never compare equal and
 * sort by bracket. All numeric types share one bracket; missing counts as null. */
int tm_type_bracket(bson_type_t type);
/* The bracket of strings and symbols. */
#define TM_BRACKET_STRING 15
bool tm_value_is_number(const bson_value_t *v);
/* Numeric value as a double (decimal128 through its string form). 0 for non-numbers. */
double tm_value_as_double(const bson_value_t *v);
/* True if both values have the same type and the same bytes (what "no-op" means for $set). */
bool tm_value_binary_equal(const bson_value_t *a, const bson_value_t *b);
/* Name of a BSON type as MongoDB spells it in $type and error messages ("int", "string"). */
const char *tm_type_name(bson_type_t type);
/* Relaxed extended JSON of a value, for error messages; caller frees with bson_free. */
char *tm_value_to_json(const bson_value_t *v);

/* True if `v` is a document whose first key starts with '$' (match-parse.c). */
bool tm_is_operator_doc(const bson_value_t *v);

/* ---- path.c ---- */

/* A dotted path split into components. */
typedef struct {
   char **parts;
   size_t n;
   char *dotted;
} tm_path_t;

bool tm_path_parse(const char *dotted, tm_path_t *path);
void tm_path_destroy(tm_path_t *path);
/* True if `s` is an array index as paths use them: digits only, no leading zero. */
bool tm_path_is_index(const char *s, size_t *index);

/* Called once per value a path reaches (NULL for "missing"); `index` is the position in the
 * first array the walk descended into, or -1. Return true to stop the walk. */
typedef bool (*tm_path_visit_fn)(const bson_value_t *value, int32_t index, void *ctx);

/* Walks `path` through `doc` with MongoDB's matching fan-out: arrays on the way are
 * traversed element by element (and indexed by numeric components); an array at the end is
 * visited element by element and then as a whole when `expand_leaf` is true. Returns true if
 * a visit returned true. */
bool tm_path_visit(const bson_t *doc, const tm_path_t *path, bool expand_leaf, tm_path_visit_fn fn,
                   void *ctx);

/* Like tm_path_get, for a parsed path starting at component `from`. */
bool tm_path_get_parts(const bson_t *doc, const tm_path_t *path, size_t from, bson_value_t *value);

/* Borrowed view of a document or array value as a bson_t (no copy). */
bool tm_value_as_bson(const bson_value_t *v, bson_t *b);
/* bson_iter_init_find(it, doc, key), faster (path.c). */
bool tm_bson_find(const bson_t *doc, const char *key, bson_iter_t *it);

#endif /* TM_ENGINE_PRIVATE_H */
