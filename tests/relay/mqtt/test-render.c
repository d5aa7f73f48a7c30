/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: entity id rendering, percent-encoding, topic templates, event validation and
 * the CloudEvents payload.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "stream/event.h"
#include "mqtt/render.h"

static char *
encode(const char *s, size_t len)
{
   bson_string_t *out = bson_string_new(NULL);
   relay_percent_encode(out, s, len);
   return bson_string_free(out, false);
}

static char *
topic_for(const bson_value_t *id, const char *tmpl)
{
   size_t len;
   char *rendered = relay_render_id(id, &len);
   relay_template_vars_t vars = {{"db", 2}, {"things", 6}, {rendered, len}, {"a.b", 3}, {"7", 1}};
   char *topic = relay_template_render(tmpl, &vars);
   bson_free(rendered);
   return topic;
}

Test(render, id_string_oid_ints)
{
   bson_value_t v;
   size_t len;
   char *s;

   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = "order-17";
   v.value.v_utf8.len = 8;
   s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "order-17");
   cr_assert_eq(len, 8);
   bson_free(s);

   v.value_type = BSON_TYPE_OID;
   bson_oid_init_from_string(&v.value.v_oid, "5f2b6c0e9d3e4a1b2c3d4e5f");
   s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "5f2b6c0e9d3e4a1b2c3d4e5f");
   bson_free(s);

   /* Integers render in decimal (the string "-42" is quoted instead: issue 29). */
   v.value_type = BSON_TYPE_INT32;
   v.value.v_int32 = -42;
   s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "-42");
   bson_free(s);

   v.value_type = BSON_TYPE_INT64;
   v.value.v_int64 = INT64_C(9007199254740993);
   s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "9007199254740993");
   bson_free(s);
}

static char *
render_json_id(const char *json, size_t *len)
{
   char *doc_json = bson_strdup_printf("{\"v\": %s}", json);
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)doc_json, -1, &error);
   bson_iter_t it;
   cr_assert_not_null(doc, "%s: %s", json, error.message);
   cr_assert(bson_iter_init_find(&it, doc, "v"));
   char *out = relay_render_id(bson_iter_value(&it), len);
   bson_destroy(doc);
   bson_free(doc_json);
   return out;
}

/* Issue 29, 8: ids that MongoDB keeps apart get different topic levels and subjects, and
 * none is empty; strings and ObjectIds stay as they were. The one pair kept alike on
 * purpose, an ObjectId and the string of its hex digits, is checked on its own below. */
Test(render, id_rendering_is_injective_and_never_empty)
{
   static const struct {
      const char *json, *rendered;
   } ids[] = {
      {"null", "null"},
      {"\"null\"", "\"null\""},
      {"true", "true"},
      {"\"true\"", "\"true\""},
      {"false", "false"},
      {"\"false\"", "\"false\""},
      {"5", "5"},
      {"\"5\"", "\"5\""},
      {"{\"$numberLong\": \"-6\"}", "-6"},
      {"\"-6\"", "\"-6\""},
      {"5.5", "{ \"$numberDouble\" : \"5.5\" }"},
      {"\"5.5\"", "5.5"},
      {"\"-\"", "-"},
      {"\"5a\"", "5a"},
      {"\"\"", "\"\""},
      {"\"\\\"\"", "\"\\\"\""},         /* the string " */
      {"\"\\\"\\\"\"", "\"\\\"\\\"\""}, /* the string "" */
      {"{\"$oid\": \"5f2b6c0e9d3e4a1b2c3d4e5f\"}", "5f2b6c0e9d3e4a1b2c3d4e5f"},
      {"\"5F2B6C0E9D3E4A1B2C3D4E5F\"", "5F2B6C0E9D3E4A1B2C3D4E5F"},
      {"{\"a\": 1}", "{ \"a\" : { \"$numberInt\" : \"1\" } }"},
      {"\"{ \\\"a\\\" : { \\\"$numberInt\\\" : \\\"1\\\" } }\"",
       "\"{ \\\"a\\\" : { \\\"$numberInt\\\" : \\\"1\\\" } }\""},
      {"[1]", "[ { \"$numberInt\" : \"1\" } ]"},
      {"\"[1]\"", "\"[1]\""},
      {"\"order-17\"", "order-17"},
      {"\"nullable\"", "nullable"},
   };
   size_t n = sizeof ids / sizeof ids[0];
   char *seen[sizeof ids / sizeof ids[0]];
   for (size_t i = 0; i < n; i++) {
      size_t len;
      seen[i] = render_json_id(ids[i].json, &len);
      cr_assert_str_eq(seen[i], ids[i].rendered, "id %s", ids[i].json);
      cr_assert_eq(len, strlen(ids[i].rendered));
      cr_assert_gt(len, 0, "id %s renders as nothing", ids[i].json);
      for (size_t j = 0; j < i; j++) {
         cr_assert_str_neq(seen[i], seen[j], "%s and %s render alike", ids[i].json, ids[j].json);
      }
   }
   for (size_t i = 0; i < n; i++) {
      bson_free(seen[i]);
   }
}

