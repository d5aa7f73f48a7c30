/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the relay's bookkeeping: per-entity order, one event in flight per entity,
 * retries, poison events, and when the checkpoint may advance.
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

static bson_value_t
int_id(int32_t n)
{
   bson_value_t v;
   v.value_type = BSON_TYPE_INT32;
   v.value.v_int32 = n;
   return v;
}

/* Offers a valid event with @seq and event id @evid to entity @id; returns whether it was
 * taken. */
static bool
offer_event(int32_t id, int64_t seq, const char *evid, relay_pos_t *pos, int64_t replayed_upto)
{
   bson_value_t v = int_id(id);
   relay_entity_t *e = relay_table_add(&t, 0, &v);
   relay_event_t ev;
   bool taken;
   char json[200];
   bson_t *doc;
   bson_value_t elem;

   bson_snprintf(json, sizeof json, "{\"id\": \"%s\", \"seq\": %d, \"type\": \"T\", \"data\": {}}",
                 evid, (int)seq);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value_type = BSON_TYPE_DOCUMENT;
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   taken = relay_table_offer(&t, e, &ev, pos, replayed_upto);
   if (!taken) {
      relay_event_cleanup(&ev);
   }
   bson_destroy(doc);
   return taken;
}

/* Offers a valid event with @seq to entity @id (event id "e<id>-<seq>"), nothing replayed. */
static bool
offer(int32_t id, int64_t seq, relay_pos_t *pos)
{
   char evid[40];
   bson_snprintf(evid, sizeof evid, "e%d-%d", (int)id, (int)seq);
   return offer_event(id, seq, evid, pos, 0);
}

static bson_t *
token(int n)
{
   bson_t *b = bson_new();
   BSON_APPEND_INT32(b, "_data", n);
   return b;
}

static int
token_value(const bson_t *b)
{
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, b, "_data"));
   return bson_iter_int32(&it);
}

/* Drains writes: removes acknowledged items of every dirty entity. */
static void
clear_all(void)
{
   relay_entity_t *e;
   while ((e = relay_table_next_dirty(&t))) {
      relay_table_remove_state(&t, e, RELAY_ITEM_ACKED);
      relay_table_remove_state(&t, e, RELAY_ITEM_POISON);
   }
   relay_table_pos_settle(&t);
}

Test(table, one_in_flight_per_entity_in_seq_order, .init = setup, .fini = teardown)
{
   relay_entity_t *e;

   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(1, 2, NULL));
   cr_assert(offer(1, 3, NULL));
   e = relay_table_next_ready(&t, 0);
   cr_assert_not_null(e);
   cr_assert_eq(e->inflight->ev.seq, 1);
   /* The same entity is not offered again while seq 1 is in flight. */
   cr_assert_null(relay_table_next_ready(&t, 0));
   relay_table_acked(&t, e);
   e = relay_table_next_ready(&t, 0);
   cr_assert_not_null(e);
   cr_assert_eq(e->inflight->ev.seq, 2);
   relay_table_acked(&t, e);
   e = relay_table_next_ready(&t, 0);
   cr_assert_eq(e->inflight->ev.seq, 3);
   relay_table_acked(&t, e);
   cr_assert_null(relay_table_next_ready(&t, 0));
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_ACKED), 3);
}

Test(table, replayed_and_old_seqs_are_refused, .init = setup, .fini = teardown)
{
   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(1, 2, NULL));
   cr_assert(!offer(1, 2, NULL));
   cr_assert(!offer(1, 1, NULL));
   cr_assert(offer(1, 3, NULL));
   cr_assert_eq(t.buffered, 3);
}

/* The seq rule (issue 14, 3): repeated or decreasing seqs in one document, written outside
 * liboutbox, stayed pending for good with no log line and no dead letter. Now each event
 * whose seq is not above the entity's last one becomes poison with a reason; the first is
 * published as usual. */
