/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * libFuzzer target: a stored document as the relay reads it (BSON) is checked against the
 * event contract (event.c) and every event in it that passes is rendered as the relay
 * publishes it (render.c): topic, entity-id property, structured and binary payloads.
 * The input is BSON, or extended JSON when it starts with '{'. Invariants checked (abort() on
 * violation, so libFuzzer keeps the input):
 *  - a topic holds no '+', '#', NUL or control character, is valid UTF-8, and substituted
 *    values add no level ('/' only where the template has one);
 *  - percent-encoding decodes back to the rendered entity id;
 *  - the fast JSON writer produces exactly the bytes of libbson's (the reference), and
 *    fails exactly when libbson fails; every payload produced is valid JSON;
 *  - the "time" attribute of an event from year 0001 to 9999 is RFC 3339.
 * Build and run: see README.md in this directory.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/event.h"
#include "mqtt/render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
   do {                                                                                            \
      if (!(cond)) {                                                                               \
         fprintf(stderr, "fuzz-event: invariant failed: %s (line %d)\n", #cond, __LINE__);         \
         abort();                                                                                  \
      }                                                                                            \
   } while (0)

/* A small RFC 8259 checker: one value, optional whitespace around it. */
typedef struct {
   const char *p, *end;
   int depth;
} json_t;

static bool json_value(json_t *j);

static void
json_ws(json_t *j)
{
   while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) {
      j->p++;
   }
}

static bool
json_lit(json_t *j, const char *lit)
{
   size_t n = strlen(lit);
   if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0) {
      return false;
   }
   j->p += n;
   return true;
}

static bool
json_string(json_t *j)
{
   if (j->p >= j->end || *j->p != '"') {
      return false;
   }
   j->p++;
   while (j->p < j->end) {
      unsigned char c = (unsigned char)*j->p++;
      if (c == '"') {
         return true;
      }
      if (c < 0x20) {
         return false;
      }
      if (c == '\\') {
         if (j->p >= j->end) {
            return false;
         }
         c = (unsigned char)*j->p++;
         if (c == 'u') {
            for (int i = 0; i < 4; i++) {
               if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p) {
                  return false;
               }
               j->p++;
            }
         } else if (!strchr("\"\\/bfnrt", c) || !c) {
            return false;
         }
      }
   }
   return false;
}

static bool
json_digits(json_t *j)
{
   const char *start = j->p;
   while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
      j->p++;
   }
   return j->p > start;
}

static bool
json_number(json_t *j)
{
   if (j->p < j->end && *j->p == '-') {
      j->p++;
   }
   if (j->p < j->end && *j->p == '0') {
      j->p++;
   } else if (!json_digits(j)) {
      return false;
   }
   if (j->p < j->end && *j->p == '.') {
      j->p++;
      if (!json_digits(j)) {
         return false;
      }
   }
   if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
      j->p++;
      if (j->p < j->end && (*j->p == '+' || *j->p == '-')) {
         j->p++;
      }
      if (!json_digits(j)) {
         return false;
      }
   }
   return true;
}

static bool
json_container(json_t *j, char close)
{
   j->p++;
   json_ws(j);
   if (j->p < j->end && *j->p == close) {
      j->p++;
      return true;
   }
   for (;;) {
      json_ws(j);
      if (close == '}') {
         if (!json_string(j)) {
            return false;
         }
         json_ws(j);
         if (j->p >= j->end || *j->p++ != ':') {
            return false;
         }
      }
      if (!json_value(j)) {
         return false;
      }
      json_ws(j);
      if (j->p >= j->end) {
         return false;
      }
      char c = *j->p++;
      if (c == close) {
         return true;
      }
      if (c != ',') {
         return false;
      }
   }
}

static bool
json_value(json_t *j)
{
   bool ok;
   json_ws(j);
   if (j->p >= j->end || ++j->depth > 1000) {
      return false;
   }
   switch (*j->p) {
   case '{':
      ok = json_container(j, '}');
      break;
   case '[':
      ok = json_container(j, ']');
      break;
   case '"':
      ok = json_string(j);
      break;
   case 't':
      ok = json_lit(j, "true");
      break;
   case 'f':
      ok = json_lit(j, "false");
      break;
   case 'n':
      ok = json_lit(j, "null");
      break;
   default:
      ok = json_number(j);
   }
   j->depth--;
   return ok;
}

