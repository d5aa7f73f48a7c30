/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Pipeline internals: a growable list of owned documents that stages rewrite.
 */
#ifndef TM_PIPELINE_PRIVATE_H
#define TM_PIPELINE_PRIVATE_H

#include "engine-private.h"

typedef struct {
   bson_t **docs;
   size_t n, cap;
} tm_docs_t;

/* Appends `doc` (taken over). */
void
tm_docs_push(tm_docs_t *d, bson_t *doc);
/* Destroys every document, keeping the list usable. */
void
tm_docs_clear(tm_docs_t *d);

/* $group (group.c): replaces the documents by one per group. */
bool
tm_stage_group(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error);

/* Stable sort of the documents. */
bool
tm_docs_sort(tm_docs_t *docs, const tm_sort_t *sort);

/* pipeline-stages.c */
bool
tm_stage_add_fields(const char *name, const bson_value_t *spec, tm_docs_t *docs,
                    bson_error_t *error);
bool
tm_stage_unwind(const bson_value_t *spec, tm_docs_t *docs, bson_error_t *error);
bool
tm_stage_replace_root(const char *name, const bson_value_t *spec, tm_docs_t *docs,
                      bson_error_t *error);

#endif /* TM_PIPELINE_PRIVATE_H */
