/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner (group/group.h, group/gate.h) with a fake lease thread, no servers:
 * what it asks of the stream when partitions are acquired (open after the oldest checkpoint,
 * sweep the ones without), lost (their queued events dropped, standby when none is left) or
 * asked for (drain: nothing new published, handed over once nothing is in flight, or after a
 * lease time), the gate of a member paused past its deadline, checkpoints valid only past a
 * partition's marker, and eligibility.
 */
#include <criterion/criterion.h>

#include "group/gate.h"
#include "group/group.h"

#define N_PARTS 4

typedef struct {
   relay_lease_event_t *head, *tail; /* events to hand out */
   bool may_publish[N_PARTS];
   int drained_part;
   int64_t drained_epoch;
   int n_drained;
   int eligible; /* last value told, -1 none */
   relay_partset_t ckpt_valid;
   int n_checkpoints;
   int probe;
} fake_t;

static fake_t fake;

static relay_lease_event_t *
fake_pop(void *ctx)
{
   fake_t *f = ctx;
   relay_lease_event_t *ev = f->head;
   if (ev) {
      f->head = ev->next;
      f->tail = f->head ? f->tail : NULL;
      ev->next = NULL;
   }
   return ev;
}

static bool
fake_may_publish(void *ctx, int part)
{
   return ((fake_t *)ctx)->may_publish[part];
}

static void
fake_drained(void *ctx, int part, int64_t epoch)
{
   fake_t *f = ctx;
   f->drained_part = part;
   f->drained_epoch = epoch;
   f->n_drained++;
}

static void
fake_set_eligible(void *ctx, bool eligible)
{
   ((fake_t *)ctx)->eligible = eligible;
}

static void
fake_checkpoint(void *ctx, const bson_t *token, const relay_partset_t *valid, const int64_t *epochs)
{
   fake_t *f = ctx;
   f->ckpt_valid = *valid;
   f->n_checkpoints++;
}

static int
fake_probe(void *ctx)
{
   return ((fake_t *)ctx)->probe;
}

static const relay_group_ops_t fake_ops = {
   .pop = fake_pop,
   .may_publish = fake_may_publish,
   .drained = fake_drained,
   .set_eligible = fake_set_eligible,
   .checkpoint = fake_checkpoint,
   .probe = fake_probe,
};

static relay_config_t cfg;
static relay_table_t t;
static relay_group_t *g;
static relay_group_intents_t in;

static void
setup(void)
{
   relay_config_init_defaults(&cfg);
   cfg.partitions = N_PARTS;
   cfg.client_id = bson_strdup("relay");
   relay_table_init(&t);
   memset(&fake, 0, sizeof fake);
   fake.eligible = -1;
   fake.probe = 1;
   for (int p = 0; p < N_PARTS; p++) {
      fake.may_publish[p] = true;
   }
   g = relay_group_new(&cfg, NULL, &t, &fake_ops, &fake);
   memset(&in, 0, sizeof in);
}

static void
teardown(void)
{
   relay_lease_event_t *ev;
   while ((ev = fake_pop(&fake))) {
      relay_lease_event_free(ev);
   }
   relay_group_intents_cleanup(&in);
   relay_group_destroy(g);
   relay_table_cleanup(&t);
   relay_config_destroy(&cfg);
}

TestSuite(owner, .init = setup, .fini = teardown);

/* Queues a lease event; @token_data: the checkpoint's "_data", or NULL for none. */
static void
post(relay_lease_event_kind_t kind, int part, int64_t epoch, const char *token_data)
{
   relay_lease_event_t *ev = bson_malloc0(sizeof *ev);
   ev->kind = kind;
   ev->part = part;
   ev->epoch = epoch;
   ev->token = token_data ? BCON_NEW("_data", BCON_UTF8(token_data)) : NULL;
   if (kind == RELAY_LEASE_FATAL) {
      ev->code = 78;
      ev->message = bson_strdup("cannot join");
   }
   if (fake.tail) {
      fake.tail->next = ev;
   } else {
      fake.head = ev;
   }
   fake.tail = ev;
}

static void
step(int64_t now, bool started)
{
   relay_group_intents_cleanup(&in);
   relay_group_step(g, now, started, true, &in);
}

