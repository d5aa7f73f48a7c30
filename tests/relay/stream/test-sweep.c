/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest with a fake reader and a fake store (ingest-fixture.h), no servers: the sweep
 * (stream/sweep.c): it waits for the majority to reach its start, reads an entity the stream took
 * afresh instead of trusting its older copy when it meets the stream, and a partial sweep holds the
 * checkpoint until its events are cleared.
 */
#include "ingest-fixture.h"

TestSuite(ingest, .init = ingest_setup, .fini = ingest_teardown);

/* F8: the sweep reads the majority snapshot once it has reached the sweep's start; a wait
 * that times out (a cut-off primary) reads nothing and is retried after a backoff. */
Test(ingest, a_sweep_waits_for_the_majority_to_reach_its_start)
{
   relay_ingest_open(in, NULL, NULL); /* no checkpoint: a full sweep first */
   fake.time = (relay_ts_t){200, 3};
   fake.wait_fail_code = 50;
   relay_ingest_step(in, 0); /* begins */
   relay_ingest_step(in, 1);
   cr_assert_eq(fake.waits, 1);
   cr_assert(fake.wait_after.t == 200 && fake.wait_after.i == 3);
   cr_assert_eq(fake.sweeps_opened, 0, "a cursor was opened before the majority got there");
   relay_ingest_step(in, 2);
   cr_assert_eq(fake.waits, 1, "retried before its backoff");
   fake.wait_fail_code = 0;
   relay_ingest_step(in, cfg.reconnect_max_ms + 2);
   cr_assert_eq(fake.waits, 2);
   cr_assert_eq(fake.sweeps_opened, 1);
   cr_assert(fake.sweep_after.t == 200 && fake.sweep_after.i == 3,
             "the sweep's cursor does not read after the sweep's start");
}

Test(ingest, a_sweep_that_meets_the_stream_reads_the_entity_afresh)
{
   relay_ingest_open(in, NULL, NULL); /* no checkpoint: a full sweep first */
   fake.time = (relay_ts_t){200, 0};
   /* The sweep's copy was fetched before the stream took the entity and its events were
    * published and cleared: it still shows them. */
   fake.sweep_docs[0] = "{\"_id\": 1, \"events\": [" EV1 ", " EV2 "], \"eventSeq\": 2}";
   store_doc("{\"_id\": %d, \"events\": [], \"eventSeq\": 2}");
   fake.gen = 1; /* the changes come from the stream the sweep starts ... */
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){200, 0}, 0);
   push_insert(1, 201, EV1 ", " EV2, 2);
   fake.gen = 0; /* ... which is the first start */
   relay_ingest_step(in, 0);
   cr_assert(fake.started_at, "the full sweep did not start the stream at its start");
   cr_assert(relay_group_fresh(g, 0));
   cr_assert_eq(fake.reads, 1);
   relay_ingest_step(in, 1);
   cr_assert_eq(fake.sweeps_opened, 1);
   cr_assert_eq(fake.reads, 2, "the sweep trusted its older copy");
   cr_assert(fake.read_after.t == 201, "the fresh read may be older than the stream's change");
   cr_assert_eq(t.buffered, 0, "events already cleared were taken again from the sweep's copy");
}

Test(ingest, a_partial_sweep_holds_the_checkpoint_until_its_events_are_cleared)
{
   relay_entity_t *e;
   bson_t *cp;
   bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 7};

   resume();
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   relay_ingest_step(in, 0);
   fake.time = (relay_ts_t){150, 0};
   fake.sweep_docs[0] = "{\"_id\": 7, \"events\": [" EV1 "], \"eventSeq\": 1}";
   relay_ingest_sweep(in, 0); /* acquired while the stream runs */
   relay_ingest_step(in, 1);  /* the sweep begins: its marker */
   relay_ingest_step(in, 2);  /* reads the document and ends */
   cr_assert_eq(t.buffered, 1, "the swept event was not taken");
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){0, 0}, 0);
   relay_ingest_step(in, 3);
   cp = relay_table_take_checkpoint(&t);
   cr_assert_null(cp, "a checkpoint passed a swept event not yet cleared");
   e = relay_table_find(&t, 0, &id);
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_acked(&t, e);
   relay_table_remove_state(&t, e, RELAY_ITEM_ACKED);
   relay_table_pos_settle(&t);
   cp = relay_table_take_checkpoint(&t);
   cr_assert_not_null(cp, "the checkpoint did not move once the swept event was cleared");
   bson_destroy(cp);
}