/* libbson's JSON writer gives up on invalid UTF-8 inside a document id: the id rendered as
 * nothing (an empty topic level and subject). Now as its BSON bytes in hex. */
Test(render, document_id_with_invalid_utf8_is_not_empty)
{
   bson_t inner = BSON_INITIALIZER;
   bson_append_utf8(&inner, "a", 1, "x\xff", 2);
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   v.value.v_doc.data = (uint8_t *)bson_get_data(&inner);
   v.value.v_doc.data_len = inner.len;
   size_t len;
   char *s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "{ \"$bsonHex\" : \"0376000f0000000261000300000078ff0000\" }");
   cr_assert_eq(len, strlen(s));
   bson_free(s);
   bson_destroy(&inner);
}

/* Writers store an ObjectId's hex as a string id and consumers read the subject back as an
 * ObjectId (the Python writer and the C consumer of examples/ do): both render alike. */
Test(render, hex_string_id_renders_as_its_object_id)
{
   size_t a_len, b_len;
   char *a = render_json_id("{\"$oid\": \"5f2b6c0e9d3e4a1b2c3d4e5f\"}", &a_len);
   char *b = render_json_id("\"5f2b6c0e9d3e4a1b2c3d4e5f\"", &b_len);
   cr_assert_str_eq(a, "5f2b6c0e9d3e4a1b2c3d4e5f");
   cr_assert_str_eq(b, a);
   bson_free(a);
   bson_free(b);
}

/* Issue 29, 12: with --topic '{id}', an id starting with '$' would make a broker's topic. */
Test(render, leading_dollar_is_encoded)
{
   char *s = encode("$SYS/x", 6);
   cr_assert_str_eq(s, "%24SYS%2Fx");
   bson_free(s);
   s = encode("a$b", 3);
   cr_assert_str_eq(s, "a$b");
   bson_free(s);
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)"$x";
   v.value.v_utf8.len = 2;
   char *topic = topic_for(&v, "{id}");
   cr_assert_str_eq(topic, "%24x");
   bson_free(topic);
}

Test(render, id_other_types_as_canonical_json)
{
   bson_value_t v;
   size_t len;
   char *s;

   v.value_type = BSON_TYPE_DOUBLE;
   v.value.v_double = 1.5;
   s = relay_render_id(&v, &len);
   cr_assert_str_eq(s, "{ \"$numberDouble\" : \"1.5\" }");
   bson_free(s);
}

Test(render, percent_encoding_of_reserved_and_controls)
{
   char *s = encode("a/b+c#d%e", 9);
   cr_assert_str_eq(s, "a%2Fb%2Bc%23d%25e");
   bson_free(s);

   s = encode("x\0y\n\x7f", 5);
   cr_assert_str_eq(s, "x%00y%0A%7F");
   bson_free(s);
}

Test(render, percent_encoding_of_utf8)
{
   /* Valid UTF-8 stays, invalid bytes and C1 controls are encoded. */
   char *s = encode("caf\xc3\xa9", 5);
   cr_assert_str_eq(s, "caf\xc3\xa9");
   bson_free(s);

   s = encode("\xff\xc3", 2);
   cr_assert_str_eq(s, "%FF%C3");
   bson_free(s);

   s = encode("\xc2\x85", 2); /* U+0085 NEXT LINE */
   cr_assert_str_eq(s, "%C2%85");
   bson_free(s);

   s = encode("\xc0\xaf", 2); /* overlong '/' */
   cr_assert_str_eq(s, "%C0%AF");
   bson_free(s);
}