/* An entity of partition @part with one queued event (seq @seq). */
static relay_entity_t *
entity(int32_t id, int part, int64_t seq)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   relay_entity_t *e = relay_table_add(&t, 0, &v);
   char json[200];
   bson_t *doc;
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;

   e->part = part;
   bson_snprintf(json, sizeof json,
                 "{\"id\": \"e%d-%d\", \"seq\": %d, \"type\": \"T\", \"data\": {}}", (int)id,
                 (int)seq, (int)seq);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert(relay_table_offer(&t, e, &ev, NULL, 0));
   bson_destroy(doc);
   return e;
}

static const char *
token_data(const bson_t *token)
{
   bson_iter_t it;
   cr_assert(token && bson_iter_init_find(&it, token, "_data"));
   return bson_iter_utf8(&it, NULL);
}

Test(owner, acquiring_opens_the_stream_after_the_oldest_checkpoint)
{
   post(RELAY_LEASE_ACQUIRED, 0, 7, "82b");
   post(RELAY_LEASE_ACQUIRED, 1, 7, "82a");
   post(RELAY_LEASE_ACQUIRED, 2, 7, NULL);
   step(0, false);
   cr_assert_eq(in.stream, RELAY_STREAM_OPEN);
   cr_assert_str_eq(token_data(in.token), "82a", "not the oldest checkpoint");
   cr_assert(relay_partset_has(&in.unswept, 2) && !relay_partset_has(&in.unswept, 0));
   cr_assert_not_null(in.filter, "the server hashes like us: it filters");
   for (int p = 0; p < 3; p++) {
      cr_assert(relay_group_takes(g, p));
   }
   cr_assert(!relay_group_takes(g, 3));
   cr_assert(!relay_group_fresh(g, 0), "a resumed partition is verified, not fresh");
   cr_assert(relay_group_fresh(g, 2), "a partition without checkpoint must be read fresh");
}

Test(owner, without_any_checkpoint_a_full_sweep_comes_first)
{
   post(RELAY_LEASE_ACQUIRED, 0, 1, NULL);
   step(0, false);
   cr_assert_eq(in.stream, RELAY_STREAM_OPEN);
   cr_assert_null(in.token);
}

Test(owner, the_stream_waits_for_the_probe)
{
   fake.probe = 0;
   post(RELAY_LEASE_ACQUIRED, 0, 1, NULL);
   step(0, false);
   cr_assert_eq(in.stream, RELAY_STREAM_KEEP, "opened before the server's hashing was known");
   fake.probe = -1;
   step(60000, false);
   cr_assert_eq(in.stream, RELAY_STREAM_OPEN);
   cr_assert_null(in.filter, "filtered on a server that hashes otherwise");
}

Test(owner, acquiring_while_streaming_sweeps_and_holds_the_checkpoint_back)
{
   relay_pos_t marker = {.seq = 10};
   post(RELAY_LEASE_ACQUIRED, 0, 1, "82a");
   step(0, false);
   relay_group_valid_after(g, relay_group_active(g), &(relay_pos_t){.seq = 1});
   post(RELAY_LEASE_ACQUIRED, 3, 1, NULL);
   step(1, true);
   cr_assert(relay_partset_has(&in.sweep, 3), "an acquired partition was not swept");
   cr_assert_eq(in.stream, RELAY_STREAM_REFILTER);
   cr_assert(relay_partset_has(in.filter, 3) && relay_partset_has(in.filter, 0));
   cr_assert(relay_group_fresh(g, 3));

   t.checkpoint_seq = 5;
   relay_group_checkpoint(g, &(bson_t)BSON_INITIALIZER);
   cr_assert(relay_partset_has(&fake.ckpt_valid, 0));
   cr_assert(!relay_partset_has(&fake.ckpt_valid, 3), "a checkpoint claimed an unswept partition");
   relay_group_sweep_began(g, &(relay_partset_t){0}, &marker);
   relay_partset_t three;
   relay_partset_clear(&three);
   relay_partset_add(&three, 3);
   relay_group_sweep_began(g, &three, &marker);
   relay_group_checkpoint(g, &(bson_t)BSON_INITIALIZER);
   cr_assert(!relay_partset_has(&fake.ckpt_valid, 3), "valid before the FIFO passed the marker");
   t.checkpoint_seq = 11;
   relay_group_checkpoint(g, &(bson_t)BSON_INITIALIZER);
   cr_assert(relay_partset_has(&fake.ckpt_valid, 3));
}

