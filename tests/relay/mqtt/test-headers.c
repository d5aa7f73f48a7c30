/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: which stored headers the relay publishes, which become CloudEvents extension
 * attributes, and which are left out with a reason (mqtt/headers.h).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "mqtt/headers.h"
#include "mqtt/render.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

/* Parses an event whose headers field is @headers_json (any JSON value); the document stays
 * alive until the next call. */
static relay_event_t *
event_with_headers(const char *headers_json)
{
   static bson_t *doc;
   static relay_event_t ev;
   bson_value_t v;
   bson_error_t error;
   char json[16384];

   relay_event_cleanup(&ev);
   if (doc) {
      bson_destroy(doc);
   }
   snprintf(json, sizeof json,
            "{\"id\": \"e1\", \"seq\": 1, \"type\": \"T\", \"data\": {\"n\": 1}, \"headers\": %s}",
            headers_json);
   doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(doc, "%s: %s", json, error.message);
   v.value_type = BSON_TYPE_DOCUMENT;
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   cr_assert(relay_event_parse(&v, &ev), "bad headers made the event poison: %s", ev.reason);
   return &ev;
}

static const relay_header_t *
find(const relay_headers_t *h, const char *name)
{
   for (size_t i = 0; i < h->n; i++) {
      if (!strcmp(h->items[i].name, name)) {
         return &h->items[i];
      }
   }
   return NULL;
}

Test(headers, every_string_header_is_published_in_order)
{
   relay_headers_t h;
   relay_headers_read(event_with_headers("{\"traceparent\": \"" TP "\", \"tracestate\": "
                                         "\"rojo=1\", \"tenant\": \"acme\", \"X-Request-Id\": "
                                         "\"r-7\"}"),
                      &h);
   cr_assert_eq(h.n, 4);
   cr_assert_eq(h.dropped, 0, "%s", h.reason);
   cr_assert_str_eq(h.items[0].name, "traceparent");
   cr_assert_str_eq(h.items[0].value, TP);
   cr_assert_str_eq(h.items[3].name, "X-Request-Id");
   cr_assert_str_eq(h.items[3].value, "r-7");
   /* CloudEvents attribute names are [a-z0-9]{1,20}: not X-Request-Id. */
   cr_assert(find(&h, "traceparent")->attribute);
   cr_assert(find(&h, "tracestate")->attribute);
   cr_assert(find(&h, "tenant")->attribute);
   cr_assert(!find(&h, "X-Request-Id")->attribute);
}

Test(headers, ce_attribute_names)
{
   cr_assert(relay_header_is_ce_attribute("traceparent"));
   cr_assert(relay_header_is_ce_attribute("a1"));
   cr_assert(relay_header_is_ce_attribute("abcdefghijklmnopqrst")); /* 20 */
   cr_assert(!relay_header_is_ce_attribute("abcdefghijklmnopqrstu"));
   cr_assert(!relay_header_is_ce_attribute("Tenant"));
   cr_assert(!relay_header_is_ce_attribute("x-tenant"));
   cr_assert(!relay_header_is_ce_attribute("x_tenant"));
   cr_assert(!relay_header_is_ce_attribute(""));
   cr_assert(!relay_header_is_ce_attribute("dataschema")); /* context attribute */
   cr_assert(!relay_header_is_ce_attribute("seq"));        /* the relay's own extension */
}

Test(headers, no_headers_and_empty_headers)
{
   relay_headers_t h;
   relay_headers_read(event_with_headers("{}"), &h);
   cr_assert_eq(h.n + h.dropped, 0);
   cr_assert_null(h.reason);
}

Test(headers, not_a_document_drops_all_with_a_reason)
{
   const char *bad[] = {"\"traceparent\"", "[\"a\"]", "5", "null"};
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      relay_headers_t h;
      relay_headers_read(event_with_headers(bad[i]), &h);
      cr_assert_eq(h.n, 0, "%s", bad[i]);
      cr_assert_eq(h.dropped, 1, "%s", bad[i]);
      cr_assert_str_eq(h.reason, "headers is not a document");
   }
}

/* Each bad header is left out alone; the good one beside it still goes. */
Test(headers, bad_headers_are_left_out_with_reasons)
{
   static const struct {
      const char *json, *reason_part;
   } cases[] = {
      {"{\"n\": 5}", "not a string"},
      {"{\"n\": {\"a\": \"b\"}}", "not a string"},
      {"{\"event-id\": \"forged\"}", "reserved"},
      {"{\"Event-ID\": \"forged\"}", "reserved"},
      {"{\"type\": \"forged\"}", "reserved"},
      {"{\"specversion\": \"0.3\"}", "reserved"},
      /* issue 33: the replay marker is reserved, so no producer can forge it */
      {"{\"replay\": \"false\"}", "reserved"},
      {"{\"REPLAY\": \"true\"}", "reserved"},
      /* issue 33: non-characters are not MQTT text (mosquitto drops the connection) */
      {"{\"n\": \"\\uffff\"}", "MQTT text"},
      {"{\"n\\ufdd0\": \"v\"}", "MQTT text"},
      {"{\"tab\\there\": \"v\"}", "control character"},
      {"{\"n\": \"a\\u0000b\"}", "control character"},
      {"{\"n\": \"line\\nbreak\"}", "control character"},
      {"{\"n\": \"\\u0085\"}", "control character"},
      {"{\"traceparent\": \"00-nope\"}", "W3C"},
      {"{\"tracestate\": \"Bad=1\"}", "W3C"},
      {"{\"n\": \"1\", \"n\": \"2\"}", "second header"},
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char json[512];
      relay_headers_t h;
      /* The good header comes first, so a second "n" is the one dropped. */
      snprintf(json, sizeof json, "{\"good\": \"yes\", %s", cases[i].json + 1);
      relay_headers_read(event_with_headers(json), &h);
      cr_assert_eq(h.dropped, 1, "%s: dropped %zu", json, h.dropped);
      cr_assert_not_null(h.reason, "%s", json);
      cr_assert_not_null(strstr(h.reason, cases[i].reason_part), "%s: %s", json, h.reason);
      cr_assert_not_null(find(&h, "good"), "%s", json);
   }
}

