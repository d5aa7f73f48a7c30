/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The publisher (publish/publisher.h) with a fake admission and a fake MQTT link, no servers:
 * nothing is sent while admission refuses, the in-flight window is never exceeded, a message
 * the broker drops the connection on is convicted after three losses in a row (and not when
 * it was acknowledged meanwhile; also when paho failed it before reporting the loss), a
 * publish never answered drops the connection and counts as a loss, and late answers to
 * abandoned publishes are ignored.
 */
#include <criterion/criterion.h>

#include "publish/publisher.h"
#include "publish/suspect.h"

typedef struct {
   bool open;         /* admission open */
   int32_t refuse_id; /* the entity admission parks (0: none) */
   bool keep_failed;  /* failed events may be queued again */
   int parked;
   int sends;
   uint64_t tags[64]; /* the tags sent, in order */
   int rc;            /* what send returns */
   int receive_max;
   int clean_sessions;
   int connects;
} fake_t;

static bool
fake_open(void *ctx)
{
   return ((fake_t *)ctx)->open;
}

static bool fake_admit(void *ctx, relay_entity_t *e);

static bool fake_keep_failed(void *ctx, relay_entity_t *e);

static const relay_admission_ops_t fake_admission = {
   .open = fake_open,
   .admit = fake_admit,
   .keep_failed = fake_keep_failed,
};

static int
fake_send(void *ctx, relay_entity_t *e, uint64_t tag, const char **poison)
{
   fake_t *f = ctx;
   *poison = NULL;
   if (f->rc == 0) {
      cr_assert_lt(f->sends, 64);
      f->tags[f->sends++] = tag;
   }
   return f->rc;
}

static int
fake_receive_max(void *ctx)
{
   return ((fake_t *)ctx)->receive_max;
}

static bool
fake_connect(void *ctx, bson_error_t *error)
{
   ((fake_t *)ctx)->connects++;
   return true;
}

static void
fake_clean_session(void *ctx)
{
   ((fake_t *)ctx)->clean_sessions++;
}

/* The broker gave no DISCONNECT reason (a socket closed, as mosquitto does). */
static int
fake_last_disconnect_reason(void *ctx)
{
   (void)ctx;
   return -1;
}

static const relay_link_ops_t fake_link = {
   .send = fake_send,
   .receive_max = fake_receive_max,
   .connect = fake_connect,
   .clean_session = fake_clean_session,
   .last_disconnect_reason = fake_last_disconnect_reason,
};

static relay_config_t cfg;
static relay_table_t t;
static fake_t fake;
static relay_publisher_t *p;

static bool
fake_admit(void *ctx, relay_entity_t *e)
{
   fake_t *f = ctx;
   if (e->id.value.v_int32 == f->refuse_id) {
      relay_table_park(&t, e);
      f->parked++;
      return false;
   }
   return true;
}

static bool
fake_keep_failed(void *ctx, relay_entity_t *e)
{
   if (((fake_t *)ctx)->keep_failed) {
      return true;
   }
   relay_table_drop_inflight(&t, e);
   return false;
}

static void
setup(void)
{
   relay_config_init_defaults(&cfg);
   bson_free(cfg.mqtt_uri);
   cfg.mqtt_uri = bson_strdup("tcp://fake:1883");
   cfg.inflight_window = 4;
   cfg.qos = 1;
   relay_table_init(&t);
   memset(&fake, 0, sizeof fake);
   fake.open = true;
   fake.keep_failed = true;
   p = relay_publisher_new(&cfg, NULL, &t, &fake_admission, &fake, &fake_link, &fake);
}

static void
teardown(void)
{
   relay_publisher_destroy(p);
   relay_table_cleanup(&t);
   relay_config_destroy(&cfg);
}

TestSuite(publisher, .init = setup, .fini = teardown);

/* Entity @id gets one event with @seq and event id @evid. */
static relay_entity_t *
event_with_id(int32_t id, int64_t seq, const char *evid)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = id};
   relay_entity_t *e = relay_table_add(&t, 0, &v);
   char json[200];
   bson_t *doc;
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   relay_event_t ev;

   bson_snprintf(json, sizeof json, "{\"id\": \"%s\", \"seq\": %d, \"type\": \"T\", \"data\": {}}",
                 evid, (int)seq);
   doc = bson_new_from_json((const uint8_t *)json, -1, NULL);
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert(relay_table_offer(&t, e, &ev, NULL, 0));
   bson_destroy(doc);
   return e;
}

/* Entity @id gets one event with @seq (event id "e<id>-<seq>"). */
static relay_entity_t *
event(int32_t id, int64_t seq)
{
   char evid[40];
   bson_snprintf(evid, sizeof evid, "e%d-%d", (int)id, (int)seq);
   return event_with_id(id, seq, evid);
}

