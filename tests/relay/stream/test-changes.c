/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest with a fake reader and a fake store (ingest-fixture.h), no servers: the stream half of
 * ingest (stream/changes.c): after a resume the stream is verified (an unknown entity is read from
 * its document) until it passes the time it was opened; a new stream takes changes as they come; a
 * change whose read fails is held and retried first; a lost history drops the old stream and sweeps
 * from the start.
 */
#include "ingest-fixture.h"

TestSuite(ingest, .init = ingest_setup, .fini = ingest_teardown);

Test(ingest, after_a_resume_unknown_entities_are_read_until_the_stream_catches_up)
{
   resume();
   store_doc("{\"_id\": %d, \"events\": [" EV1 "], \"eventSeq\": 1}");
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 1);
   push_insert(1, 50, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert(relay_ingest_verifying(in));
   cr_assert(t.keep_idle, "idle entities are forgotten while verifying");
   cr_assert_eq(fake.reads, 1, "a replayed change was trusted instead of the document");
   cr_assert_eq(t.buffered, 1);
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){0, 0}, 0);
   relay_ingest_step(in, 1);
   cr_assert(!relay_ingest_verifying(in), "still verifying once caught up");
   cr_assert(!t.keep_idle);
}

Test(ingest, verifying_ends_past_the_time_the_stream_was_opened)
{
   resume();
   store_doc("{\"_id\": %d, \"events\": [], \"eventSeq\": 0}");
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 5}, 1);
   push_insert(1, 100, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert(relay_ingest_verifying(in), "verifying ended at the time it was opened");
   push_insert(2, 101, EV1, 1);
   relay_ingest_step(in, 1);
   cr_assert(!relay_ingest_verifying(in));
   cr_assert_eq(fake.reads, 1, "a change after the open was not trusted");
}

Test(ingest, a_new_stream_takes_changes_as_they_come)
{
   resume();
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   push_insert(1, 101, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert(!relay_ingest_verifying(in));
   cr_assert_eq(fake.reads, 0);
   cr_assert_eq(t.buffered, 1);
}

Test(ingest, a_change_whose_read_fails_is_held_and_retried_first)
{
   resume();
   make_fresh();
   store_doc("{\"_id\": %d, \"events\": [" EV1 "], \"eventSeq\": 1}");
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   push_insert(1, 101, EV1, 1);
   push_insert(2, 102, EV1, 1);
   fake.read_fail_code = 6;
   relay_ingest_step(in, 0);
   cr_assert_eq(fake.reads, 1, "the change behind the failed one was applied");
   relay_ingest_step(in, 1);
   cr_assert_eq(fake.reads, 1, "retried before its backoff");
   fake.read_fail_code = 0;
   relay_ingest_step(in, cfg.reconnect_max_ms);
   cr_assert_eq(fake.reads, 3);
   cr_assert_eq(t.buffered, 2);
}

Test(ingest, a_lost_history_drops_the_old_stream_and_sweeps_from_the_start)
{
   resume();
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   push(RELAY_CHANGE_LOST, NULL, (relay_ts_t){0, 0}, 286);
   push_insert(1, 101, EV1, 1); /* queued behind the loss, from the stream that ended */
   fake.time = (relay_ts_t){300, 0};
   relay_ingest_step(in, 0);
   cr_assert_eq(t.buffered, 0, "a change of the lost stream was applied");
   relay_ingest_step(in, 1);
   cr_assert_eq(fake.starts, 2, "the full sweep did not start a new stream");
   cr_assert(fake.started_at, "the new stream does not start at the sweep's start");
   cr_assert(relay_group_fresh(g, 0), "swept partitions are not fresh");
}

/* Clears every buffered event (published and acknowledged) and forgets the idle entities,
 * as the clearer would. */
static void
clear_all(void)
{
   relay_entity_t *e;
   while ((e = relay_table_next_ready(&t, 0))) {
      relay_table_acked(&t, e);
   }
   while ((e = relay_table_next_dirty(&t))) {
      relay_table_remove_state(&t, e, RELAY_ITEM_ACKED);
      relay_table_forget_if_idle(&t, e);
   }
   cr_assert_eq(t.buffered, 0);
}

/* An empty batch says the stream is past its high-water mark's time, not at the present:
 * through mongos it may be behind the changes still to come (FINDINGS.md F19). */
Test(ingest, an_empty_batch_behind_the_open_does_not_end_verifying)
{
   resume();
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 5}, 1);
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){100, 5}, 0);
   relay_ingest_step(in, 0);
   cr_assert(relay_ingest_verifying(in), "an empty batch before the open ended verifying");
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){100, 6}, 0);
   relay_ingest_step(in, 1);
   cr_assert(!relay_ingest_verifying(in));
}

