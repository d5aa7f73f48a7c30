/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's reads, as built (no server: a cursor contacts nobody until iterated).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "store/store.h"

static void
setup(void)
{
   mongoc_init();
}

static void
teardown(void)
{
   mongoc_cleanup();
}

TestSuite(store, .init = setup, .fini = teardown);

/* Without a batch size a sweep reply may be 16 MiB, held twice by mongoc while iterated:
 * that was two thirds of the relay's peak memory. */
Test(store, sweep_cursor_reads_bounded_batches)
{
   relay_config_t cfg;
   relay_config_init_defaults(&cfg);
   mongoc_client_t *client = mongoc_client_new("mongodb://127.0.0.1:1/");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "db", "c");

   for (int hint = 0; hint <= 1; hint++) {
      mongoc_cursor_t *cursor = relay_store_sweep_cursor(coll, &cfg, hint);
      cr_assert_eq(mongoc_cursor_get_batch_size(cursor), RELAY_SWEEP_FIRST_BATCH);
      mongoc_cursor_destroy(cursor);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   relay_config_destroy(&cfg);
}

static void
assert_pace_after(mongoc_cursor_t *cursor, size_t doc_bytes, uint32_t want)
{
   bson_t doc = BSON_INITIALIZER;
   char *pad = bson_malloc(doc_bytes);
   memset(pad, 'x', doc_bytes - 1);
   pad[doc_bytes - 1] = '\0';
   BSON_APPEND_UTF8(&doc, "pad", pad);
   relay_store_sweep_pace(cursor, &doc);
   cr_assert_eq(mongoc_cursor_get_batch_size(cursor), want, "%zu-byte documents: %u, not %u",
                doc_bytes, mongoc_cursor_get_batch_size(cursor), want);
   bson_destroy(&doc);
   bson_free(pad);
}

/* Documents of 1000 pending events are ~400 KiB: 128 of them would be a 50 MiB reply. */
Test(store, sweep_replies_are_sized_in_bytes)
{
   relay_config_t cfg;
   relay_config_init_defaults(&cfg);
   mongoc_client_t *client = mongoc_client_new("mongodb://127.0.0.1:1/");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "db", "c");
   mongoc_cursor_t *cursor = relay_store_sweep_cursor(coll, &cfg, true);

   assert_pace_after(cursor, 400 * 1024, 2);
   assert_pace_after(cursor, 500, RELAY_READ_BATCH_SIZE);
   assert_pace_after(cursor, 4 * 1024 * 1024, 1);
   assert_pace_after(cursor, 64 * 1024, 15);

   mongoc_cursor_destroy(cursor);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   relay_config_destroy(&cfg);
}

/* F20: a change stream getMore that never got its reply held the relay for mongoc's 300 s.
 * The stream's client times out sooner unless the URI says how long; the others keep
 * mongoc's default (a long sweep batch or clear must not be cut off). */
Test(store, the_streams_client_times_out_a_dead_connection)
{
   relay_config_t cfg;
   bson_error_t error;
   relay_config_init_defaults(&cfg);
   const char *uris[] = {"mongodb://127.0.0.1:1/", "mongodb://127.0.0.1:1/?socketTimeoutMS=4000"};
   const int32_t want[] = {RELAY_STREAM_SOCKET_TIMEOUT_MS, 4000};
   for (int i = 0; i < 2; i++) {
      cfg.mongodb_uri = bson_strdup(uris[i]);
      mongoc_client_t *stream = relay_store_stream_client_new(&cfg, "s", &error);
      mongoc_client_t *data = relay_store_client_new(&cfg, "d", &error);
      cr_assert(stream && data, "%s", error.message);
      cr_assert_eq(mongoc_uri_get_option_as_int32(mongoc_client_get_uri(stream),
                                                  MONGOC_URI_SOCKETTIMEOUTMS, -1),
                   want[i], "%s", uris[i]);
      cr_assert_eq(mongoc_uri_get_option_as_int32(mongoc_client_get_uri(data),
                                                  MONGOC_URI_SOCKETTIMEOUTMS, -1),
                   i == 0 ? -1 : 4000, "%s", uris[i]);
      mongoc_client_destroy(stream);
      mongoc_client_destroy(data);
      bson_free(cfg.mongodb_uri);
      cfg.mongodb_uri = NULL;
   }
   relay_config_destroy(&cfg);
}