static bool
json_valid(const char *s, size_t len)
{
   json_t j = {s, s + len, 0};
   if (strlen(s) != len || !bson_utf8_validate(s, len, false) || !json_value(&j)) {
      return false;
   }
   json_ws(&j);
   return j.p == j.end;
}

static size_t
count_char(const char *s, char c)
{
   size_t n = 0;
   for (; *s; s++) {
      n += *s == c;
   }
   return n;
}

static void
check_topic(const char *tmpl, const relay_template_vars_t *vars)
{
   char *topic = relay_template_render(tmpl, vars);
   size_t len = strlen(topic);
   CHECK(bson_utf8_validate(topic, len, false));
   CHECK(!strpbrk(topic, "+#"));
   for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char)topic[i];
      CHECK(c >= 0x20 && c != 0x7F);
   }
   /* Every '/' comes from the template: no value adds a level. */
   CHECK(count_char(topic, '/') == count_char(tmpl, '/'));
   /* The relay's path: values encoded once beforehand, then concatenated. */
   char *enc[4];
   const relay_str_t *in[4] = {&vars->db, &vars->collection, &vars->id, &vars->type};
   for (int i = 0; i < 4; i++) {
      bson_string_t *s = bson_string_new(NULL);
      relay_percent_encode(s, in[i]->str, in[i]->len);
      enc[i] = bson_string_free(s, false);
   }
   relay_template_vars_t encoded = {{enc[0], strlen(enc[0])},
                                    {enc[1], strlen(enc[1])},
                                    {enc[2], strlen(enc[2])},
                                    {enc[3], strlen(enc[3])},
                                    vars->partition};
   size_t fast_len;
   char *fast = relay_template_render_encoded(tmpl, &encoded, &fast_len);
   CHECK(fast_len == len && !memcmp(fast, topic, len));
   bson_free(fast);
   for (int i = 0; i < 4; i++) {
      bson_free(enc[i]);
   }
   bson_free(topic);
}

