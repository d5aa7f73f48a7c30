/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The writer (store/writer.h) with a fake clearer and a fake collection, no servers: a
 * checkpoint is due only for a position before which everything is cleared (a failed clear
 * holds it back until it succeeds), not while writes fail and back off, and a refused write
 * is reported until one succeeds.
 */
#include <criterion/criterion.h>

#include <mongoc/mongoc.h>

#include "store/writer.h"

/* The clearer and the collection the writer is handed. */
typedef struct {
   relay_clear_job_t *running; /* submitted and not taken back */
   bool finished;              /* the running batch is done */
   const relay_entity_t *fail; /* its clear fails ... */
   uint32_t fail_code;         /* ... with this server error */
   const char *refuse;         /* ... and, if set, the archive refuses its first event so */
   int submits;
   int updates;
   uint32_t update_fail_code; /* dead letters fail with this server error (0: they work) */
   bool updates_by_exact_id;  /* every update's filter had a plain _id equality */
} fake_t;

/* Whether @query names its document by {_id: <value>} (not an operator document): what mongos
 * 6.0 needs of an updateOne on a collection sharded by any key (relay/README.md, "Sharded
 * clusters"). */
static bool
has_exact_id(const bson_t *query)
{
   bson_iter_t it, sub;
   if (!bson_iter_init_find(&it, query, "_id")) {
      return false;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return true;
   }
   return !bson_iter_recurse(&it, &sub) || !bson_iter_next(&sub) || bson_iter_key(&sub)[0] != '$';
}

static relay_clear_job_t *
fake_take(void *ctx)
{
   fake_t *f = ctx;
   relay_clear_job_t *job = f->running;
   if (!job || !f->finished) {
      return NULL;
   }
   for (size_t i = 0; i < job->n; i++) {
      if (job->stmts[i].entity == f->fail) {
         job->stmts[i].failed = true;
         if (f->refuse) {
            job->stmts[i].refused = bson_malloc0(job->stmts[i].n_ids * sizeof(const char *));
            job->stmts[i].refused[0] = f->refuse;
         }
         job->n_failed++;
         bson_set_error(&job->error, MONGOC_ERROR_SERVER, f->fail_code, "fake failure");
      }
   }
   f->running = NULL;
   return job;
}

static void
fake_submit(void *ctx, relay_clear_job_t *job)
{
   fake_t *f = ctx;
   cr_assert_null(f->running, "a batch was submitted while one runs");
   f->running = job;
   f->finished = false;
   f->submits++;
}

static bool
fake_busy(void *ctx)
{
   return ((fake_t *)ctx)->running != NULL;
}

static bool
fake_update_one(void *ctx, int coll, const bson_t *query, const bson_t *update, bson_t *reply,
                bson_error_t *error)
{
   fake_t *f = ctx;
   bson_init(reply);
   f->updates++;
   f->updates_by_exact_id = (f->updates == 1 || f->updates_by_exact_id) && has_exact_id(query);
   if (f->update_fail_code) {
      bson_set_error(error, MONGOC_ERROR_SERVER, f->update_fail_code, "fake failure");
      return false;
   }
   BSON_APPEND_INT32(reply, "modifiedCount", 1);
   return true;
}

static const relay_writer_ops_t fake_ops = {
   .take = fake_take,
   .submit = fake_submit,
   .busy = fake_busy,
   .update_one = fake_update_one,
};

static relay_config_t cfg;
static relay_table_t t;
static fake_t fake;
static relay_writer_t *w;

static void
setup(void)
{
   relay_config_init_defaults(&cfg);
   cfg.database = bson_strdup("db");
   cfg.collections = bson_malloc0(sizeof(char *));
   cfg.collections[0] = bson_strdup("orders");
   cfg.n_collections = 1;
   cfg.reconnect_min_ms = 5000;
   cfg.reconnect_max_ms = 10000;
   cfg.checkpoint_interval_ms = 1000;
   relay_table_init(&t);
   memset(&fake, 0, sizeof fake);
   w = relay_writer_new(&cfg, NULL, NULL, &t, &fake_ops, &fake);
}

static void
teardown(void)
{
   if (fake.running) {
      relay_clear_job_free(fake.running);
   }
   relay_writer_destroy(w);
   relay_table_cleanup(&t);
   relay_config_destroy(&cfg);
}

TestSuite(writer, .init = setup, .fini = teardown);

static relay_entity_t *
entity(int32_t id)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   return relay_table_add(&t, 0, &v);
}