static void
assert_items(relay_entity_t *e, const relay_item_state_t *states, size_t n)
{
   size_t i = 0;
   for (relay_item_t *it = e->head; it; it = it->next, i++) {
      cr_assert_lt(i, n);
      cr_assert_eq(it->state, states[i], "item %zu is in state %d", i, it->state);
      if (it->state == RELAY_ITEM_POISON) {
         cr_assert_str_eq(it->reason, RELAY_REASON_SEQ_NOT_ABOVE);
      }
   }
   cr_assert_eq(i, n);
}

Test(table, repeated_or_decreasing_seqs_are_poison, .init = setup, .fini = teardown)
{
   static const relay_item_state_t q_p_p[] = {RELAY_ITEM_QUEUED, RELAY_ITEM_POISON,
                                              RELAY_ITEM_POISON};
   bson_value_t v;
   /* [2, 1, 2'] */
   cr_assert(offer_event(1, 2, "a", NULL, 0));
   cr_assert(offer_event(1, 1, "b", NULL, 0));
   cr_assert(offer_event(1, 2, "c", NULL, 0));
   v = int_id(1);
   assert_items(relay_table_find(&t, 0, &v), q_p_p, 3);
   cr_assert_eq(relay_table_find(&t, 0, &v)->last_seq, 2);
   /* [1, 1'] and [2, 1] */
   cr_assert(offer_event(2, 1, "d", NULL, 0));
   cr_assert(offer_event(2, 1, "e", NULL, 0));
   cr_assert(offer_event(3, 2, "f", NULL, 0));
   cr_assert(offer_event(3, 1, "g", NULL, 0));
   v = int_id(2);
   assert_items(relay_table_find(&t, 0, &v), q_p_p, 2);
   v = int_id(3);
   assert_items(relay_table_find(&t, 0, &v), q_p_p, 2);
   /* The poison waits for the dead letters; the valid event is published. */
   cr_assert_not_null(t.dirty_head);
   relay_entity_t *e = relay_table_next_ready(&t, 0);
   cr_assert_not_null(e);
   cr_assert_eq(e->inflight->ev.seq, 2);
   cr_assert_str_eq(e->inflight->ev.id, "a");
}

Test(table, replays_and_rereads_are_not_poison, .init = setup, .fini = teardown)
{
   static const relay_item_state_t queued3[] = {RELAY_ITEM_QUEUED, RELAY_ITEM_QUEUED,
                                                RELAY_ITEM_QUEUED};
   static const relay_item_state_t queued3_poison[] = {RELAY_ITEM_QUEUED, RELAY_ITEM_QUEUED,
                                                       RELAY_ITEM_QUEUED, RELAY_ITEM_POISON};
   bson_value_t v = int_id(1);
   cr_assert(offer_event(1, 1, "a", NULL, 0));
   cr_assert(offer_event(1, 2, "b", NULL, 0));
   cr_assert(offer_event(1, 3, "c", NULL, 0));
   /* The same elements read again with their document: skipped. */
   cr_assert_not(offer_event(1, 2, "b", NULL, 0));
   cr_assert_not(offer_event(1, 3, "c", NULL, 0));
   /* A change the stream replays (everything up to the last seq may come again): skipped,
    * whatever it carries, since the document read when it was first seen decided. */
   cr_assert_not(offer_event(1, 2, "x", NULL, 3));
   assert_items(relay_table_find(&t, 0, &v), queued3, 3);
   /* The same seq with another event, read live: poison. */
   cr_assert(offer_event(1, 3, "y", NULL, 0));
   assert_items(relay_table_find(&t, 0, &v), queued3_poison, 4);
   /* Within one replayed change, seqs repeated after the replay point are still poison. */
   cr_assert(offer_event(1, 5, "p", NULL, 3));
   cr_assert(offer_event(1, 4, "q", NULL, 3));
   cr_assert_eq(relay_table_find(&t, 0, &v)->last_seq, 5);
   cr_assert_eq(relay_table_count_state(relay_table_find(&t, 0, &v), RELAY_ITEM_POISON), 2);
}

