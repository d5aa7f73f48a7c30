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
