/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Start-up code the example programs share: the command line's "--name VALUE" options and
 * the MongoDB client pool.
 */
#ifndef EXAMPLE_COMMON_H
#define EXAMPLE_COMMON_H

#include <mongoc/mongoc.h>

/* The environment variable `name` when set and non-empty, else `fallback`. */
const char *example_env_or(const char *name, const char *fallback);

/* Takes the value of option argv[*i] into *dst and advances *i past it. `dst` NULL means the
 * option is unknown. Returns -1 to go on, or EX_USAGE after a message on stderr that names
 * `prog` (unknown option, or a missing or empty value). */
int example_option_value(const char *prog, int argc, char **argv, int *i, const char **dst);

/* A client pool for `uri` with error API 2, or NULL after a message on stderr that names
 * `prog`. The caller destroys it with mongoc_client_pool_destroy(); mongoc_init() must have
 * been called. */
mongoc_client_pool_t *example_open_pool(const char *prog, const char *uri);

#endif /* EXAMPLE_COMMON_H */