/* A group member that loses a partition drops its queued events; read again later, they are
 * taken again, not judged repeats of a held poison event with a higher seq. */
Test(table, dropped_events_are_taken_again, .init = setup, .fini = teardown)
{
   bson_value_t v = int_id(1);
   relay_entity_t *e;
   relay_event_t bad;
   bson_t *doc = BCON_NEW("id", "p9", "seq", BCON_INT64(9), "data", "{", "}");
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};

   cr_assert(offer_event(1, 6, "a", NULL, 0));
   cr_assert(offer_event(1, 7, "b", NULL, 0));
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert_not(relay_event_parse(&elem, &bad)); /* no type: poison with seq 9 */
   e = relay_table_find(&t, 0, &v);
   cr_assert(relay_table_offer(&t, e, &bad, NULL, 0));
   bson_destroy(doc);
   cr_assert_eq(relay_table_drop_queued(&t, e), 2);
   cr_assert(offer_event(1, 6, "a", NULL, 0));
   cr_assert(offer_event(1, 7, "b", NULL, 0));
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_QUEUED), 2);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 1);
}

Test(table, entities_are_independent, .init = setup, .fini = teardown)
{
   relay_entity_t *a, *b;
   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(2, 1, NULL));
   cr_assert(offer(1, 2, NULL));
   a = relay_table_next_ready(&t, 0);
   b = relay_table_next_ready(&t, 0);
   cr_assert_not_null(a);
   cr_assert_not_null(b);
   cr_assert_neq(a, b);
   cr_assert_eq(t.inflight, 2);
   cr_assert_null(relay_table_next_ready(&t, 0));
}

Test(table, failure_retries_the_same_event_first, .init = setup, .fini = teardown)
{
   relay_entity_t *e;
   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(1, 2, NULL));
   e = relay_table_next_ready(&t, 0);
   relay_table_failed(&t, e, 100);
   /* Backing off: not before t=100. */
   cr_assert_null(relay_table_next_ready(&t, 50));
   e = relay_table_next_ready(&t, 100);
   cr_assert_not_null(e);
   cr_assert_eq(e->inflight->ev.seq, 1, "a later event overtook a failed one");
}

Test(table, poison_does_not_block_later_events, .init = setup, .fini = teardown)
{
   relay_entity_t *e;
   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(1, 2, NULL));
   e = relay_table_next_ready(&t, 0);
   relay_table_poisoned(&t, e, "too large");
   e = relay_table_next_ready(&t, 0);
   cr_assert_not_null(e);
   cr_assert_eq(e->inflight->ev.seq, 2);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 1);
}

Test(table, checkpoint_waits_for_the_oldest_position, .init = setup, .fini = teardown)
{
   bson_t *t1 = token(1), *t2 = token(2), *t3 = token(3), *cp;
   relay_pos_t *p1, *p2;
   relay_entity_t *a, *b;

   p1 = relay_table_pos_push(&t, t1, 0);
   cr_assert(offer(1, 1, p1));
   relay_table_pos_settle(&t);
   p2 = relay_table_pos_push(&t, t2, 0);
   cr_assert(offer(2, 1, p2));
   relay_table_pos_settle(&t);
   cr_assert_null(relay_table_take_checkpoint(&t));

   a = relay_table_next_ready(&t, 0);
   b = relay_table_next_ready(&t, 0);
   if (a->inflight->pos != p1) {
      relay_entity_t *x = a;
      a = b;
      b = x;
   }
   /* The newer position is done first: the checkpoint must not move yet. */
   relay_table_acked(&t, b);
   clear_all();
   cr_assert_null(relay_table_take_checkpoint(&t));
   relay_table_acked(&t, a);
   clear_all();
   cp = relay_table_take_checkpoint(&t);
   cr_assert_not_null(cp);
   cr_assert_eq(token_value(cp), 2);
   bson_destroy(cp);

   /* An idle high-water mark with nothing pending moves it at once. */
   relay_table_pos_push(&t, t3, 0);
   relay_table_pos_settle(&t);
   cp = relay_table_take_checkpoint(&t);
   cr_assert_not_null(cp);
   cr_assert_eq(token_value(cp), 3);
   bson_destroy(cp);
   bson_destroy(t1);
   bson_destroy(t2);
   bson_destroy(t3);
}