/* Issue 33: non-characters are valid UTF-8 that MQTT 5 (section 1.5.4) lets a broker refuse,
 * and mosquitto drops the connection on one in a topic: they are encoded like controls. */
Test(render, percent_encoding_of_non_characters)
{
   static const struct {
      const char *in, *out;
   } cases[] = {
      {"a\xef\xbf\xbe", "a%EF%BF%BE"},                          /* U+FFFE */
      {"\xef\xbf\xbf", "%EF%BF%BF"},                            /* U+FFFF */
      {"\xef\xb7\x90x", "%EF%B7%90x"},                          /* U+FDD0 */
      {"\xef\xb7\xaf", "%EF%B7%AF"},                            /* U+FDEF */
      {"\xf0\x9f\xbf\xbe", "%F0%9F%BF%BE"},                     /* U+1FFFE */
      {"\xf4\x8f\xbf\xbf", "%F4%8F%BF%BF"},                     /* U+10FFFF */
      {"\xef\xb7\x8f\xef\xb7\xb0", "\xef\xb7\x8f\xef\xb7\xb0"}, /* U+FDCF, U+FDF0 stay */
      {"\xef\xbf\xbd", "\xef\xbf\xbd"},                         /* U+FFFD stays */
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      char *s = encode(cases[i].in, strlen(cases[i].in));
      cr_assert_str_eq(s, cases[i].out, "case %zu", i);
      bson_free(s);
   }
}

Test(render, hostile_ids_stay_in_one_level)
{
   const char *hostile[] = {"../../x", "#", "+", "a/+/#", "%2F", "\x01\x02", "a b"};
   for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
      bson_value_t v;
      char *topic;
      v.value_type = BSON_TYPE_UTF8;
      v.value.v_utf8.str = (char *)hostile[i];
      v.value.v_utf8.len = (uint32_t)strlen(hostile[i]);
      topic = topic_for(&v, "outbox/{collection}/{id}");
      cr_assert_eq(strncmp(topic, "outbox/things/", 14), 0, "topic %s", topic);
      cr_assert_null(strchr(topic + 14, '/'), "id widened the topic: %s", topic);
      cr_assert_null(strchr(topic, '+'), "wildcard in %s", topic);
      cr_assert_null(strchr(topic, '#'), "wildcard in %s", topic);
      bson_free(topic);
   }
}

Test(render, id_with_nul_is_encoded_not_cut)
{
   bson_value_t v;
   char *topic;
   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = "a\0b";
   v.value.v_utf8.len = 3;
   topic = topic_for(&v, "t/{id}");
   cr_assert_str_eq(topic, "t/a%00b");
   bson_free(topic);
}

Test(render, template_placeholders)
{
   bson_value_t v;
   char *topic;
   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = "c7";
   v.value.v_utf8.len = 2;
   topic = topic_for(&v, "{db}/{collection}/{type}/{id}");
   cr_assert_str_eq(topic, "db/things/a.b/c7");
   bson_free(topic);
}

Test(render, template_check)
{
   bson_error_t error;
   cr_assert(relay_template_check("outbox/{collection}/{id}", "topic", true, &error));
   cr_assert(!relay_template_check("", "topic", true, &error));
   cr_assert(!relay_template_check("outbox/+/{id}", "topic", true, &error));
   cr_assert(!relay_template_check("outbox/#", "topic", true, &error));
   cr_assert(!relay_template_check("outbox/{nope}", "topic", true, &error));
   cr_assert_not_null(strstr(error.message, "topic"));
   cr_assert(!relay_template_check("outbox/{id", "topic", true, &error));
   /* A CloudEvents source is a URI-reference: a fragment or a '+' is legal there, so what
    * --check-config accepts for --source, the relay must accept at start too. */
   cr_assert(relay_template_check("/{db}/{collection}#outbox", "source", false, &error));
   cr_assert(relay_template_check("urn:a+b:{db}", "source", false, &error));
   cr_assert(!relay_template_check("/{db}/{nope}", "source", false, &error));
}

Test(render, time_format)
{
   char buf[40];
   relay_format_time(INT64_C(1779444000123), buf, sizeof buf);
   cr_assert_str_eq(buf, "2026-05-22T10:00:00.123Z");
   relay_format_time(-1, buf, sizeof buf);
   cr_assert_str_eq(buf, "1969-12-31T23:59:59.999Z");
}