static int
hexval(char c)
{
   return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The entity-id user property: one topic level, and it decodes back to the id. */
static void
check_percent(const char *s, size_t len)
{
   bson_string_t *enc = bson_string_new(NULL);
   relay_percent_encode(enc, s, len);
   CHECK(strlen(enc->str) == enc->len);
   CHECK(bson_utf8_validate(enc->str, enc->len, false));
   CHECK(!strpbrk(enc->str, "/+#"));
   char *dec = bson_malloc(enc->len + 1);
   size_t n = 0;
   for (size_t i = 0; i < enc->len; i++) {
      if (enc->str[i] == '%') {
         CHECK(i + 2 < enc->len && hexval(enc->str[i + 1]) >= 0 && hexval(enc->str[i + 2]) >= 0);
         dec[n++] = (char)(hexval(enc->str[i + 1]) * 16 + hexval(enc->str[i + 2]));
         i += 2;
      } else {
         dec[n++] = enc->str[i];
      }
   }
   CHECK(n == len && memcmp(dec, s, len) == 0);
   bson_free(dec);
   bson_string_free(enc, true);
}

static void
check_time(const relay_event_t *ev)
{
   char buf[40];
   if (!ev->has_time) {
      return;
   }
   relay_format_time(ev->time_ms, buf, sizeof buf);
   CHECK(strlen(buf) < 32);
   /* 0001-01-01T00:00:00.000Z .. 9999-12-31T23:59:59.999Z */
   if (ev->time_ms >= -62135596800000LL && ev->time_ms <= 253402300799999LL) {
      static const char pat[] = "dddd-dd-ddTdd:dd:dd.dddZ";
      CHECK(strlen(buf) == sizeof pat - 1);
      for (size_t i = 0; i < sizeof pat - 1; i++) {
         CHECK(pat[i] == 'd' ? (buf[i] >= '0' && buf[i] <= '9') : buf[i] == pat[i]);
      }
   }
}

static void
check_payloads(const relay_event_t *ev, relay_str_t subject)
{
   const char *source = "/db/coll";
   size_t flen = 0, rlen = 0;
   relay_headers_t headers;
   relay_headers_read(ev, &headers);
   char *fast = relay_cloudevent_json(ev, source, subject, &headers, &flen);
   char *ref = relay_cloudevent_json_reference(ev, source, subject, &headers, &rlen);

   /* The fast writer falls back to libbson, so both fail or both give the same bytes. */
   CHECK((fast == NULL) == (ref == NULL));
   if (fast) {
      CHECK(flen == rlen && memcmp(fast, ref, flen) == 0);
      CHECK(json_valid(fast, flen));
   }
   bson_free(fast);
   bson_free(ref);

   fast = relay_data_json(ev, &flen);
   if (ev->data && !bson_empty(ev->data)) {
      ref = bson_as_relaxed_extended_json(ev->data, &rlen);
      CHECK((fast == NULL) == (ref == NULL));
      if (fast) {
         CHECK(flen == rlen && memcmp(fast, ref, flen) == 0);
      }
      bson_free(ref);
   }
   if (fast) {
      CHECK(json_valid(fast, flen));
   }
   bson_free(fast);
}

static void
check_event(const bson_value_t *elem, const bson_value_t *id)
{
   relay_event_t ev;
   size_t id_len = 0;

   if (!relay_event_parse(elem, &ev)) {
      CHECK(ev.reason != NULL);
      relay_event_cleanup(&ev);
      return;
   }
   CHECK(ev.id && ev.type && ev.data && ev.seq >= 1);
   char *rendered = relay_render_id(id, &id_len);
   CHECK(rendered[id_len] == '\0');
   relay_template_vars_t vars = {
      {"db", 2}, {"coll", 4}, {rendered, id_len}, {ev.type, strlen(ev.type)}, {"31", 2}};
   check_topic("outbox/{collection}/{id}", &vars);
   check_topic("outbox/{collection}/{partition}/{id}", &vars);
   check_topic("{db}/{type}/{id}{id}", &vars);
   check_percent(rendered, id_len);
   check_time(&ev);
   check_payloads(&ev, (relay_str_t){rendered, id_len});
   bson_free(rendered);
   relay_event_cleanup(&ev);
   relay_event_cleanup(&ev); /* documented as safe on a cleaned event */
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
   bson_t doc;
   bson_iter_t it, arr;
   bson_value_t whole, default_id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};
   const bson_value_t *id = &default_id;

   /* Input starting with '{' is extended JSON (mutations of JSON reach far more
    * interesting documents than mutations of BSON's length-prefixed bytes); anything else is
    * BSON. The server only stores valid BSON: what libbson itself rejects is not our input. */
   if (size > 0 && data[0] == '{') {
      bson_t *parsed = bson_new_from_json(data, (ssize_t)size, NULL);
      if (parsed) {
         LLVMFuzzerTestOneInput(bson_get_data(parsed), parsed->len);
         bson_destroy(parsed);
      }
      return 0;
   }
   if (!bson_init_static(&doc, data, size) || !bson_validate(&doc, BSON_VALIDATE_NONE, NULL)) {
      return 0;
   }
   if (bson_iter_init_find(&it, &doc, "_id")) {
      id = bson_iter_value(&it);
   }
   if (bson_iter_init_find(&it, &doc, "events") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &arr)) {
      /* A stored document: every element of its events array, as stream/documents.c offers them. */
      while (bson_iter_next(&arr)) {
         check_event(bson_iter_value(&arr), id);
      }
   } else {
      /* A single event. */
      whole.value_type = BSON_TYPE_DOCUMENT;
      whole.value.v_doc.data = (uint8_t *)data;
      whole.value.v_doc.data_len = (uint32_t)size;
      check_event(&whole, id);
   }
   return 0;
}