Test(table, empty_positions_are_merged, .init = setup, .fini = teardown)
{
   bson_t *tk = token(1);
   relay_pos_t *p = relay_table_pos_push(&t, tk, 0);
   cr_assert(offer(1, 1, p));
   for (int i = 0; i < 1000; i++) {
      relay_table_pos_push(&t, tk, 0);
   }
   /* One busy head and one merged empty tail, not 1001 entries. */
   cr_assert_eq(t.pos_head, p);
   cr_assert_not_null(t.pos_head->next);
   cr_assert_null(t.pos_head->next->next);
   bson_destroy(tk);
}

Test(table, sweep_position_without_token_never_checkpoints, .init = setup, .fini = teardown)
{
   relay_pos_t *p = relay_table_pos_push(&t, NULL, 0);
   relay_entity_t *e;
   cr_assert(offer(1, 1, p));
   e = relay_table_next_ready(&t, 0);
   relay_table_acked(&t, e);
   clear_all();
   cr_assert_null(relay_table_take_checkpoint(&t));
   cr_assert_null(t.pos_head);
}

Test(table, idle_entities_are_evicted, .init = setup, .fini = teardown)
{
   relay_entity_t *e;
   cr_assert(offer(1, 1, NULL));
   e = relay_table_next_ready(&t, 0);
   cr_assert(!relay_table_evict(&t, e));
   relay_table_acked(&t, e);
   clear_all();
   cr_assert(relay_table_evict(&t, e));
   cr_assert_eq(t.count, 0);
}

Test(table, many_entities_grow_the_table, .init = setup, .fini = teardown)
{
   for (int i = 0; i < 5000; i++) {
      cr_assert(offer(i, 1, NULL));
   }
   cr_assert_eq(t.count, 5000);
   for (int i = 0; i < 5000; i++) {
      bson_value_t v = int_id(i);
      cr_assert_not_null(relay_table_find(&t, 0, &v));
   }
}

/* The per-state counts (kept so the writer need not walk long lists) always match the items,
 * through every transition, and removals stop early without leaving anything behind. */
static void
check_counts(const relay_entity_t *e)
{
   uint32_t n[RELAY_ITEM_N_STATES] = {0};
   for (const relay_item_t *it = e->head; it; it = it->next) {
      n[it->state]++;
   }
   for (int s = 0; s < RELAY_ITEM_N_STATES; s++) {
      cr_assert_eq(e->n_state[s], n[s], "state %d: counted %u, holds %u", s,
                   (unsigned)e->n_state[s], (unsigned)n[s]);
   }
}

