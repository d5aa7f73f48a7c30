/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The one renderer (mqtt/message.c): one event has one outcome in both payload modes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "contract-private.h"
#include "mqtt/message.h"

/* Renders an event of entity id @id (@len bytes, not percent-encoded) in @mode. */
static void
render(int mode, const char *id, size_t len, relay_message_t *m)
{
   relay_config_t cfg;
   relay_event_t ev;
   bson_error_t error;
   bson_t *doc = bson_new_from_json(
      (const uint8_t *)"{\"id\": \"e1\", \"seq\": {\"$numberLong\": \"1\"}, \"type\": \"T\", "
                       "\"data\": {\"n\": 1}}",
      -1, &error);
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   bson_string_t *enc = bson_string_new(NULL);

   cr_assert_not_null(doc, "%s", error.message);
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&v, &ev), "%s", ev.reason);
   relay_config_init_defaults(&cfg);
   cfg.mqtt_version = 5;
   cfg.payload_mode = mode;
   relay_percent_encode(enc, id, len);
   relay_message_in_t in = {
      .vars = {.db = {"db", 2}, .collection = {"c", 1}, .id = {enc->str, enc->len}},
      .subject = {id, len},
   };
   relay_message_render(&cfg, &ev, &in, m);
   bson_string_free(enc, true);
   relay_event_cleanup(&ev);
   relay_config_destroy(&cfg);
   bson_destroy(doc);
}

/* F2 (tests/fuzz): a string _id of invalid UTF-8 (pymongo can write one) was dead-lettered
 * in structured mode but published percent-encoded in binary mode, where the Node consumer
 * then failed to decode its topic. The ENTITY "_id" rule: dead-lettered in both. */
Test(message, invalid_utf8_entity_id_is_poison_in_both_modes)
{
   const int modes[] = {RELAY_PAYLOAD_STRUCTURED, RELAY_PAYLOAD_BINARY};
   const char *want = _outbox_contract_row(_OUTBOX_RULE_ENTITY_ID)->reason;

   for (size_t i = 0; i < 2; i++) {
      relay_message_t m;
      render(modes[i], "fz\xff", 3, &m);
      cr_assert_not_null(m.poison, "mode %d published an invalid UTF-8 id", modes[i]);
      cr_assert_str_eq(m.poison, want);
      relay_message_cleanup(&m);
      render(modes[i], "caf\xc3\xa9", 5, &m); /* valid UTF-8: published */
      cr_assert_null(m.poison, "mode %d: %s", modes[i], m.poison);
      relay_message_cleanup(&m);
   }
}