/* The fast path for years 0001-9999 writes what gmtime_r() gives, at the edges of days,
 * months, leap years, eras and the range, and at a spread of times in between. */
Test(render, time_format_fast_path_matches_gmtime)
{
   static const int64_t edges[] = {INT64_C(-62135596800000),
                                   INT64_C(-62135596799999),
                                   INT64_C(253402300799999),
                                   INT64_C(253402300799000),
                                   0,
                                   -1,
                                   1,
                                   86399999,
                                   86400000,
                                   -86400000,
                                   -86400001,
                                   INT64_C(951782400000) /* 2000-02-29 */,
                                   INT64_C(951868800000) /* 2000-03-01 */,
                                   INT64_C(-2203891200000) /* 1900-03-01 */,
                                   INT64_C(-2203977600000) /* 1900-02-28 */,
                                   INT64_C(-12219292800000) /* 1582-10-15 */,
                                   INT64_C(4107542400000) /* 2100-03-01 */};
   char got[40], want[64];
   for (size_t i = 0; i < sizeof edges / sizeof edges[0] + 200000; i++) {
      int64_t ms = i < sizeof edges / sizeof edges[0]
                      ? edges[i]
                      : INT64_C(-62135596800000) +
                           (int64_t)(i * UINT64_C(1267690498999)) % INT64_C(315538697599999);
      int64_t secs = ms / 1000 - (ms % 1000 < 0 ? 1 : 0);
      int millis = (int)(ms % 1000 < 0 ? ms % 1000 + 1000 : ms % 1000);
      time_t t = (time_t)secs;
      struct tm tm;
      gmtime_r(&t, &tm);
      snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
               tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
      relay_format_time(ms, got, sizeof got);
      cr_assert_str_eq(got, want, "ms %lld", (long long)ms);
   }
}

Test(render, int64_and_encoded_templates)
{
   static const int64_t values[] = {0, 1, -1, 9, 10, 1234567890123, INT64_MAX, INT64_MIN};
   char buf[24], want[24];
   for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
      size_t n = relay_format_int64(values[i], buf);
      snprintf(want, sizeof want, "%lld", (long long)values[i]);
      cr_assert_str_eq(buf, want);
      cr_assert_eq(n, strlen(want));
   }
   /* With values that need no encoding both renderers agree. */
   relay_template_vars_t vars = {
      {"db", 2}, {"orders", 6}, {"o%2F17 x", 8}, {"a.b-c_1", 7}, {"13", 2}};
   static const char *const tmpls[] = {"outbox/{collection}/{id}",
                                       "/{db}/{collection}",
                                       "{type}",
                                       "x{id}{id}y/{db}{type}",
                                       "{db}-",
                                       "lit",
                                       "outbox/{collection}/{partition}/{id}"};
   for (size_t i = 0; i < sizeof tmpls / sizeof tmpls[0]; i++) {
      size_t len;
      char *fast = relay_template_render_encoded(tmpls[i], &vars, &len);
      char *slow = relay_template_render(tmpls[i], &vars);
      char *again = slow;
      if (strstr(tmpls[i], "{id}")) {
         /* the generic renderer encodes '%' once more: compare on the raw id */
         relay_template_vars_t raw = vars;
         raw.id = (relay_str_t){"o/17 x", 6};
         again = relay_template_render(tmpls[i], &raw);
         bson_free(slow);
      }
      cr_assert_str_eq(fast, again, "%s", tmpls[i]);
      cr_assert_eq(len, strlen(fast));
      bson_free(fast);
      bson_free(again);
   }
}

/* {partition} renders the entity's partition number as one topic level; the checker knows it. */
Test(render, partition_placeholder)
{
   relay_template_vars_t vars = {{"db", 2}, {"orders", 6}, {"o-1", 3}, {"T", 1}, {"13", 2}};
   bson_error_t error;
   size_t len;
   char *topic;

   cr_assert(relay_template_check("outbox/{collection}/{partition}/{id}", "--topic", true, &error),
             "%s", error.message);
   topic = relay_template_render_encoded("outbox/{collection}/{partition}/{id}", &vars, &len);
   cr_assert_str_eq(topic, "outbox/orders/13/o-1");
   bson_free(topic);
   topic = relay_template_render("{partition}", &vars);
   cr_assert_str_eq(topic, "13");
   bson_free(topic);
   cr_assert(!relay_template_check("outbox/{partitions}/{id}", "--topic", true, &error));
}