Test(table, state_counts_follow_every_transition, .init = setup, .fini = teardown)
{
   bson_value_t v = int_id(7);
   relay_entity_t *e;
   relay_item_t *it;

   for (int seq = 1; seq <= 6; seq++) {
      cr_assert(offer(7, seq, NULL));
   }
   e = relay_table_add(&t, 0, &v);
   check_counts(e);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_QUEUED), 6);

   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   check_counts(e);
   relay_table_failed(&t, e, 0); /* back to queued, first in line */
   check_counts(e);
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   cr_assert_eq(e->inflight->ev.seq, 1);
   relay_table_acked(&t, e);
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_poisoned(&t, e, "test");
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   relay_table_acked(&t, e);
   check_counts(e);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_ACKED), 2);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 1);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_QUEUED), 3);

   /* As the writer does: acked -> clearing, a failed clear goes back, then succeeds. */
   for (it = e->head; it; it = it->next) {
      if (it->state == RELAY_ITEM_ACKED) {
         relay_table_set_state(e, it, RELAY_ITEM_CLEARING);
      }
   }
   check_counts(e);
   cr_assert_eq(relay_table_restate(e, RELAY_ITEM_CLEARING, RELAY_ITEM_ACKED), 2);
   check_counts(e);
   cr_assert_eq(relay_table_restate(e, RELAY_ITEM_ACKED, RELAY_ITEM_CLEARING), 2);
   cr_assert_eq(relay_table_remove_state(&t, e, RELAY_ITEM_CLEARING), 2);
   check_counts(e);
   cr_assert_eq(e->head->ev.seq, 2); /* the poison one stays */
   for (it = e->head; it && it->state != RELAY_ITEM_POISON; it = it->next) {
   }
   cr_assert_not_null(it);
   relay_table_remove_item(&t, e, it);
   check_counts(e);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 0);
   cr_assert_eq(t.buffered, 3);
   /* The rest go through in order. */
   for (int seq = 4; seq <= 6; seq++) {
      cr_assert_eq(relay_table_next_ready(&t, 0), e);
      cr_assert_eq(e->inflight->ev.seq, seq);
      relay_table_acked(&t, e);
      check_counts(e);
   }
   cr_assert_eq(relay_table_remove_state(&t, e, RELAY_ITEM_ACKED), 3);
   check_counts(e);
   cr_assert_null(e->head);
   cr_assert_null(e->tail);
   cr_assert_eq(t.buffered, 0);
}

/* The byte bound's count: every buffered event adds its BSON size, every way out of the
 * table takes it back, so a long run cannot drift into refusing (or overfilling). */
Test(table, buffered_bytes_follow_the_items, .init = setup, .fini = teardown)
{
   cr_assert(offer(1, 1, NULL));
   size_t one = t.buffered_bytes;
   cr_assert_gt(one, 40, "an event of ~50 BSON bytes counted as %zu", one);
   cr_assert(offer(1, 2, NULL));
   cr_assert(offer(2, 1, NULL));
   cr_assert_eq(t.buffered, 3);
   cr_assert(t.buffered_bytes >= 3 * one - 2 && t.buffered_bytes <= 3 * one + 2, "%zu",
             t.buffered_bytes);
   /* A replay is refused and counts nothing. */
   cr_assert_not(offer(1, 1, NULL));
   cr_assert_eq(t.buffered, 3);

   relay_entity_t *e = relay_table_next_ready(&t, 0);
   relay_table_acked(&t, e);
   clear_all();
   cr_assert_eq(t.buffered, 2);
   relay_entity_t *e2 =
      relay_table_find(&t, 0, &(bson_value_t){.value_type = BSON_TYPE_INT32, .value.v_int32 = 2});
   cr_assert_not_null(e2);
   relay_table_remove_item(&t, e2, e2->head);
   relay_entity_t *rest = relay_table_next_ready(&t, 0);
   relay_table_acked(&t, rest);
   clear_all();
   cr_assert_eq(t.buffered, 0);
   cr_assert_eq(t.buffered_bytes, 0, "%zu bytes left with nothing buffered", t.buffered_bytes);
}

/* Offers the event with @seq of entity @id as read from its document, with a requeued marker
 * (count @count; 0: none); returns whether it was taken. */