static void
complete(relay_mqtt_kind_t kind, uint64_t tag, int64_t now)
{
   relay_mqtt_completion_t c = {kind, tag, 0, 0};
   relay_publisher_complete(p, &c, now);
}

static void
connect_at(int64_t now)
{
   relay_publisher_connect(p, now);
   complete(RELAY_MQTT_CONNECTED, 0, now);
   cr_assert(relay_publisher_connected(p));
}

Test(publisher, nothing_is_sent_while_admission_is_closed)
{
   event(1, 1);
   event(2, 1);
   connect_at(0);
   fake.open = false;
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(fake.sends, 0, "sent while admission was closed");
   cr_assert_eq(t.inflight, 0);
   fake.open = true;
   relay_publisher_dispatch(p, 1);
   cr_assert_eq(fake.sends, 2);
}

Test(publisher, an_entity_refused_admission_is_not_sent)
{
   event(1, 1);
   event(2, 1);
   event(3, 1);
   fake.refuse_id = 2;
   connect_at(0);
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(fake.parked, 1);
   cr_assert_eq(fake.sends, 2, "an entity refused admission was sent");
   cr_assert_eq(t.inflight, 2);
}

Test(publisher, nothing_is_sent_before_the_connection_is_up)
{
   event(1, 1);
   relay_publisher_connect(p, 0);
   cr_assert_eq(fake.connects, 1);
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(fake.sends, 0);
}

Test(publisher, the_window_is_never_exceeded)
{
   for (int32_t id = 1; id <= 10; id++) {
      event(id, 1);
   }
   connect_at(0);
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(fake.sends, 4, "%d sent with a window of 4", fake.sends);
   relay_publisher_dispatch(p, 1);
   cr_assert_eq(fake.sends, 4, "the window grew on a second dispatch");
   complete(RELAY_MQTT_ACK, fake.tags[0], 2);
   complete(RELAY_MQTT_ACK, fake.tags[1], 2);
   relay_publisher_dispatch(p, 2);
   cr_assert_eq(fake.sends, 6);
   cr_assert_eq(t.inflight, 4);
}

Test(publisher, the_brokers_receive_maximum_narrows_the_window)
{
   for (int32_t id = 1; id <= 10; id++) {
      event(id, 1);
   }
   fake.receive_max = 2;
   connect_at(0);
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(fake.sends, 2);
}

/* Sends the one ready event and loses the connection shortly after; returns its tag. */
static uint64_t
send_and_lose(int64_t at)
{
   int before = fake.sends;
   connect_at(at);
   relay_publisher_dispatch(p, at);
   cr_assert_eq(fake.sends, before + 1);
   complete(RELAY_MQTT_LOST, 0, at + 10);
   return fake.tags[before];
}

Test(publisher, a_message_the_broker_drops_the_connection_on_three_times_is_dead_lettered)
{
   relay_entity_t *e = event(1, 1);
   for (int i = 0; i < RELAY_SUSPECT_STRIKES - 1; i++) {
      send_and_lose(i * 100);
      cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 0, "convicted too early");
   }
   send_and_lose(1000);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 1, "the suspect was not convicted");
   cr_assert_eq(fake.clean_sessions, 1, "paho keeps its copy to send again");
   cr_assert(!relay_publisher_connected(p));
}

Test(publisher, an_acknowledgement_clears_the_suspect)
{
   relay_entity_t *e = event(1, 1);
   uint64_t tag;
   send_and_lose(0);
   send_and_lose(100);
   connect_at(200);
   relay_publisher_dispatch(p, 200);
   tag = fake.tags[fake.sends - 1];
   complete(RELAY_MQTT_ACK, tag, 210);
   relay_table_remove_state(&t, e, RELAY_ITEM_ACKED);
   /* The same event again (an operator requeued it): one loss is no third strike. */
   event_with_id(1, 2, "e1-1");
   send_and_lose(300);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 0,
                "an acknowledged message stayed a suspect");
}

Test(publisher, a_late_answer_to_an_abandoned_publish_is_ignored)
{
   relay_entity_t *e = event(1, 1);
   uint64_t old = send_and_lose(0);
   connect_at(100);
   relay_publisher_dispatch(p, 100);
   cr_assert_eq(fake.sends, 2);
   complete(RELAY_MQTT_ACK, old, 110);
   cr_assert_not_null(e->inflight, "the resent publish was acknowledged by the old answer");
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_ACKED), 0);
   complete(RELAY_MQTT_ACK, fake.tags[1], 120);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_ACKED), 1);
}

