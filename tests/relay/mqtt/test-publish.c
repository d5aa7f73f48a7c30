/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The sender (relay/mqtt/publish.c) without a broker: an event that can never be sent is
 * reported as poison and not handed to paho; a sendable one reaches paho (which refuses it
 * here: the client never connected) and the refusal comes back as paho's code; the entity's
 * id is percent-encoded once, on its first message, and kept; the names of namespaces met
 * late (past the first 16) are encoded as well.
 */
#include <criterion/criterion.h>
#include <string.h>

#include <MQTTAsync.h>

#include "mqtt/publish.h"
#include "stream/namespaces.h"
#include "stream/table.h"
#include "test-util.h"

static relay_config_t cfg;
static relay_namespaces_t *ns;
static relay_mqtt_t *mqtt;
static relay_sender_t *sender;
static relay_table_t table;

static void
setup(void)
{
   const char *args[] = {"--mongodb-uri",
                         "mongodb://localhost/",
                         "--namespace",
                         "app.c*",
                         "--mqtt-uri",
                         "tcp://127.0.0.1:1",
                         "--topic",
                         "{db}/{collection}/{id}",
                         "--max-message-bytes",
                         "512",
                         NULL};
   bson_error_t error;
   test_clear_env();
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   ns = relay_namespaces_new(&cfg, &error);
   cr_assert_not_null(ns, "%s", error.message);
   mqtt = relay_mqtt_new(&cfg, "test-publish", &error);
   cr_assert_not_null(mqtt, "%s", error.message);
   sender = relay_sender_new(&cfg, ns, mqtt, NULL);
   relay_table_init(&table);
}

static void
teardown(void)
{
   relay_table_cleanup(&table);
   relay_sender_destroy(sender);
   relay_mqtt_destroy(mqtt);
   relay_namespaces_destroy(ns);
   relay_config_destroy(&cfg);
}

TestSuite(sender, .init = setup, .fini = teardown);

/* Entity @id of namespace @coll with one event in flight whose data is @data_json. */
static relay_entity_t *
in_flight(int coll, const char *id, const char *data_json)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)id;
   v.value.v_utf8.len = (uint32_t)strlen(id);
   relay_entity_t *e = relay_table_add(&table, coll, &v);
   char *json = bson_strdup_printf("{\"id\": \"ev-1\", \"seq\": 1, \"type\": \"T\", \"data\": %s}",
                                   data_json);
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(doc, "%s", error.message);
   bson_value_t elem = {.value_type = BSON_TYPE_DOCUMENT};
   elem.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   elem.value.v_doc.data_len = doc->len;
   relay_event_t ev;
   cr_assert(relay_event_parse(&elem, &ev));
   cr_assert(relay_table_offer(&table, e, &ev, NULL, 0));
   cr_assert_eq(relay_table_next_ready(&table, 0), e);
   cr_assert_not_null(e->inflight);
   bson_destroy(doc);
   bson_free(json);
   return e;
}

Test(sender, a_sendable_event_reaches_paho_and_its_refusal_comes_back)
{
   int coll = relay_namespaces_take(ns, "app", "c1");
   cr_assert_geq(coll, 0);
   relay_entity_t *e = in_flight(coll, "a/b#c", "{\"n\": 1}");
   const char *poison = "unset";
   int rc = relay_sender_send(sender, e, 1, &poison);
   cr_assert_null(poison);
   cr_assert_neq(rc, MQTTASYNC_SUCCESS, "a client that never connected took the message");
   /* The id as one topic level carries it, made once and kept with the entity. */
   cr_assert_str_eq(e->encoded, "a%2Fb%23c");
   cr_assert_eq(e->encoded_len, strlen("a%2Fb%23c"));
   char *first = e->encoded;
   relay_sender_send(sender, e, 2, &poison);
   cr_assert_eq(e->encoded, first, "the encoded id was made again");
}

Test(sender, a_message_too_large_is_poison_and_not_sent)
{
   int coll = relay_namespaces_take(ns, "app", "c1");
   char data[1200];
   memset(data, 'x', sizeof data);
   bson_snprintf(data, sizeof data, "{\"s\": \"%.*s\"}", 1000, data + 100);
   relay_entity_t *e = in_flight(coll, "big", data);
   const char *poison = NULL;
   int rc = relay_sender_send(sender, e, 1, &poison);
   cr_assert_not_null(poison, "a message over --max-message-bytes was sent");
   cr_assert_eq(rc, 0, "a poison message was handed to paho (rc %d)", rc);
}

/* Namespaces met after the first 16 (a tenant created while the relay runs): their names
 * are encoded like the first ones' (under AddressSanitizer a short table would show). */
Test(sender, namespaces_met_late_are_encoded_too)
{
   int coll = -1;
   for (int i = 0; i < 40; i++) {
      char name[16];
      bson_snprintf(name, sizeof name, "c%d", i);
      coll = relay_namespaces_take(ns, "app", name);
      cr_assert_geq(coll, 0, "%s not taken", name);
   }
   relay_entity_t *e = in_flight(coll, "x", "{}");
   const char *poison = "unset";
   relay_sender_send(sender, e, 1, &poison);
   cr_assert_null(poison);
   cr_assert_str_eq(e->encoded, "x");
}
