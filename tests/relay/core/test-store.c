/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's reads, as built (no server: a cursor contacts nobody until iterated).
 */
#include <criterion/criterion.h>

#include <mongoc/mongoc.h>

#include "config.h"
#include "store.h"

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
      cr_assert_eq(mongoc_cursor_get_batch_size(cursor), RELAY_READ_BATCH_SIZE);
      cr_assert_lt(RELAY_READ_BATCH_SIZE, cfg.max_buffered_events);
      mongoc_cursor_destroy(cursor);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   relay_config_destroy(&cfg);
}