Test(owner, a_fresh_partition_stays_fresh_until_the_stream_passes_its_sweep)
{
   relay_partset_t one;
   relay_partset_clear(&one);
   relay_partset_add(&one, 1);
   post(RELAY_LEASE_ACQUIRED, 1, 1, NULL);
   step(0, false);
   relay_group_sweep_began(g, &one, &(relay_pos_t){.seq = 1});
   relay_group_sweep_ended(g, &one, (relay_ts_t){100, 0});
   relay_group_stream_at(g, &(relay_ts_t){100, 0});
   cr_assert(relay_group_fresh(g, 1), "not fresh before the stream passed the sweep's end");
   relay_group_stream_at(g, &(relay_ts_t){101, 0});
   cr_assert(!relay_group_fresh(g, 1));
}

Test(owner, losing_a_partition_drops_its_queued_events_and_goes_standby)
{
   relay_entity_t *other;
   post(RELAY_LEASE_ACQUIRED, 1, 5, "82a");
   post(RELAY_LEASE_ACQUIRED, 2, 5, "82a");
   step(0, false);
   entity(1, 1, 1);
   other = entity(2, 2, 1);
   post(RELAY_LEASE_LOST, 1, 4, NULL); /* an older epoch: not this ownership */
   step(1, true);
   cr_assert(relay_group_takes(g, 1), "a stale loss was applied");
   post(RELAY_LEASE_LOST, 1, 5, NULL);
   step(2, true);
   cr_assert(!relay_group_takes(g, 1));
   cr_assert_eq(t.buffered, 1, "the lost partition's queued events stayed");
   cr_assert_eq(relay_table_next_ready(&t, 0), other);
   cr_assert_eq(in.stream, RELAY_STREAM_REFILTER);
   post(RELAY_LEASE_LOST, 2, 5, NULL);
   step(3, true);
   cr_assert_eq(in.stream, RELAY_STREAM_CLOSE, "no standby after the last partition went");
}

Test(owner, a_handoff_drains_then_hands_over)
{
   relay_entity_t *busy, *waiting;
   post(RELAY_LEASE_ACQUIRED, 1, 3, "82a");
   step(0, false);
   busy = entity(1, 1, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), busy);
   post(RELAY_LEASE_HANDOFF, 1, 3, NULL);
   step(100, true);
   cr_assert(!relay_group_takes(g, 1));
   waiting = entity(2, 1, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), waiting);
   cr_assert(!relay_gate_admit(g, waiting), "a draining partition published something new");
   cr_assert(waiting->parked);
   step(200, true);
   cr_assert_eq(fake.n_drained, 0, "handed over with an event in flight");
   relay_table_acked(&t, busy);
   step(300, true);
   cr_assert_eq(fake.n_drained, 0, "handed over before its acknowledged event was cleared");
   relay_table_remove_state(&t, busy, RELAY_ITEM_ACKED);
   step(400, true);
   cr_assert_eq(fake.n_drained, 1);
   cr_assert_eq(fake.drained_part, 1);
   cr_assert_eq(fake.drained_epoch, 3);
}

Test(owner, a_drain_that_takes_a_lease_time_hands_over_anyway)
{
   relay_entity_t *busy;
   post(RELAY_LEASE_ACQUIRED, 1, 3, "82a");
   step(0, false);
   busy = entity(1, 1, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), busy);
   post(RELAY_LEASE_HANDOFF, 1, 3, NULL);
   step(100, true);
   step(100 + cfg.lease_ttl_ms, true);
   cr_assert_eq(fake.n_drained, 0);
   step(200 + cfg.lease_ttl_ms, true); /* drains are checked every 50 ms */
   cr_assert_eq(fake.n_drained, 1, "a stuck drain kept the partition");
}