/* Reads a change (token @n) that brings one event of entity @id; returns the entity. */
static relay_entity_t *
change(int n, int32_t id)
{
   relay_entity_t *e = entity(id);
   bson_t *token = BCON_NEW("_data", BCON_INT32(n));
   relay_pos_t *pos = relay_table_pos_push(&t, token, 0);
   char json[200];
   bson_t *doc;
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;

   bson_snprintf(json, sizeof json,
                 "{\"id\": \"e%d-%d\", \"seq\": %d, \"type\": \"T\", \"data\": {}}", (int)id, n, n);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert(relay_table_offer(&t, e, &ev, pos, 0));
   relay_table_pos_settle(&t);
   bson_destroy(doc);
   bson_destroy(token);
   return e;
}

/* Publishes every ready event; acknowledges them, or marks them poison with @poison. */
static void
publish_all(const char *poison)
{
   relay_entity_t *e;
   while ((e = relay_table_next_ready(&t, 0))) {
      if (poison) {
         relay_table_poisoned(&t, e, poison);
      } else {
         relay_table_acked(&t, e);
      }
   }
}

static int
checkpoint_value(int64_t now, bool force)
{
   bson_t *token = relay_writer_checkpoint_due(w, now, force);
   bson_iter_t it;
   int v;
   if (!token) {
      return 0;
   }
   cr_assert(bson_iter_init_find(&it, token, "_data"));
   v = bson_iter_int32(&it);
   bson_destroy(token);
   return v;
}

Test(writer, checkpoint_only_once_everything_before_it_is_cleared)
{
   relay_entity_t *a = change(1, 1);
   change(2, 2);
   publish_all(NULL);

   relay_writer_flush(w, 0, true);
   cr_assert_eq(fake.submits, 1);
   cr_assert_eq(checkpoint_value(0, true), 0, "a checkpoint while its clears still run");

   /* The older change's clear fails, the newer one's succeeds. */
   fake.fail = a;
   fake.fail_code = 11600;
   fake.finished = true;
   relay_writer_flush(w, 10, true);
   cr_assert_eq(checkpoint_value(10, true), 0,
                "a checkpoint past an event whose clear failed (it would be lost at a restart)");
   cr_assert(!relay_writer_idle(w), "the failed clear was forgotten");

   /* Retried after the backoff, it succeeds: now the checkpoint may pass both. */
   fake.fail = NULL;
   relay_writer_flush(w, 10 + cfg.reconnect_max_ms, true);
   cr_assert_eq(fake.submits, 2, "the failed clear was not retried");
   fake.finished = true;
   relay_writer_flush(w, 20 + cfg.reconnect_max_ms, true);
   cr_assert_eq(checkpoint_value(20 + cfg.reconnect_max_ms, true), 2);
   cr_assert(relay_writer_idle(w));
}

Test(writer, no_checkpoint_while_writes_fail_and_back_off)
{
   change(1, 1);
   relay_entity_t *b = change(2, 2);
   publish_all(NULL);
   relay_writer_flush(w, 0, true);
   fake.fail = b;
   fake.fail_code = 11600;
   fake.finished = true;
   relay_writer_flush(w, 0, true);
   /* Change 1 is cleared (a valid checkpoint), but writes fail: wait for the retry. */
   cr_assert_eq(checkpoint_value(cfg.checkpoint_interval_ms, false), 0);
   cr_assert_eq(checkpoint_value(cfg.reconnect_max_ms, false), 1);
}

Test(writer, checkpoints_wait_for_their_interval_unless_forced)
{
   change(1, 1);
   publish_all(NULL);
   relay_writer_flush(w, 0, true);
   fake.finished = true;
   relay_writer_flush(w, 0, true);
   cr_assert_eq(checkpoint_value(cfg.checkpoint_interval_ms, false), 1);
   change(2, 2);
   publish_all(NULL);
   relay_writer_flush(w, cfg.checkpoint_interval_ms, true);
   fake.finished = true;
   relay_writer_flush(w, cfg.checkpoint_interval_ms, true);
   cr_assert_eq(checkpoint_value(cfg.checkpoint_interval_ms + 1, false), 0);
   cr_assert_eq(checkpoint_value(cfg.checkpoint_interval_ms + 1, true), 2);
}

Test(writer, a_refused_clear_is_reported_until_a_write_succeeds)
{
   relay_entity_t *a = change(1, 1);
   publish_all(NULL);
   relay_writer_flush(w, 0, true);
   fake.fail = a;
   fake.fail_code = 13; /* Unauthorized */
   fake.finished = true;
   relay_writer_flush(w, 0, true);
   cr_assert(relay_writer_refused(w));
   fake.fail = NULL;
   relay_writer_flush(w, cfg.reconnect_max_ms, true);
   fake.finished = true;
   relay_writer_flush(w, cfg.reconnect_max_ms, true);
   cr_assert(!relay_writer_refused(w));
}