/* The smallest date overflowed in the millisecond computation (found with the fuzz targets in
 * tests/relay/fuzz); the largest is the other end. Neither is RFC 3339 (5+ digit years). */
Test(render, time_format_extremes)
{
   char buf[40];
   relay_format_time(INT64_MIN, buf, sizeof buf);
   cr_assert_eq(strcmp(buf + strlen(buf) - 5, ".192Z"), 0, "%s", buf);
   relay_format_time(INT64_MAX, buf, sizeof buf);
   cr_assert_eq(strcmp(buf + strlen(buf) - 5, ".807Z"), 0, "%s", buf);
}

static bson_value_t *
event_value(const char *json)
{
   static bson_t *doc;
   static bson_value_t v;
   bson_error_t error;
   if (doc) {
      bson_destroy(doc);
   }
   doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(doc, "%s", error.message);
   v.value_type = BSON_TYPE_DOCUMENT;
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   return &v;
}

Test(event, valid_event)
{
   relay_event_t ev;
   bool ok = relay_event_parse(
      event_value("{\"id\": \"e1\", \"seq\": {\"$numberLong\": \"3\"}, \"type\": \"Created\","
                  " \"time\": {\"$date\": \"2026-11-22T10:00:00.5Z\"}, \"data\": {\"n\": 1}}"),
      &ev);
   cr_assert(ok, "%s", ev.reason);
   cr_assert_str_eq(ev.id, "e1");
   cr_assert_eq(ev.seq, 3);
   cr_assert_str_eq(ev.type, "Created");
   cr_assert(ev.has_time);
   relay_event_cleanup(&ev);
}

Test(event, invalid_events_have_reasons)
{
   const char *bad[] = {
      "{\"seq\": 1, \"type\": \"T\", \"data\": {}}",                  /* no id */
      "{\"id\": 5, \"seq\": 1, \"type\": \"T\", \"data\": {}}",       /* id not a string */
      "{\"id\": \"e\", \"type\": \"T\", \"data\": {}}",               /* no seq */
      "{\"id\": \"e\", \"seq\": 0, \"type\": \"T\", \"data\": {}}",   /* seq 0 */
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"a b\", \"data\": {}}", /* bad type */
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": 3}",    /* data not a doc */
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\"}",                 /* no data */
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": {}, \"time\": 1}",
      /* one millisecond before 0001-01-01 and after 9999-12-31: not RFC 3339 */
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": {},"
      " \"time\": {\"$date\": {\"$numberLong\": \"-62135596800001\"}}}",
      "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": {},"
      " \"time\": {\"$date\": {\"$numberLong\": \"253402300800000\"}}}",
      /* an event id MQTT may refuse (it is the event-id user property): U+FFFF, a control */
      "{\"id\": \"e\\uffff\", \"seq\": 1, \"type\": \"T\", \"data\": {}}",
      "{\"id\": \"e\\u0001\", \"seq\": 1, \"type\": \"T\", \"data\": {}}",
   };
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      relay_event_t ev;
      cr_assert(!relay_event_parse(event_value(bad[i]), &ev), "accepted %s", bad[i]);
      cr_assert_not_null(ev.reason);
      relay_event_cleanup(&ev);
   }
}

/* The first and last milliseconds RFC 3339 can write are accepted, as written. */
Test(event, time_range_edges_are_valid)
{
   static const struct {
      const char *ms, *rendered;
   } edges[] = {{"-62135596800000", "0001-01-01T00:00:00.000Z"},
                {"253402300799999", "9999-12-31T23:59:59.999Z"}};
   for (size_t i = 0; i < 2; i++) {
      char json[256], buf[64];
      relay_event_t ev;
      snprintf(json, sizeof json,
               "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": {},"
               " \"time\": {\"$date\": {\"$numberLong\": \"%s\"}}}",
               edges[i].ms);
      cr_assert(relay_event_parse(event_value(json), &ev), "%s: %s", edges[i].ms, ev.reason);
      relay_format_time(ev.time_ms, buf, sizeof buf);
      cr_assert_str_eq(buf, edges[i].rendered);
      relay_event_cleanup(&ev);
   }
}

