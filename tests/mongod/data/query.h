/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers shared by the read and write commands: selecting documents (with an O(1) path for
 * filters on _id equality), sorting, hints, and collection-level option checks.
 */
#ifndef MD_QUERY_H
#define MD_QUERY_H

#include "data/store.h"
#include "engine/engine.h"

typedef struct {
   md_doc_t **docs;
   int32_t *positional; /* per document: the positional ($) index, or -1 */
   size_t n;
} md_selection_t;

/* Selects the documents of `coll` (may be NULL: nothing) matching `m` in natural order;
 * `filter` is the raw filter, used for the _id fast path. At most `limit` (0 = all).
 * `hint` (may be NULL) is the hinted index: as mongod 6.0 scans a hinted index even when it
 * cannot answer the query, only documents that index holds are candidates (a partial or
 * sparse index leaves out the others: SERVER-26413, SERVER-18449). */
void md_select(md_coll_t *coll, const md_index_t *hint, const tm_matcher_t *m, const bson_t *filter,
               size_t limit, md_selection_t *sel);
void md_selection_destroy(md_selection_t *sel);
/* Sorts the selection with `sort` (stable). */
void md_selection_sort(md_selection_t *sel, const tm_sort_t *sort);

/* Checks a `hint` field of `spec` (if any) against coll's indexes: error 2 if unknown.
 * `*hinted` (may be NULL) receives the index, or NULL without a hint or with {$natural}. */
bool md_check_hint(const md_coll_t *coll, const bson_t *spec, const md_index_t **hinted,
                   bson_error_t *error);
/* Rejects options that would change results and that the server does not implement. */
bool md_check_collation(const bson_t *spec, bson_error_t *error);

/* For writes: 166 CommandNotSupportedOnView if `coll` is a view. */
bool md_check_not_view(const md_coll_t *coll, bson_error_t *error);

/* Returns a copy of `doc` with _id first, generating an ObjectId if it has none. */
bson_t *md_doc_with_id_first(const bson_t *doc, const bson_value_t *id);

#endif
