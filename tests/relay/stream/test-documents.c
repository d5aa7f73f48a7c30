/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest with a fake reader and a fake store (ingest-fixture.h), no servers: documents taken
 * instead of changes (stream/documents.c): a fresh partition's entities are read, and a read made
 * for a change covers that change.
 */
#include "ingest-fixture.h"

TestSuite(ingest, .init = ingest_setup, .fini = ingest_teardown);

Test(ingest, a_fresh_partitions_entities_are_read)
{
   resume();
   make_fresh();
   store_doc("{\"_id\": %d, \"events\": [" EV1 "], \"eventSeq\": 1}");
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   push_insert(1, 101, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert_eq(fake.reads, 1, "an entity of a fresh partition was taken from the change");
}

Test(ingest, a_read_for_a_change_covers_the_change)
{
   resume();
   make_fresh();
   store_doc("{\"_id\": %d, \"events\": [" EV1 "], \"eventSeq\": 1}");
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   push_insert(1, 101, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert_eq(fake.reads, 1);
   cr_assert(fake.read_after.t == 101 && fake.read_after.i == 1,
             "the read does not wait for the change's time: %u, %u", fake.read_after.t,
             fake.read_after.i);
}
