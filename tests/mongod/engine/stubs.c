/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Temporary stubs so the server can link while the engine is written; each fails with
 * code 2 "not implemented". Removed module by module.
 */
#include "update-private.h"

#define NOT_IMPL(error) tm_error_set((error), 2, "%s: not implemented", BSON_FUNC)

bool
tm_filter_upsert_seed(const bson_t *filter, bson_t *seed, bson_error_t *error)
{
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

bool
tm_pipeline_run(const bson_t *pipeline, bson_t **in, size_t n_in, bson_t ***out, size_t *n_out,
                bson_error_t *error)
{
   *out = NULL;
   *n_out = 0;
   return NOT_IMPL(error);
}

bool
tm_update_apply_pipeline(const tm_update_t *u, const bson_t *doc, bson_t *out,
                         tm_update_desc_t *desc, bson_error_t *error)
{
   return tm_error_set(error, 2, "pipeline-style updates are not supported yet");
}