static bool
offer_requeued(int32_t id, int64_t seq, int count)
{
   bson_value_t v = int_id(id);
   relay_entity_t *e = relay_table_add(&t, 0, &v);
   char json[200], marker[64] = "";
   if (count) {
      bson_snprintf(marker, sizeof marker, ", \"requeued\": {\"count\": %d}", count);
   }
   bson_snprintf(json, sizeof json,
                 "{\"id\": \"e%d-%d\", \"seq\": %d, \"type\": \"T\", \"data\": {}%s}", (int)id,
                 (int)seq, (int)seq, marker);
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;
   cr_assert(doc);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert_eq(ev.requeued, count);
   bool taken = relay_table_offer_requeued(&t, e, &ev, NULL);
   if (!taken) {
      relay_event_cleanup(&ev);
   }
   bson_destroy(doc);
   return taken;
}

Test(table, a_requeued_event_below_last_seq_is_taken_once, .init = setup, .fini = teardown)
{
   bson_value_t v = int_id(1);
   relay_entity_t *e;
   cr_assert(offer(1, 1, NULL));
   cr_assert(offer(1, 3, NULL));
   e = relay_table_find(&t, 0, &v);
   /* Seq 2 came back from the dead letters: below last_seq 3, taken once, last_seq kept. */
   cr_assert(offer_requeued(1, 2, 1));
   cr_assert_eq(e->last_seq, 3);
   cr_assert_not(offer_requeued(1, 2, 1), "taken twice");
   cr_assert_eq(e->tail->ev.seq, 2, "goes behind the events already queued");
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_QUEUED), 3);
   /* Published in the order held: 1, 3, then the requeued 2. */
   int64_t order[3];
   for (int i = 0; i < 3; i++) {
      relay_entity_t *r = relay_table_next_ready(&t, 0);
      cr_assert(r == e);
      order[i] = r->inflight->ev.seq;
      relay_table_acked(&t, r);
   }
   cr_assert(order[0] == 1 && order[1] == 3 && order[2] == 2);
   /* A requeued event above last_seq is an ordinary new one. */
   cr_assert(offer_requeued(1, 4, 1));
   cr_assert_eq(e->last_seq, 4);
   /* Without the marker an old seq breaks the seq rule: dead-lettered, never queued. */
   bson_value_t v2 = int_id(2);
   cr_assert(offer(2, 1, NULL));
   cr_assert(offer(2, 3, NULL));
   cr_assert(offer_requeued(2, 2, 0));
   relay_entity_t *other = relay_table_find(&t, 0, &v2);
   cr_assert(other && other->tail->state == RELAY_ITEM_POISON, "an unmarked old seq is not queued");
   cr_assert_str_eq(other->tail->reason, RELAY_REASON_SEQ_NOT_ABOVE);
   cr_assert_eq(other->last_seq, 3);
}

Test(table, gather_limit_is_a_quarter_of_the_buffer_per_entity_in_flight)
{
   cr_assert_eq(relay_table_gather_limit(10000, 256), 9);
   cr_assert_eq(relay_table_gather_limit(10000, 1), 16);
   cr_assert_eq(relay_table_gather_limit(100, 256), 1);
   cr_assert_eq(relay_table_gather_limit(100, 0), 1);
}

/* An entity publishing a backlog gathers acknowledged events while the next one is in
 * flight, up to the limit; nothing in flight, or poison, means clear now. */
Test(table, clears_gather_only_while_an_event_is_in_flight, .init = setup, .fini = teardown)
{
   relay_entity_t *e = NULL;

   for (int seq = 1; seq <= 5; seq++) {
      cr_assert(offer(1, seq, NULL));
   }
   for (int n = 1; n <= 3; n++) {
      e = relay_table_next_ready(&t, 0);
      cr_assert_not_null(e);
      relay_table_acked(&t, e);
   }
   /* 3 acknowledged, none in flight: clear now. */
   cr_assert_not(relay_table_may_gather(e, 4));
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   /* The 4th in flight: wait while fewer than the limit are acknowledged. */
   cr_assert(relay_table_may_gather(e, 4));
   cr_assert_not(relay_table_may_gather(e, 3));
   relay_table_poisoned(&t, e, "test");
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   cr_assert_not(relay_table_may_gather(e, 4), "poison is written at once");
}
