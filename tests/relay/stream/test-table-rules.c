/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The rules the table owns for everyone: forgetting idle entities unless the stream replays
 * history (keep_idle, once instead of in four places), and the walks over one partition's
 * entities (dropping a lost partition, finding the busy ones for a drain).
 */
#include <criterion/criterion.h>

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

TestSuite(table_rules, .init = setup, .fini = teardown);

static relay_entity_t *
entity(int32_t id, int part)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   relay_entity_t *e = relay_table_add(&t, 0, &v);
   e->part = part;
   return e;
}

static relay_entity_t *
find(int32_t id)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   return relay_table_find(&t, 0, &v);
}

static void
offer(relay_entity_t *e, int64_t seq)
{
   char json[200];
   bson_t *doc;
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;

   bson_snprintf(json, sizeof json,
                 "{\"id\": \"e%d-%d\", \"seq\": %d, \"type\": \"T\", \"data\": {}}",
                 (int)e->id.value.v_int32, (int)seq, (int)seq);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert(relay_table_offer(&t, e, &ev, NULL, 0));
   bson_destroy(doc);
}

Test(table_rules, idle_entities_are_forgotten_unless_kept)
{
   relay_entity_t *e = entity(1, 0);
   relay_table_keep_idle(&t, true);
   cr_assert(!relay_table_forget_if_idle(&t, e), "an idle entity was forgotten while verifying");
   cr_assert_not_null(find(1));
   relay_table_keep_idle(&t, false);
   cr_assert(relay_table_forget_if_idle(&t, e), "an idle entity stayed");
   cr_assert_null(find(1));
}

Test(table_rules, an_entity_holding_events_is_never_forgotten)
{
   relay_entity_t *e = entity(2, 0);
   offer(e, 1);
   cr_assert(!relay_table_forget_if_idle(&t, e));
   cr_assert_not_null(find(2));
}

Test(table_rules, releasing_holds_follows_keep_idle)
{
   relay_table_hold_read(&t, entity(3, 0), 5);
   relay_table_keep_idle(&t, true);
   relay_table_release_holds(&t, true);
   cr_assert_not_null(find(3), "released while verifying, and forgotten");
   cr_assert_eq(find(3)->read_seq, 0);
   cr_assert_eq(t.read_holds, 0);
   relay_table_hold_read(&t, find(3), 6);
   relay_table_keep_idle(&t, false);
   relay_table_release_holds(&t, true);
   cr_assert_null(find(3), "an idle entity stayed once its hold was released");
}

Test(table_rules, dropping_a_partition_touches_only_its_entities)
{
   relay_entity_t *a = entity(4, 1), *b = entity(5, 2);
   offer(a, 1);
   offer(a, 2);
   offer(b, 1);
   cr_assert_eq(relay_table_drop_partition(&t, 1), 2);
   /* Still on the ready list, it leaves the table when that list comes to it. */
   cr_assert(!find(4) || find(4)->on_ready, "the dropped partition's idle entity stayed");
   cr_assert_not_null(find(5));
   cr_assert_eq(t.buffered, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), b, "the other partition's event was dropped");
}

Test(table_rules, dropping_a_partition_keeps_idle_entities_while_verifying)
{
   relay_entity_t *a = entity(6, 1);
   offer(a, 1);
   relay_table_keep_idle(&t, true);
   cr_assert_eq(relay_table_drop_partition(&t, 1), 1);
   cr_assert_not_null(find(6));
}

Test(table_rules, busy_partitions_are_those_with_work_in_flight_or_to_clear)
{
   bool busy[4] = {false};
   relay_entity_t *queued = entity(7, 0), *flying = entity(8, 1), *acked = entity(9, 2);
   offer(flying, 1);
   offer(acked, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), flying);
   cr_assert_eq(relay_table_next_ready(&t, 0), acked);
   relay_table_acked(&t, acked);
   offer(queued, 1);
   relay_table_find_busy(&t, busy);
   cr_assert(!busy[0], "a partition with only queued events counts as busy");
   cr_assert(busy[1] && busy[2]);
   cr_assert(!busy[3]);
}