Test(owner, a_member_past_its_deadline_publishes_nothing_until_renewed)
{
   relay_entity_t *e;
   post(RELAY_LEASE_ACQUIRED, 2, 1, "82a");
   step(0, false);
   e = entity(1, 2, 1);
   fake.may_publish[2] = false; /* paused: the renewals stopped, the deadline passed */
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   cr_assert(!relay_gate_admit(g, e), "published past the lease deadline");
   step(10, true);
   cr_assert_null(relay_table_next_ready(&t, 0), "offered again while the gate is shut");
   fake.may_publish[2] = true;
   step(20, true);
   cr_assert_eq(relay_table_next_ready(&t, 0), e, "not offered again once renewed");
   cr_assert(relay_gate_admit(g, e));
}

/* F14: a parked entity whose next event comes while the gate is still shut is offered and
 * parked again; every parked entity must still be offered once the lease is renewed. */
Test(owner, an_entity_parked_twice_leaves_the_others_parked_with_it)
{
   relay_entity_t *a, *b, *c, *got[3] = {NULL, NULL, NULL};
   post(RELAY_LEASE_ACQUIRED, 2, 1, "82a");
   step(0, false);
   a = entity(1, 2, 1);
   b = entity(2, 2, 1);
   c = entity(3, 2, 1);
   fake.may_publish[2] = false; /* the renewals failed, the deadline passed */
   for (int i = 0; i < 3; i++) {
      relay_entity_t *e = relay_table_next_ready(&t, 0);
      cr_assert_not_null(e);
      cr_assert(!relay_gate_admit(g, e), "published past the lease deadline");
   }
   cr_assert_eq(entity(2, 2, 2), b); /* b's next commit: queued, offered again */
   cr_assert_eq(relay_table_next_ready(&t, 0), b);
   cr_assert(!relay_gate_admit(g, b), "published past the lease deadline");
   cr_assert_null(relay_table_next_ready(&t, 0), "offered again while the gate is shut");
   fake.may_publish[2] = true; /* renewed */
   step(10, true);
   for (int i = 0; i < 3; i++) {
      got[i] = relay_table_next_ready(&t, 0);
      cr_assert_not_null(got[i], "only %d of 3 parked entities offered once renewed", i);
      cr_assert(relay_gate_admit(g, got[i]));
   }
   cr_assert((got[0] == a || got[1] == a || got[2] == a) &&
                (got[0] == b || got[1] == b || got[2] == b) &&
                (got[0] == c || got[1] == c || got[2] == c),
             "a parked entity was never offered again");
   cr_assert(!a->parked && !b->parked && !c->parked, "an entity stayed parked");
}

Test(owner, a_failed_publish_of_a_lost_partition_is_dropped)
{
   relay_entity_t *e;
   post(RELAY_LEASE_ACQUIRED, 2, 1, "82a");
   step(0, false);
   e = entity(1, 2, 1);
   cr_assert_eq(relay_table_next_ready(&t, 0), e);
   cr_assert(relay_gate_keep_failed(g, e));
   post(RELAY_LEASE_LOST, 2, 1, NULL);
   step(1, true);
   cr_assert(!relay_gate_keep_failed(g, e), "kept an event of a partition gone to another");
   cr_assert_eq(t.buffered, 0);
}

Test(owner, a_member_that_cannot_reach_the_broker_is_not_eligible)
{
   int64_t down = 1000;
   relay_group_step(g, down, false, false, &in);
   relay_group_step(g, down + cfg.lease_ttl_ms, false, false, &in);
   cr_assert_eq(fake.eligible, -1, "ineligible within a lease time");
   relay_group_step(g, down + cfg.lease_ttl_ms + 1, false, false, &in);
   cr_assert_eq(fake.eligible, 0);
   relay_group_step(g, down + cfg.lease_ttl_ms + 2, false, true, &in);
   cr_assert_eq(fake.eligible, 1);
}

Test(owner, a_fatal_event_asks_to_stop)
{
   post(RELAY_LEASE_FATAL, 0, 0, NULL);
   step(0, false);
   cr_assert(in.fatal);
   cr_assert_eq(in.exit_code, 78);
}
