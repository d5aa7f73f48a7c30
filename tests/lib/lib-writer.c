/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A writer for the multi-process concurrency test: commits to one entity, retrying on
 * conflict, and exits 0 when all its commits are in.
 *
 * usage: lib-writer URI DB COLL ENTITY-ID WRITER-NUMBER COMMITS
 * Commit c of writer w appends 1 + c % 2 events with data {w, c, k}; even commits use append
 * (OUTBOX_ANY_VERSION), odd ones read + update with the expected version and $inc "counter".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib-writer.h"

int
main(int argc, char **argv)
{
   mongoc_client_pool_t *pool;
   outbox_collection_t *coll;
   mongoc_uri_t *uri;
   bson_error_t error;
   bson_value_t id = {.value_type = BSON_TYPE_UTF8};
   int status = 0;

   if (argc != 7) {
      fprintf(stderr, "usage: %s URI DB COLL ENTITY-ID WRITER-NUMBER COMMITS\n", argv[0]);
      return 64;
   }
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      fprintf(stderr, "lib-writer: %s\n", error.message);
      return 64;
   }
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   coll = outbox_collection_new(pool, argv[2], argv[3], NULL, &error);
   id.value.v_utf8.str = argv[4];
   id.value.v_utf8.len = (uint32_t)strlen(argv[4]);
   if (!coll || !lw_run(coll, &id, atoi(argv[5]), atoi(argv[6]), &error)) {
      fprintf(stderr, "lib-writer %s: %s\n", argv[5], error.message);
      status = 1;
   }
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return status;
}
