/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>

#include "example-common.h"
#include "util/redact.h" /* shared with the relay */

const char *
example_env_or(const char *name, const char *fallback)
{
   const char *v = getenv(name);

   return v && *v ? v : fallback;
}

int
example_option_value(const char *prog, int argc, char **argv, int *i, const char **dst)
{
   const char *a = argv[*i];

   if (!dst) {
      fprintf(stderr, "%s: unknown option '%s' (see --help)\n", prog, a);
      return EX_USAGE;
   }
   if (*i + 1 >= argc || !argv[*i + 1][0]) {
      fprintf(stderr, "%s: %s needs a value\n", prog, a);
      return EX_USAGE;
   }
   *dst = argv[++*i];
   return -1;
}

mongoc_client_pool_t *
example_open_pool(const char *prog, const char *uri_string)
{
   bson_error_t error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_string, &error);
   mongoc_client_pool_t *pool;

   if (!uri) {
      /* mongoc's message may quote the password (`Password "..." must not have unescaped
       * chars`): the relay's redaction cuts it. */
      char *shown = relay_redact_message(error.message, uri_string);
      fprintf(stderr, "%s: bad --mongodb-uri: %s\n", prog, shown);
      bson_free(shown);
      return NULL;
   }
   pool = mongoc_client_pool_new(uri);
   mongoc_uri_destroy(uri);
   if (pool)
      mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   return pool;
}