Test(publisher, a_failed_publish_goes_back_to_the_queue_unless_admission_drops_it)
{
   relay_entity_t *a = event(1, 1), *b = event(2, 1);
   connect_at(0);
   relay_publisher_dispatch(p, 0);
   complete(RELAY_MQTT_FAIL, fake.tags[0], 1);
   fake.keep_failed = false;
   complete(RELAY_MQTT_FAIL, fake.tags[1], 1);
   cr_assert_eq(t.inflight, 0);
   cr_assert_eq(t.buffered, 1, "the dropped event stayed, or the kept one went");
   cr_assert(relay_table_count_state(a, RELAY_ITEM_QUEUED) +
                relay_table_count_state(b, RELAY_ITEM_QUEUED) ==
             1);
}

Test(publisher, a_publish_the_client_refuses_pauses_sending)
{
   event(1, 1);
   event(2, 1);
   connect_at(0);
   fake.rc = -1;
   relay_publisher_dispatch(p, 0);
   cr_assert_eq(t.inflight, 0);
   fake.rc = 0;
   relay_publisher_dispatch(p, 1);
   cr_assert_eq(fake.sends, 0, "sent again without a pause");
}

/* The dead-letter reason of @e's poison item, or NULL. */
static const char *
poison_reason(const relay_entity_t *e)
{
   for (const relay_item_t *it = e->head; it; it = it->next) {
      if (it->state == RELAY_ITEM_POISON) {
         return it->reason;
      }
   }
   return NULL;
}

/* RabbitMQ keeps the connection open and answers nothing on it once it failed a message over
 * its max_message_size: the publish timeout drops the connection, strikes the message like a
 * loss, and after the strikes the event behind it goes out. */
Test(publisher, a_publish_never_answered_reconnects_and_is_dead_lettered_after_the_strikes)
{
   relay_entity_t *e = event(1, 1);
   const char *reason;
   int64_t now = 0;

   event(1, 2); /* behind it: one event in flight per entity */
   cfg.publish_timeout_ms = 1000;
   for (int i = 0; i < RELAY_SUSPECT_STRIKES; i++, now += 2000) {
      connect_at(now);
      relay_publisher_dispatch(p, now);
      cr_assert_eq(fake.sends, i + 1, "not sent again on the new connection");
      relay_publisher_check_timeouts(p, now + 1000);
      cr_assert(relay_publisher_connected(p), "dropped before the timeout");
      relay_publisher_check_timeouts(p, now + 1001);
      cr_assert(!relay_publisher_connected(p), "kept a connection that stopped answering");
      cr_assert_eq(fake.clean_sessions, i + 1, "no clean reconnect after the timeout");
      cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), i == RELAY_SUSPECT_STRIKES - 1,
                   "dead-lettered after %d timeouts", i + 1);
   }
   reason = poison_reason(e);
   cr_assert_not_null(reason);
   cr_assert(strstr(reason, "no acknowledgement of this message came within the publish "
                            "timeout (1000 ms), 3 times in a row"),
             "%s", reason);
   connect_at(now);
   cr_assert_eq(fake.connects, RELAY_SUSPECT_STRIKES + 1, "did not connect again");
   relay_publisher_dispatch(p, now);
   cr_assert_eq(fake.sends, RELAY_SUSPECT_STRIKES + 1, "the event behind it did not go out");
   complete(RELAY_MQTT_ACK, fake.tags[fake.sends - 1], now + 10);
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_ACKED), 1);
}

/* paho may fail the publishes of a connection that ended (code -11) before it reports the
 * loss: the failed publish is still the one the loss is counted against, and once convicted
 * it is dead-lettered instead of being sent again. */
Test(publisher, a_publish_failed_with_its_connection_before_the_loss_is_still_the_suspect)
{
   relay_entity_t *e = event(1, 1);
   int64_t now = 0;

   /* A minute between rounds: past the failed publish's backoff. */
   for (int i = 0; i < RELAY_SUSPECT_STRIKES; i++, now += 60000) {
      relay_mqtt_completion_t ended = {RELAY_MQTT_FAIL, 0, RELAY_MQTT_CODE_INCOMPLETE, 0};
      connect_at(now);
      relay_publisher_dispatch(p, now);
      cr_assert_eq(fake.sends, i + 1, "not sent again");
      ended.tag = fake.tags[i];
      relay_publisher_complete(p, &ended, now + 10);
      complete(RELAY_MQTT_LOST, 0, now + 10);
   }
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 0, "dead-lettered before dispatch");
   connect_at(now);
   relay_publisher_dispatch(p, now);
   cr_assert_eq(fake.sends, RELAY_SUSPECT_STRIKES, "the convicted message was sent again");
   cr_assert_eq(relay_table_count_state(e, RELAY_ITEM_POISON), 1, "not dead-lettered");
   cr_assert_eq(fake.clean_sessions, 1);
}
