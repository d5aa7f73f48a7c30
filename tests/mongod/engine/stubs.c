/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Temporary stubs so the server can link while the engine is written; each fails with
 * code 2 "not implemented". Removed module by module.
 */
#include "engine.h"

#define NOT_IMPL(error) tm_error_set((error), 2, "%s: not implemented", BSON_FUNC)

int
tm_value_compare(const bson_value_t *a, const bson_value_t *b)
{
   return 0;
}

bool
tm_value_equal(const bson_value_t *a, const bson_value_t *b)
{
   return false;
}

tm_matcher_t *
tm_matcher_new(const bson_t *filter, bson_error_t *error)
{
   NOT_IMPL(error);
   return NULL;
}

void
tm_matcher_destroy(tm_matcher_t *matcher)
{
}

bool
tm_matcher_match(const tm_matcher_t *matcher, const bson_t *doc, int32_t *positional)
{
   if (positional) {
      *positional = -1;
   }
   return false;
}

bool
tm_filter_upsert_seed(const bson_t *filter, bson_t *seed, bson_error_t *error)
{
   return NOT_IMPL(error);
}

void
tm_update_desc_init(tm_update_desc_t *desc)
{
   bson_init(&desc->updated_fields);
   bson_init(&desc->removed_fields);
   bson_init(&desc->truncated_arrays);
}

void
tm_update_desc_destroy(tm_update_desc_t *desc)
{
   if (!desc) {
      return;
   }
   bson_destroy(&desc->updated_fields);
   bson_destroy(&desc->removed_fields);
   bson_destroy(&desc->truncated_arrays);
}

tm_update_t *
tm_update_new(const bson_t *update, const bson_t *array_filters, bson_error_t *error)
{
   NOT_IMPL(error);
   return NULL;
}

void
tm_update_destroy(tm_update_t *update)
{
}

bool
tm_update_is_replacement(const tm_update_t *update)
{
   return false;
}

bool
tm_update_apply(const tm_update_t *update, const bson_t *doc, int32_t positional, bool is_insert,
                bson_t *out, bool *modified, tm_update_desc_t *desc, bson_error_t *error)
{
   bson_init(out);
   return NOT_IMPL(error);
}

tm_projection_t *
tm_projection_new(const bson_t *projection, bson_error_t *error)
{
   NOT_IMPL(error);
   return NULL;
}

void
tm_projection_destroy(tm_projection_t *projection)
{
}

void
tm_projection_apply(const tm_projection_t *projection, const bson_t *doc, bson_t *out)
{
   bson_copy_to(doc, out);
}

tm_sort_t *
tm_sort_new(const bson_t *sort, bson_error_t *error)
{
   NOT_IMPL(error);
   return NULL;
}

void
tm_sort_destroy(tm_sort_t *sort)
{
}

int
tm_sort_compare(const tm_sort_t *sort, const bson_t *a, const bson_t *b)
{
   return 0;
}

bool
tm_pipeline_run(const bson_t *pipeline, bson_t **in, size_t n_in, bson_t ***out, size_t *n_out,
                bson_error_t *error)
{
   *out = NULL;
   *n_out = 0;
   return NOT_IMPL(error);
}

bool
tm_path_get(const bson_t *doc, const char *path, bson_value_t *value)
{
   return false;
}
