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
void tm_docs_push(tm_docs_t *d, bson_t *doc);
/* Destroys every document, keeping the list usable. */
void tm_docs_clear(tm_docs_t *d);

/* Each stage is parsed once into a state (freed with its destroy function, also after a
 * failed parse) and then run over any number of document lists. */
typedef bool (*tm_stage_parse_fn)(const char *name, const bson_value_t *spec, void **state,
                                  bson_error_t *error);
typedef bool (*tm_stage_run_fn)(const void *state, tm_docs_t *docs, bson_error_t *error);
typedef void (*tm_stage_destroy_fn)(void *state);

/* The collections $lookup reads, for the duration of tm_pipeline_exec_env (per thread). */
typedef struct {
   tm_collection_fn fn;
   void *ctx;
} tm_collections_t;
const tm_collections_t *tm_pipeline_collections(void);

/* lookup.c */
bool tm_stage_lookup_parse(const char *name, const bson_value_t *spec, void **state,
                           bson_error_t *error);
bool tm_stage_lookup_run(const void *state, tm_docs_t *docs, bson_error_t *error);
void tm_stage_lookup_destroy(void *state);

/* Stable sort of the documents. */
bool tm_docs_sort(tm_docs_t *docs, const tm_sort_t *sort);

/* group.c */
bool tm_stage_group_parse(const char *name, const bson_value_t *spec, void **state,
                          bson_error_t *error);
bool tm_stage_group_run(const void *state, tm_docs_t *docs, bson_error_t *error);
/* Groups @in (read only: the documents may be borrowed) into new documents appended to @out;
 * @out may be @in, whose documents are then destroyed first. */
bool tm_stage_group_run_from(const void *state, const tm_docs_t *in, tm_docs_t *out,
                             bson_error_t *error);
void tm_stage_group_destroy(void *state);

/* pipeline-stages.c */
/* Replaces *doc by a copy with `dotted` set to `value` as $addFields sets it. */
void tm_doc_set_path(bson_t **doc, const char *dotted, const bson_value_t *value);
bool tm_stage_add_fields_parse(const char *name, const bson_value_t *spec, void **state,
                               bson_error_t *error);
bool tm_stage_add_fields_run(const void *state, tm_docs_t *docs, bson_error_t *error);
void tm_stage_add_fields_destroy(void *state);
bool tm_stage_unwind_parse(const char *name, const bson_value_t *spec, void **state,
                           bson_error_t *error);
bool tm_stage_unwind_run(const void *state, tm_docs_t *docs, bson_error_t *error);
void tm_stage_unwind_destroy(void *state);
bool tm_stage_skip_limit_parse(const char *name, const bson_value_t *spec, void **state,
                               bson_error_t *error);
bool tm_stage_skip_limit_run(const void *state, tm_docs_t *docs, bson_error_t *error);
bool tm_stage_count_parse(const char *name, const bson_value_t *spec, void **state,
                          bson_error_t *error);
bool tm_stage_count_run(const void *state, tm_docs_t *docs, bson_error_t *error);
bool tm_stage_replace_root_parse(const char *name, const bson_value_t *spec, void **state,
                                 bson_error_t *error);
bool tm_stage_replace_root_run(const void *state, tm_docs_t *docs, bson_error_t *error);
void tm_stage_replace_root_destroy(void *state);

#endif /* TM_PIPELINE_PRIVATE_H */