Test(headers, invalid_utf8_is_left_out)
{
   /* bson_new_from_json refuses invalid UTF-8: build the headers by hand. */
   bson_t doc = BSON_INITIALIZER, headers;
   relay_event_t ev;
   bson_value_t v;
   relay_headers_t h;

   BSON_APPEND_UTF8(&doc, "id", "e1");
   BSON_APPEND_INT64(&doc, "seq", 1);
   BSON_APPEND_UTF8(&doc, "type", "T");
   BSON_APPEND_DOCUMENT_BEGIN(&doc, "data", &headers);
   bson_append_document_end(&doc, &headers);
   BSON_APPEND_DOCUMENT_BEGIN(&doc, "headers", &headers);
   bson_append_utf8(&headers, "bad", 3, "\xff\xfe", 2);
   bson_append_utf8(&headers, "\xc3(", 2, "v", 1);
   bson_append_utf8(&headers, "ok", 2, "v", 1);
   bson_append_document_end(&doc, &headers);
   v.value_type = BSON_TYPE_DOCUMENT;
   v.value.v_doc.data = (uint8_t *)bson_get_data(&doc);
   v.value.v_doc.data_len = doc.len;
   cr_assert(relay_event_parse(&v, &ev), "%s", ev.reason);
   relay_headers_read(&ev, &h);
   cr_assert_eq(h.n, 1);
   cr_assert_eq(h.dropped, 2);
   cr_assert_not_null(strstr(h.reason, "UTF-8"));
   relay_event_cleanup(&ev);
   bson_destroy(&doc);
}

Test(headers, limits_on_count_and_size)
{
   char json[16000], *p = json;
   relay_headers_t h;

   /* 20 headers: 16 go, 4 are left out. */
   p += sprintf(p, "{");
   for (int i = 0; i < 20; i++) {
      p += sprintf(p, "%s\"h%d\": \"v\"", i ? ", " : "", i);
   }
   sprintf(p, "}");
   relay_headers_read(event_with_headers(json), &h);
   cr_assert_eq(h.n, RELAY_HEADERS_MAX);
   cr_assert_eq(h.dropped, 4);
   cr_assert_not_null(strstr(h.reason, "more than 16"));
   cr_assert_eq(h.n_reasons, 1, "one rule, counted once per reason");
   cr_assert_eq(h.reasons[0].n, 4);

   /* A value over 4096 bytes; then three of 3000 bytes: the third passes 8192 in all. */
   p = json;
   p += sprintf(p, "{\"big\": \"");
   memset(p, 'x', 4097);
   p += 4097;
   p += sprintf(p, "\", \"a\": \"");
   for (int k = 0; k < 3; k++) {
      memset(p, 'y', 3000);
      p += 3000;
      p += sprintf(p, k < 2 ? "\", \"%c\": \"" : "\"}", 'b' + k);
   }
   relay_headers_read(event_with_headers(json), &h);
   cr_assert_eq(h.n, 2, "%zu", h.n);
   cr_assert_eq(h.dropped, 2);
   cr_assert_not_null(strstr(h.reason, "4096"), "%s", h.reason);
   cr_assert_null(find(&h, "c"));
}

Test(headers, structured_payload_carries_attribute_headers)
{
   relay_event_t *ev = event_with_headers("{\"traceparent\": \"" TP
                                          "\", \"tracestate\": \"rojo=1\", \"tenant\": \"acme\", "
                                          "\"X-Request-Id\": \"r-7\", \"n\": 5}");
   relay_headers_t h;
   relay_str_t subject = {"c1", 2};
   bson_error_t error;
   bson_iter_t it;
   size_t len;
   char *json;
   bson_t *parsed;

   relay_headers_read(ev, &h);
   json = relay_cloudevent_json(ev, "/db/c", subject, &h, &len);
   parsed = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(parsed, "not JSON: %s", json);
   cr_assert(bson_iter_init_find(&it, parsed, "traceparent"), "%s", json);
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), TP);
   cr_assert(bson_iter_init_find(&it, parsed, "tracestate"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "rojo=1");
   cr_assert(bson_iter_init_find(&it, parsed, "tenant"));
   cr_assert(!bson_iter_init_find(&it, parsed, "X-Request-Id"), "%s", json);
   cr_assert(!bson_iter_init_find(&it, parsed, "n"), "%s", json);
   cr_assert(bson_iter_init_find(&it, parsed, "id"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "e1");
   bson_destroy(parsed);
   bson_free(json);
}

Test(headers, props_follow_the_relays_own)
{
   relay_headers_t h;
   const char *props[2 * (2 + RELAY_HEADERS_MAX)] = {"event-id", "e1"};
   size_t n;

   relay_headers_read(event_with_headers("{\"tenant\": \"acme\", \"X-A\": \"b\"}"), &h);
   n = relay_headers_append_props(&h, props, 2);
   cr_assert_eq(n, 6);
   cr_assert_str_eq(props[0], "event-id");
   cr_assert_str_eq(props[2], "tenant");
   cr_assert_str_eq(props[3], "acme");
   cr_assert_str_eq(props[4], "X-A");
   cr_assert_str_eq(props[5], "b");
}
