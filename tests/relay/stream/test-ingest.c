/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest (stream/ingest.h) with a fake reader and a fake store, no servers: after a resume
 * the stream is verified (an unknown entity is read from its document) until it passes the
 * time it was opened; a fresh partition's entities are read too; a change whose read fails is
 * held and retried first; a sweep that meets the stream reads an entity the stream took
 * afresh instead of trusting its older copy.
 */
#include <criterion/criterion.h>
#include <mongoc/mongoc.h>

#include "group/group.h"
#include "stream/ingest.h"

typedef struct {
   relay_change_t *head, *tail;
   uint64_t gen;
   int starts;
   bool started_at; /* the last start was at a time (a sweep's start), not after a token */
   int reads;
   uint32_t read_fail_code;
   char *doc_json; /* what a read of entity %d finds (a format) */
   relay_ts_t time;
   const char *sweep_docs[4]; /* the sweep cursor's documents (JSON) */
   int sweep_next;
   bson_t *sweep_doc;
   int sweeps_opened;
   relay_ts_t read_after, sweep_after, wait_after; /* the times the last ones had to cover */
   int waits;
   uint32_t wait_fail_code;
} fake_t;

static fake_t fake;

static relay_change_t *
fake_pop(void *ctx)
{
   relay_change_t *c = fake.head;
   if (c) {
      fake.head = c->next;
      fake.tail = fake.head ? fake.tail : NULL;
      c->next = NULL;
   }
   return c;
}

static uint64_t
fake_start(void *ctx, const bson_t *token, const relay_ts_t *at)
{
   fake.starts++;
   fake.started_at = at != NULL;
   return ++fake.gen;
}

static void
fake_stop(void *ctx)
{
}

static bool
fake_read_entity(void *ctx, int coll, const bson_value_t *id, const relay_ts_t *after, bson_t *doc,
                 bson_error_t *error)
{
   fake.reads++;
   fake.read_after = after ? *after : (relay_ts_t){0, 0};
   bson_init(doc);
   if (fake.read_fail_code) {
      bson_set_error(error, MONGOC_ERROR_STREAM, fake.read_fail_code, "fake failure");
      return false;
   }
   bson_destroy(doc);
   char *json = bson_strdup_printf(fake.doc_json, (int)id->value.v_int32);
   cr_assert(bson_init_from_json(doc, json, -1, NULL));
   bson_free(json);
   return true;
}

static bool
fake_ensure_index(void *ctx, int coll, bson_error_t *error)
{
   return true;
}

static bool
fake_operation_time(void *ctx, relay_ts_t *ts, bson_error_t *error)
{
   *ts = fake.time;
   return true;
}

static bool
fake_wait_majority(void *ctx, int coll, const relay_ts_t *after, bson_error_t *error)
{
   fake.waits++;
   fake.wait_after = *after;
   if (fake.wait_fail_code) {
      bson_set_error(error, MONGOC_ERROR_SERVER, fake.wait_fail_code, "fake wait failure");
      return false;
   }
   return true;
}

static void *
fake_sweep_open(void *ctx, int coll, bool hint, const relay_ts_t *after,
                const relay_partset_t *parts, int n)
{
   fake.sweeps_opened++;
   fake.sweep_after = *after;
   fake.sweep_next = 0;
   return &fake;
}

static bool
fake_sweep_next(void *ctx, void *cursor, const bson_t **doc)
{
   const char *json = fake.sweep_docs[fake.sweep_next];
   if (!json) {
      return false;
   }
   fake.sweep_next++;
   bson_destroy(fake.sweep_doc);
   fake.sweep_doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   cr_assert_not_null(fake.sweep_doc);
   *doc = fake.sweep_doc;
   return true;
}

static bool
fake_sweep_error(void *ctx, void *cursor, bson_error_t *error)
{
   return false;
}

static void
fake_sweep_close(void *ctx, void *cursor)
{
}

static const relay_ingest_ops_t fake_ops = {
   .pop = fake_pop,
   .start = fake_start,
   .stop = fake_stop,
   .read_entity = fake_read_entity,
   .ensure_index = fake_ensure_index,
   .operation_time = fake_operation_time,
   .wait_majority = fake_wait_majority,
   .sweep_open = fake_sweep_open,
   .sweep_next = fake_sweep_next,
   .sweep_error = fake_sweep_error,
   .sweep_close = fake_sweep_close,
};

/* The partition owner's lease thread: it acquires partition 0 with a checkpoint once (the
 * owner's first step, in setup()), then nothing happens there. */
static bool acquire_pending;

static relay_lease_event_t *
acquire_once(void *ctx)
{
   relay_lease_event_t *ev;
   if (!acquire_pending) {
      return NULL;
   }
   acquire_pending = false;
   ev = bson_malloc0(sizeof *ev);
   ev->kind = RELAY_LEASE_ACQUIRED;
   ev->part = 0;
   ev->epoch = 1;
   ev->token = BCON_NEW("_data", BCON_UTF8("82"));
   return ev;
}

