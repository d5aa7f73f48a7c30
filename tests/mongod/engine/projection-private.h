/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Projection entry points for the engine's own users (aggregate's $project and $addFields
 * rules, expression errors reported instead of swallowed). Pure functions; no state.
 */
#ifndef TM_PROJECTION_PRIVATE_H
#define TM_PROJECTION_PRIVATE_H

#include "engine-private.h"

/* `agg` selects $project rules (expressions everywhere, no find-only operators). */
tm_projection_t *tm_projection_new_ex(const bson_t *spec, bool agg, bson_error_t *error);
/* Like tm_projection_apply, but reports expression errors. `out` is initialised here. */
bool tm_projection_apply_ex(const tm_projection_t *p, const bson_t *doc, bson_t *out,
                            bson_error_t *error);
/* True if the projection has no field at all ({}). */
bool tm_projection_is_empty(const tm_projection_t *p);

#endif /* TM_PROJECTION_PRIVATE_H */
