/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A test helper that lets tests in other languages use the library's schema functions:
 *    lib-schema-tool ensure DB COLL [OPTS_JSON]   outbox_collection_ensure_schema()
 *    lib-schema-tool print DB COLL [OPTS_JSON]    outbox_collection_schema() as JSON
 * on the server named by OUTBOX_TEST_MONGODB_URI. OPTS_JSON holds the collection options
 * (versionField ...) and the schema options together. Exit status 0, or 1 with the error.
 */
#include <outbox/outbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const collection_options[] = {"versionField", "eventSeqField", "eventsField",
                                                 NULL};

static void
split(const bson_t *all, bson_t *coll_opts, bson_t *schema_opts)
{
   bson_iter_t it;
   bson_iter_init(&it, all);
   while (bson_iter_next(&it)) {
      bool is_coll = false;
      for (int i = 0; collection_options[i]; i++) {
         is_coll = is_coll || strcmp(collection_options[i], bson_iter_key(&it)) == 0;
      }
      bson_append_iter(is_coll ? coll_opts : schema_opts, NULL, 0, &it);
   }
}

int
main(int argc, char **argv)
{
   const char *uri_string = getenv("OUTBOX_TEST_MONGODB_URI");
   bson_error_t error;
   bson_t coll_opts = BSON_INITIALIZER, schema_opts = BSON_INITIALIZER;
   int status = 1;
   if (argc < 4 || !uri_string || (strcmp(argv[1], "ensure") && strcmp(argv[1], "print"))) {
      fprintf(stderr, "usage: lib-schema-tool ensure|print DB COLL [OPTS_JSON] "
                      "(OUTBOX_TEST_MONGODB_URI set)\n");
      return 2;
   }
   mongoc_init();
   if (argc > 4) {
      bson_t *all = bson_new_from_json((const uint8_t *)argv[4], -1, &error);
      if (!all) {
         fprintf(stderr, "lib-schema-tool: bad options: %s\n", error.message);
         return 2;
      }
      split(all, &coll_opts, &schema_opts);
      bson_destroy(all);
   }
   mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_string, &error);
   mongoc_client_pool_t *pool = uri ? mongoc_client_pool_new(uri) : NULL;
   outbox_collection_t *coll = NULL;
   if (pool) {
      mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
      coll = outbox_collection_new(pool, argv[2], argv[3], &coll_opts, &error);
   }
   if (coll && strcmp(argv[1], "ensure") == 0) {
      status = outbox_collection_ensure_schema(coll, &schema_opts, &error) ? 0 : 1;
   } else if (coll) {
      bson_t validator;
      if (outbox_collection_schema(coll, &schema_opts, &validator, &error)) {
         char *json = bson_as_canonical_extended_json(&validator, NULL);
         printf("%s\n", json);
         bson_free(json);
         status = 0;
      }
      bson_destroy(&validator);
   }
   if (status) {
      fprintf(stderr, "lib-schema-tool: %s\n", error.message);
   }
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   bson_destroy(&coll_opts);
   bson_destroy(&schema_opts);
   mongoc_cleanup();
   return status;
}