/* F19: a sweep ends at 150; the stream, opened before it, has not passed 150 when a getMore
 * comes back empty. An append made during the sweep (at 130), which the sweep published,
 * must still be read from its document when the stream delivers it, not taken as new. */
Test(ingest, an_empty_batch_behind_a_sweeps_end_keeps_its_partition_fresh)
{
   resume();
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 0}, 0);
   relay_ingest_step(in, 0);
   fake.time = (relay_ts_t){150, 0};
   fake.sweep_docs[0] = "{\"_id\": 7, \"events\": [" EV1 "], \"eventSeq\": 1}";
   relay_ingest_sweep(in, 0);
   relay_ingest_step(in, 1); /* the sweep begins */
   relay_ingest_step(in, 2); /* reads the document and ends */
   cr_assert_eq(t.buffered, 1);
   clear_all();
   cr_assert_eq(t.count, 0, "the cleared entity was not forgotten");
   cr_assert(relay_group_fresh(g, 0));
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){120, 0}, 0);
   relay_ingest_step(in, 3);
   cr_assert(relay_group_fresh(g, 0), "an empty batch before the sweep's end ended it");
   store_doc("{\"_id\": %d, \"events\": [], \"eventSeq\": 1}");
   push_insert(7, 130, EV1, 1); /* the append the sweep saw, delivered late */
   relay_ingest_step(in, 4);
   cr_assert_eq(fake.reads, 1, "the entity was not read from its document");
   cr_assert_eq(t.buffered, 0, "a published event was taken again");
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){150, 1}, 0);
   relay_ingest_step(in, 5);
   cr_assert(!relay_group_fresh(g, 0), "still fresh past the sweep's end");
}

/* A read shows changes up to its snapshot's time (160) before the stream delivers them; the
 * entity is kept until the stream is past that time, so a change up to it stays a replay. */
Test(ingest, a_read_hold_lasts_until_the_stream_passes_the_reads_snapshot)
{
   resume();
   store_doc("{\"_id\": %d, \"events\": [" EV1 ", " EV2 "], \"eventSeq\": 2}");
   fake.read_time = (relay_ts_t){160, 0};
   push(RELAY_CHANGE_OPENED, NULL, (relay_ts_t){100, 5}, 1);
   push_insert(1, 100, EV1, 1);
   relay_ingest_step(in, 0);
   cr_assert_eq(fake.reads, 1);
   cr_assert_eq(t.buffered, 2);
   clear_all();
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){150, 0}, 0);
   relay_ingest_step(in, 1);
   cr_assert(!relay_ingest_verifying(in));
   push_insert(1, 155, EV1 ", " EV2, 2); /* the second append, which the read showed */
   relay_ingest_step(in, 2);
   cr_assert_eq(t.buffered, 0, "an event the read showed was taken again");
   push(RELAY_CHANGE_IDLE, NULL, (relay_ts_t){160, 1}, 0);
   relay_ingest_step(in, 3);
   cr_assert_eq(t.read_holds, 0, "the hold outlived the read's snapshot");
}
