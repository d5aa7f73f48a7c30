/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A program built by test-package.sh against the installed liboutbox-dev, with nothing but
 * `pkg-config --cflags --libs outbox`: prints the library's version and, given a MongoDB
 * URI, database, collection and entity id, creates that entity with one event (which the
 * installed relay then publishes).
 *
 * usage: installed-writer [URI DB COLLECTION ID]
 */
#include <stdio.h>
#include <string.h>

#include <outbox/outbox.h>

static int
create_entity(const char *uri_string, const char *db, const char *coll_name, const char *id_str)
{
   bson_error_t error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_string, &error);
   mongoc_client_pool_t *pool;
   outbox_collection_t *coll;
   outbox_event_t *event;
   bson_value_t id = {.value_type = BSON_TYPE_UTF8};
   bson_t *data = BCON_NEW("from", BCON_UTF8("installed liboutbox-dev"));
   bool ok;

   if (!uri) {
      fprintf(stderr, "installed-writer: %s\n", error.message);
      return 1;
   }
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   coll = outbox_collection_new(pool, db, coll_name, NULL, &error);
   id.value.v_utf8.str = (char *)id_str;
   id.value.v_utf8.len = (uint32_t)strlen(id_str);
   event = outbox_event_new("package.installed", data);
   ok = coll && outbox_collection_create(coll, &id, data, &event, 1, NULL, &error);
   if (ok) {
      printf("created %s with event %s\n", id_str, outbox_event_get_id(event));
   } else {
      fprintf(stderr, "installed-writer: %s\n", error.message);
   }
   outbox_event_destroy(event);
   bson_destroy(data);
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   return ok ? 0 : 1;
}

int
main(int argc, char **argv)
{
   int status = 0;

   printf("liboutbox %s\n", outbox_get_version());
   if (argc == 5) {
      mongoc_init();
      status = create_entity(argv[1], argv[2], argv[3], argv[4]);
      mongoc_cleanup();
   }
   return status;
}