/* documents.c skips events it has seen by their seq without parsing them: the peeked seq must
 * be the one a full parse reads, for good and bad events alike. */
Test(event, peek_seq_matches_parse)
{
   const char *docs[] = {
      "{\"id\": \"e\", \"seq\": {\"$numberLong\": \"7\"}, \"type\": \"T\", \"data\": {}}",
      "{\"id\": \"e\", \"seq\": 3, \"type\": \"T\", \"data\": {}}", /* int32 */
      "{\"id\": \"e\", \"type\": \"T\", \"data\": {}}",             /* none */
      "{\"id\": \"e\", \"seq\": 0, \"type\": \"T\", \"data\": {}}",
      "{\"id\": \"e\", \"seq\": \"4\", \"type\": \"T\", \"data\": {}}",
      "{\"seq\": 5, \"seq\": 9, \"type\": \"T\", \"data\": 1}", /* first wins, poison */
      "{\"data\": {\"seq\": 8}, \"seq\": 2, \"id\": 5}",
   };
   for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
      relay_event_t ev;
      const bson_value_t *v = event_value(docs[i]);
      int64_t peeked = relay_event_peek_seq(v);
      relay_event_parse(v, &ev);
      cr_assert_eq(peeked, ev.seq, "%s: peeked %lld, parsed %lld", docs[i], (long long)peeked,
                   (long long)ev.seq);
      relay_event_cleanup(&ev);
   }
   bson_value_t junk = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 4};
   cr_assert_eq(relay_event_peek_seq(&junk), 0);
}

Test(event, non_document_is_poison)
{
   bson_value_t v;
   relay_event_t ev;
   v.value_type = BSON_TYPE_UTF8;
   v.value.v_utf8.str = "junk";
   v.value.v_utf8.len = 4;
   cr_assert(!relay_event_parse(&v, &ev));
   cr_assert_str_eq(ev.reason, "event is not a document");
   cr_assert_eq(ev.raw.value_type, BSON_TYPE_UTF8);
   relay_event_cleanup(&ev);
}

Test(event, type_rule)
{
   char longtype[130];
   memset(longtype, 'a', sizeof longtype);
   cr_assert(relay_event_type_valid("Order.Created_v2-x", 18));
   cr_assert(!relay_event_type_valid("", 0));
   cr_assert(relay_event_type_valid(longtype, 128));
   cr_assert(!relay_event_type_valid(longtype, 129));
   cr_assert(!relay_event_type_valid("a/b", 3));
}

