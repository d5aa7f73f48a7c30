/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What the group needs of the event table: parking an entity whose partition may not publish
 * (its event goes back to the queue without counting as a failure), dropping a lost
 * partition's queued events (later events are taken again), dropping an in-flight event,
 * and markers that order positions so a checkpoint is valid for a partition only past its
 * acquisition.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "stream/table.h"

static relay_table_t t;

static void
setup(void)
{
   relay_table_init(&t);
}

static void
teardown(void)
{
   relay_table_cleanup(&t);
}

TestSuite(gate_table, .init = setup, .fini = teardown);

static relay_entity_t *
entity(int32_t id)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   return relay_table_add(&t, 0, &v);
}

static bool
offer(relay_entity_t *e, int64_t seq, relay_pos_t *pos)
{
   char json[200];
   bson_t *doc;
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;
   bool taken;

   bson_snprintf(json, sizeof json, "{\"id\": \"x%d\", \"seq\": %d, \"type\": \"T\", \"data\": {}}",
                 (int)seq, (int)seq);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   taken = relay_table_offer(&t, e, &ev, pos, 0);
   if (!taken) {
      relay_event_cleanup(&ev);
   }
   bson_destroy(doc);
   return taken;
}

Test(gate_table, parked_entity_waits_and_keeps_its_order)
{
   relay_entity_t *e = entity(1);
   cr_assert(offer(e, 1, NULL) && offer(e, 2, NULL));
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_park(&t, e);
   cr_assert(e->parked && !e->inflight);
   cr_assert_eq(t.inflight, 0);
   cr_assert_null(relay_table_next_ready(&t, 0), "a parked entity was offered");
   cr_assert(!relay_table_evict(&t, e), "a parked entity was evicted");
   relay_table_unpark(&t, e);
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   cr_assert_eq(e->inflight->ev.seq, 1, "the parked event is not first in line");
}

Test(gate_table, dropping_queued_events_takes_later_ones_again)
{
   relay_entity_t *e = entity(2);
   for (int s = 1; s <= 4; s++) {
      cr_assert(offer(e, s, NULL));
   }
   cr_assert_eq(relay_table_next_ready(&t, 0), e); /* seq 1 in flight */
   cr_assert_eq(relay_table_drop_queued(&t, e), 3);
   cr_assert_eq(e->last_seq, 1, "last_seq %" PRId64, e->last_seq);
   cr_assert_eq(t.buffered, 1);
   /* Re-acquired later: the sweep offers what is still pending, from seq 2. */
   cr_assert(offer(e, 2, NULL), "seq 2 was not taken again");
   cr_assert(!offer(e, 1, NULL));
}

Test(gate_table, a_failed_inflight_event_of_a_lost_partition_is_dropped)
{
   relay_entity_t *e = entity(3);
   cr_assert(offer(e, 5, NULL));
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_drop_inflight(&t, e);
   cr_assert_null(e->inflight);
   cr_assert_eq(t.inflight, 0);
   cr_assert_eq(t.buffered, 0);
   cr_assert_eq(e->last_seq, 0);
   cr_assert(relay_table_evict(&t, e) || e->on_ready, "the empty entity stays");
}

Test(gate_table, markers_order_positions_and_hold_the_checkpoint)
{
   bson_t *tok1 = BCON_NEW("_data", "8201"), *tok2 = BCON_NEW("_data", "8202");
   relay_entity_t *e = entity(4);
   relay_pos_t *p1 = relay_table_pos_push(&t, tok1, 0);
   relay_pos_t *marker = relay_table_pos_marker(&t);
   relay_pos_t *p2;

   cr_assert(marker->seq > p1->seq);
   relay_table_pos_settle(&t); /* frees p1 */
   cr_assert_not_null(t.checkpoint);
   cr_assert_lt(t.checkpoint_seq, marker->seq, "a checkpoint past the marker already");
   cr_assert(offer(e, 1, marker)); /* a swept event hangs on the marker */
   p2 = relay_table_pos_push(&t, tok2, 0);
   cr_assert(p2 != marker && p2->seq > marker->seq, "a marker was merged with a position");
   relay_table_pos_release(&t, marker);
   cr_assert_lt(t.checkpoint_seq, marker->seq, "the checkpoint passed an unfinished sweep");
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_acked(&t, e);
   relay_table_remove_state(&t, e, RELAY_ITEM_ACKED);
   relay_table_pos_settle(&t);
   cr_assert_gt(t.checkpoint_seq, 1, "the checkpoint did not move once the sweep was done");
   cr_assert(bson_equal(t.checkpoint, tok2));
   bson_destroy(tok1);
   bson_destroy(tok2);
}