Test(writer, a_failure_that_is_no_refusal_does_not_stop_publishing)
{
   relay_entity_t *a = change(1, 1);
   publish_all(NULL);
   relay_writer_flush(w, 0, true);
   fake.fail = a;
   fake.fail_code = 11600; /* interrupted at shutdown: retried, publishing goes on */
   fake.finished = true;
   relay_writer_flush(w, 0, true);
   cr_assert(!relay_writer_refused(w));
}

Test(writer, poison_is_dead_lettered_and_then_checkpointed)
{
   change(1, 1);
   publish_all("bad");
   fake.update_fail_code = 13;
   relay_writer_flush(w, 0, true);
   cr_assert_eq(fake.updates, 1);
   cr_assert(relay_writer_refused(w), "a refused dead letter was not reported");
   cr_assert_eq(checkpoint_value(0, true), 0, "a checkpoint past an event not dead-lettered");
   fake.update_fail_code = 0;
   relay_writer_flush(w, cfg.reconnect_max_ms, true);
   cr_assert_eq(fake.updates, 2);
   cr_assert(!relay_writer_refused(w));
   cr_assert_eq(fake.submits, 0, "a poison event went to the clearer");
   cr_assert_eq(checkpoint_value(cfg.reconnect_max_ms, true), 1);
   cr_assert(relay_writer_idle(w));
   cr_assert(fake.updates_by_exact_id, "a dead-letter move without an exact _id: mongos refuses "
                                       "it on a collection sharded by another key");
}

/* Issue 33: an event the archive can never take (another entity's event under its id) is
 * dead-lettered with the clearer's reason; its entity's other events are cleared and the
 * checkpoint moves past both, instead of the entity being held pending for good. */
Test(writer, an_event_the_archive_refuses_is_dead_lettered)
{
   relay_entity_t *e = change(1, 1);
   change(2, 1);
   publish_all(NULL);
   publish_all(NULL);
   fake.fail = e;
   fake.refuse = "the archive holds another entity's event with this event id";
   relay_writer_flush(w, 0, true);
   cr_assert_eq(fake.submits, 1);
   fake.finished = true;
   relay_writer_flush(w, 0, true); /* takes the failed batch back */
   cr_assert_eq(checkpoint_value(0, true), 0, "a checkpoint past events not handled");
   fake.fail = NULL;
   relay_writer_flush(w, cfg.reconnect_max_ms, true);
   cr_assert_eq(fake.updates, 1, "the refused event was not dead-lettered");
   cr_assert_eq(fake.submits, 2, "its sibling's clear was not retried");
   fake.finished = true;
   relay_writer_flush(w, 2 * cfg.reconnect_max_ms, true);
   cr_assert_eq(checkpoint_value(2 * cfg.reconnect_max_ms, true), 2);
   cr_assert(relay_writer_idle(w));
}

/* One clear round at @now: submit what is due, finish it, take it back. */
static void
clear_round(int64_t now)
{
   relay_writer_flush(w, now, true);
   fake.finished = true;
   relay_writer_flush(w, now, true);
}

/* Issue 33: the archive's validator refuses one event (121) while it takes the others: after
 * three refusals the event is dead-lettered with the reason instead of holding its entity. */
Test(writer, a_validator_refusal_that_persists_dead_letters_the_event)
{
   relay_entity_t *bad = change(1, 1);
   int64_t now = 0;

   cfg.archive_collection = bson_strdup("archive");
   fake.fail = bad;
   fake.refuse = relay_clear_refused_by_validator;
   publish_all(NULL);
   for (int round = 0; round < 3; round++) {
      change(10 + round, 2); /* another entity's event, archived */
      publish_all(NULL);
      cr_assert_eq(fake.updates, 0, "dead-lettered after %d refusals", round);
      clear_round(now += cfg.reconnect_max_ms * 4);
   }
   relay_writer_flush(w, now += cfg.reconnect_max_ms * 4, true);
   cr_assert_eq(fake.updates, 1, "a persistent refusal still holds the entity");
}

/* ... but while the validator refuses everything, it is the archive's fault: nothing is
 * dead-lettered, the events wait for the archive to be fixed. */
Test(writer, a_validator_that_refuses_everything_keeps_events_pending)
{
   relay_entity_t *bad = change(1, 1);
   int64_t now = 0;

   cfg.archive_collection = bson_strdup("archive");
   fake.fail = bad;
   fake.refuse = relay_clear_refused_by_validator;
   publish_all(NULL);
   for (int round = 0; round < 6; round++) {
      clear_round(now += cfg.reconnect_max_ms * 4);
   }
   cr_assert_eq(fake.updates, 0, "dead-lettered although the archive took nothing");
   cr_assert_geq(fake.submits, 6);
}