Test(cloudevent, structured_payload)
{
   relay_event_t ev;
   bson_error_t error;
   bson_t *parsed;
   bson_iter_t it;
   size_t len;
   char *json;
   relay_str_t subject = {"a\0b", 3};

   cr_assert(relay_event_parse(
      event_value("{\"id\": \"e1\", \"seq\": {\"$numberLong\": \"12\"}, \"type\": \"Created\","
                  " \"time\": {\"$date\": \"2026-11-22T10:00:00.5Z\"},"
                  " \"data\": {\"n\": {\"$numberLong\": \"5\"}, \"s\": \"x\"}}"),
      &ev));
   json = relay_cloudevent_json(&ev, "/db/things", subject, NULL, &len);
   cr_assert_eq(strlen(json), len);
   parsed = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(parsed, "not JSON: %s", json);
   cr_assert(bson_iter_init_find(&it, parsed, "specversion"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "1.0");
   cr_assert(bson_iter_init_find(&it, parsed, "id"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "e1");
   cr_assert(bson_iter_init_find(&it, parsed, "source"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "/db/things");
   cr_assert(bson_iter_init_find(&it, parsed, "subject"));
   {
      uint32_t slen;
      const char *s = bson_iter_utf8(&it, &slen);
      cr_assert_eq(slen, 3);
      cr_assert_eq(memcmp(s, "a\0b", 3), 0);
   }
   cr_assert(bson_iter_init_find(&it, parsed, "time"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "2026-11-22T10:00:00.500Z");
   cr_assert(bson_iter_init_find(&it, parsed, "datacontenttype"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "application/json");
   cr_assert(bson_iter_init_find(&it, parsed, "seq"));
   cr_assert_eq(bson_iter_as_int64(&it), 12);
   /* Relaxed extended JSON: the Int64 in data is a plain number. */
   cr_assert_not_null(strstr(json, "\"n\" : 5"), "%s", json);
   bson_destroy(parsed);
   bson_free(json);
   relay_event_cleanup(&ev);
}

/* The hand-written JSON writer must produce exactly libbson's bytes, for every value it
 * handles itself and (through the fallback) for every other one. */
static void
check_same_json(const char *event_json, relay_str_t subject, const char *source)
{
   relay_event_t ev;
   size_t len, rlen;
   char *json, *ref;

   relay_event_parse(event_value(event_json), &ev);
   cr_assert_not_null(ev.id, "%s", event_json);
   relay_headers_t headers;
   relay_headers_read(&ev, &headers);
   json = relay_cloudevent_json(&ev, source, subject, &headers, &len);
   ref = relay_cloudevent_json_reference(&ev, source, subject, &headers, &rlen);
   cr_assert_not_null(json);
   cr_assert_not_null(ref);
   cr_assert_eq(len, rlen, "length %zu != %zu:\n%s\n%s", len, rlen, json, ref);
   cr_assert_eq(strlen(json), len);
   cr_assert_str_eq(json, ref);
   bson_free(json);
   bson_free(ref);
   {
      bson_t empty = BSON_INITIALIZER;
      char *a = relay_data_json(&ev, &len);
      char *b = bson_as_relaxed_extended_json(ev.data ? ev.data : &empty, &rlen);
      cr_assert_eq(len, rlen);
      cr_assert_str_eq(a, b);
      bson_free(a);
      bson_free(b);
   }
   relay_event_cleanup(&ev);
}

Test(cloudevent, fast_json_matches_libbson)
{
   static const char *const events[] = {
      "{\"id\": \"e1\", \"seq\": 1, \"type\": \"T\", \"data\": {}}",
      "{\"id\": \"e1\", \"seq\": 1, \"type\": \"T\", \"data\": {\"n\": 1, \"pad\": \"xxxx\"}}",
      "{\"id\": \"e\\\"1\\\\\", \"seq\": {\"$numberLong\": \"9223372036854775807\"}, \"type\": "
      "\"a.b-c_d\", \"time\": {\"$date\": \"1960-01-01T00:00:00.001Z\"}, \"data\": {\"a\": "
      "{\"$numberLong\": \"-9223372036854775808\"}, \"b\": -2147483648, \"c\": true, \"d\": "
      "false, \"e\": null, \"f\": {}, \"g\": [], \"h\": [1, \"x\", [[]], {\"z\": {}}]}}",
      "{\"id\": \"\\u00e9\\u20ac\\ud83d\\ude00\", \"seq\": 2, \"type\": \"T\", \"data\": "
      "{\"k\\\"\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f/\": \"\\u0080\\u00a0\\u0000end\"}}",
      /* Types the fast path leaves to libbson. */
      "{\"id\": \"e\", \"seq\": 3, \"type\": \"T\", \"data\": {\"x\": 1.5}}",
      "{\"id\": \"e\", \"seq\": 3, \"type\": \"T\", \"data\": {\"d\": {\"$date\": "
      "\"2026-11-22T10:00:00Z\"}, \"o\": {\"$oid\": \"0123456789abcdef01234567\"}}}",
      "{\"id\": \"e\", \"seq\": 3, \"type\": \"T\", \"data\": {\"a\": [{\"b\": "
      "{\"$numberDecimal\": \"1.1\"}}]}}",
      "{\"id\": \"e\", \"seq\": 3, \"type\": \"T\", \"data\": {\"b\": {\"$binary\": "
      "{\"base64\": \"AAEC\", \"subType\": \"04\"}}}}",
      /* Headers that are extension attributes, with values to escape; data via libbson. */
      "{\"id\": \"e\", \"seq\": 4, \"type\": \"T\", \"headers\": {\"tenant\": "
      "\"a\\\"c\\\\me\\u00e9\", \"X-Other\": \"y\"}, \"data\": {\"n\": 1}}",
      "{\"id\": \"e\", \"seq\": 4, \"type\": \"T\", \"headers\": {\"tenant\": \"a\"}, "
      "\"data\": {\"x\": 1.5}}",
   };
   relay_str_t subjects[] = {{"a\0b", 3}, {"", 0}, {"x\"y\x01\xc3\xa9", 6}, {NULL, 0}};

   for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
      for (size_t k = 0; k < sizeof subjects / sizeof subjects[0]; k++) {
         check_same_json(events[i], subjects[k], k == 2 ? "/d\\b/\"c\"" : "/db/things");
      }
   }
}

/* The writer copies runs of 8 plain bytes at once: every character that needs escaping or
 * decoding must still be seen at every offset within and across such runs. */
Test(cloudevent, escapes_at_every_offset)
{
   static const char *const specials[] = {
      "\"", "\\", "\x01", "\x1f", "\x7f", " ", "~", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
      "\n"};
   relay_str_t subject = {"s", 1};

   for (size_t k = 0; k < sizeof specials / sizeof specials[0]; k++) {
      for (size_t pos = 0; pos < 24; pos++) {
         char str[40], json[160];
         memset(str, 'a', 24);
         str[24] = '\0';
         memcpy(str + pos, specials[k], strlen(specials[k]));
         str[pos + strlen(specials[k]) > 24 ? pos + strlen(specials[k]) : 24] = '\0';
         bson_t *data = BCON_NEW("s", BCON_UTF8(str));
         char *data_json = bson_as_canonical_extended_json(data, NULL);
         snprintf(json, sizeof json, "{\"id\": \"e\", \"seq\": 1, \"type\": \"T\", \"data\": %s}",
                  data_json);
         check_same_json(json, subject, "/db/things");
         bson_free(data_json);
         bson_destroy(data);
      }
   }
}

/* Parses an event with raw @bytes in @where: the id, a data value, a nested value, a key. */
static void
parse_with_bytes(const char *where, const char *bytes, relay_event_t *ev)
{
   bson_t doc = BSON_INITIALIZER, data, inner;
   bson_value_t v;
   bool in_id = !strcmp(where, "id");
   bson_append_utf8(&doc, "id", 2, in_id ? bytes : "e1", -1);
   BSON_APPEND_INT64(&doc, "seq", 1);
   BSON_APPEND_UTF8(&doc, "type", "T");
   BSON_APPEND_DOCUMENT_BEGIN(&doc, "data", &data);
   if (!strcmp(where, "data")) {
      bson_append_utf8(&data, "text", 4, bytes, -1);
   } else if (!strcmp(where, "nested")) {
      BSON_APPEND_ARRAY_BEGIN(&data, "list", &inner);
      bson_append_utf8(&inner, "0", 1, bytes, -1);
      bson_append_array_end(&data, &inner);
   } else if (!strcmp(where, "key")) {
      bson_append_utf8(&data, bytes, -1, "v", -1);
   }
   bson_append_document_end(&doc, &data);
   v.value_type = BSON_TYPE_DOCUMENT;
   v.value.v_doc.data = (uint8_t *)bson_get_data(&doc);
   v.value.v_doc.data_len = doc.len;
   relay_event_parse(&v, ev);
   bson_destroy(&doc);
}

/* F5 (chaos invalid_utf8): data holding "\xc3\x28\xff" passed the check (libbson 1.23's
 * bson_validate(BSON_VALIDATE_UTF8) let it through), then JSON encoding failed and the
 * event went out with an empty payload and was cleared. Such an event is poison. */
Test(event, invalid_utf8_is_poison)
{
   static const char *const where[] = {"id", "data", "nested", "key"};
   for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
      relay_event_t ev;
      parse_with_bytes(where[i], "bad\xc3\x28\xff", &ev);
      cr_assert_not_null(ev.reason, "invalid UTF-8 in %s accepted", where[i]);
      cr_assert(strstr(ev.reason, "UTF-8"), "%s: reason %s", where[i], ev.reason);
      relay_event_cleanup(&ev);
   }
   for (size_t i = 0; i < sizeof where / sizeof where[0]; i++) {
      relay_event_t ev;
      parse_with_bytes(where[i], "caf\xc3\xa9 \xe2\x82\xac", &ev); /* valid: accepted */
      cr_assert_null(ev.reason, "valid UTF-8 in %s refused: %s", where[i], ev.reason);
      relay_event_cleanup(&ev);
   }
}