static bool
always(void *ctx, int part)
{
   return true;
}

static void
no_drain(void *ctx, int part, int64_t epoch)
{
}

static void
no_eligible(void *ctx, bool eligible)
{
}

static void
no_checkpoint(void *ctx, const bson_t *token, const relay_partset_t *valid, const int64_t *epochs)
{
}

static int
hashes_alike(void *ctx)
{
   return 1;
}

static const relay_group_ops_t group_ops = {
   .pop = acquire_once,
   .may_publish = always,
   .drained = no_drain,
   .set_eligible = no_eligible,
   .checkpoint = no_checkpoint,
   .probe = hashes_alike,
};

static relay_config_t cfg;
static relay_table_t t;
static relay_group_t *g;
static relay_ingest_t *in;

static void
setup(void)
{
   relay_group_intents_t intents;

   relay_config_init_defaults(&cfg);
   cfg.database = bson_strdup("db");
   cfg.collections = bson_malloc0(sizeof(char *));
   cfg.collections[0] = bson_strdup("orders");
   cfg.n_collections = 1;
   cfg.partitions = 1; /* every entity in partition 0, which this member owns */
   cfg.client_id = bson_strdup("relay");
   memset(&fake, 0, sizeof fake);
   relay_table_init(&t);
   g = relay_group_new(&cfg, NULL, &t, &group_ops, NULL);
   /* The owner takes partition 0 with its checkpoint (resumed: not fresh) and learns that
    * the server hashes like the relay. */
   acquire_pending = true;
   relay_group_step(g, 0, false, true, &intents);
   relay_group_intents_cleanup(&intents);
   cr_assert(relay_group_takes(g, 0) && !relay_group_fresh(g, 0));
   cr_assert(relay_group_server_filters(g));
   in = relay_ingest_new(&cfg, NULL, &t, &relay_group_ingest_ops, g, &fake_ops, NULL);
}

static void
teardown(void)
{
   relay_change_t *c;
   relay_ingest_destroy(in);
   while ((c = fake_pop(NULL))) {
      relay_change_free(c);
   }
   bson_destroy(fake.sweep_doc);
   bson_free(fake.doc_json);
   relay_group_destroy(g);
   relay_table_cleanup(&t);
   relay_config_destroy(&cfg);
}

TestSuite(ingest, .init = setup, .fini = teardown);

static void
push(relay_change_kind_t kind, const char *json, relay_ts_t ts, int code)
{
   relay_change_t *c = bson_malloc0(sizeof *c);
   c->kind = kind;
   c->doc = json ? bson_new_from_json((const uint8_t *)json, -1, NULL) : NULL;
   c->token = BCON_NEW("_data", BCON_UTF8("t"));
   c->ts = ts;
   c->code = code;
   c->gen = fake.gen;
   if (fake.tail) {
      fake.tail->next = c;
   } else {
      fake.head = c;
   }
   fake.tail = c;
}

/* An insert of entity @id at time @t whose document holds @events and eventSeq @seq. */
static void
push_insert(int id, uint32_t t_s, const char *events, int seq)
{
   char json[600];
   bson_snprintf(json, sizeof json,
                 "{\"_id\": {\"_data\": \"c%u\"}, \"operationType\": \"insert\", "
                 "\"clusterTime\": {\"$timestamp\": {\"t\": %u, \"i\": 1}}, "
                 "\"ns\": {\"db\": \"db\", \"coll\": \"orders\"}, \"documentKey\": {\"_id\": %d}, "
                 "\"fullDocument\": {\"_id\": %d, \"events\": [%s], \"eventSeq\": %d}}",
                 t_s, t_s, id, id, events, seq);
   push(RELAY_CHANGE_EVENT, json, (relay_ts_t){t_s, 1}, 0);
}

#define EV1 "{\"id\": \"a1\", \"seq\": 1, \"type\": \"T\", \"data\": {}}"
#define EV2 "{\"id\": \"a2\", \"seq\": 2, \"type\": \"T\", \"data\": {}}"

static void
store_doc(const char *json)
{
   bson_free(fake.doc_json);
   fake.doc_json = bson_strdup(json);
}

/* Partition 0 is being swept again (as after a lost history): the owner makes it fresh. */
static void
make_fresh(void)
{
   relay_partset_t zero;
   relay_partset_clear(&zero);
   relay_partset_add(&zero, 0);
   relay_group_sweep_began(g, &zero, &(relay_pos_t){.seq = 0});
   cr_assert(relay_group_fresh(g, 0));
}

static void
resume(void)
{
   bson_t *token = BCON_NEW("_data", BCON_UTF8("82a"));
   relay_partset_t none;
   relay_partset_clear(&none);
   relay_ingest_open(in, token, &none);
   bson_destroy(token);
   cr_assert_eq(fake.starts, 1);
}

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
