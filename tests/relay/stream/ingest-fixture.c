/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The fixture of ingest's unit tests (ingest-fixture.h): the fakes and their set-up.
 */
#include "config/namespace.h"
#include "ingest-fixture.h"

fake_t fake;

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
                 relay_ts_t *seen, bson_error_t *error)
{
   fake.reads++;
   *seen = fake.read_time;
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

relay_config_t cfg;
relay_table_t t;
relay_group_t *g;
relay_ingest_t *in;
relay_namespaces_t *ns;

void
ingest_setup(void)
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
   bson_error_t error;
   cr_assert(relay_config_resolve_namespaces(&cfg, &error), "%s", error.message);
   ns = relay_namespaces_new(&cfg, &error);
   cr_assert(ns, "%s", error.message);
   in = relay_ingest_new(&cfg, ns, NULL, &t, &relay_group_ingest_ops, g, &fake_ops, NULL);
}

void
ingest_teardown(void)
{
   relay_change_t *c;
   relay_ingest_destroy(in);
   relay_namespaces_destroy(ns);
   while ((c = fake_pop(NULL))) {
      relay_change_free(c);
   }
   bson_destroy(fake.sweep_doc);
   bson_free(fake.doc_json);
   relay_group_destroy(g);
   relay_table_cleanup(&t);
   relay_config_destroy(&cfg);
}

void
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

void
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

void
store_doc(const char *json)
{
   bson_free(fake.doc_json);
   fake.doc_json = bson_strdup(json);
}

void
make_fresh(void)
{
   relay_partset_t zero;
   relay_partset_clear(&zero);
   relay_partset_add(&zero, 0);
   relay_group_sweep_began(g, &zero, &(relay_pos_t){.seq = 0});
   cr_assert(relay_group_fresh(g, 0));
}

void
resume(void)
{
   bson_t *token = BCON_NEW("_data", BCON_UTF8("82a"));
   relay_partset_t none;
   relay_partset_clear(&none);
   relay_ingest_open(in, token, &none);
   bson_destroy(token);
   cr_assert_eq(fake.starts, 1);
}
