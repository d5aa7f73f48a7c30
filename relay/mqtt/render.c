/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The parts of render.h that are not the JSON payload (cloudevent.c): entity ids, percent-
 * encoding, topic and source templates, times. Pure functions: safe from any thread.
 */
#include "mqtt/render.h"
#include "util/error.h"

#include "utf8-private.h" /* liboutbox: the contract's MQTT text rule */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Canonical extended JSON of one value: wrap it in {"v": value} and cut out the value, so
 * every BSON type renders the way every MongoDB tool shows it. libbson gives up on invalid
 * UTF-8 inside a value: that one is shown as { "$bsonHex" : "<its BSON bytes>" }, which no
 * other value renders as, rather than as nothing. */
static char *
render_ext_json(const bson_value_t *id, size_t *len)
{
   bson_t doc = BSON_INITIALIZER;
   char *json, *out;
   const char *start;
   size_t jlen, n;

   bson_append_value(&doc, "v", 1, id);
   json = bson_as_canonical_extended_json(&doc, &jlen);
   /* libbson writes '{ "v" : <value> }'. */
   start = json ? strstr(json, " : ") : NULL;
   if (!start || jlen < 2) {
      bson_string_t *hex = bson_string_new("{ \"$bsonHex\" : \"");
      const uint8_t *data = bson_get_data(&doc);
      for (uint32_t i = 4; i + 1 < doc.len; i++) { /* past the length, before the end byte */
         bson_string_append_printf(hex, "%02x", data[i]);
      }
      bson_string_append(hex, "\" }");
      bson_destroy(&doc);
      bson_free(json);
      *len = hex->len;
      return bson_string_free(hex, false);
   }
   bson_destroy(&doc);
   start += 3;
   n = (size_t)(json + jlen - start);
   n = n >= 2 ? n - 2 : 0; /* drop " }" */
   out = bson_strndup(start, n);
   bson_free(json);
   *len = n;
   return out;
}

/* @s in double quotes with '"' and '\\' escaped by a backslash: what JSON makes of a string,
 * except that other bytes (controls, NUL, invalid UTF-8) stay as they are, for the topic's
 * percent-encoding and the payload's JSON escaping to deal with, as for any string id. */
static char *
quote(const char *s, size_t len, size_t *out_len)
{
   char *out = bson_malloc(2 * len + 3);
   size_t n = 0;
   out[n++] = '"';
   for (size_t i = 0; i < len; i++) {
      if (s[i] == '"' || s[i] == '\\') {
         out[n++] = '\\';
      }
      out[n++] = s[i];
   }
   out[n++] = '"';
   out[n] = '\0';
   *out_len = n;
   return out;
}

/* True if @s is an optional '-' and one or more decimal digits: what an int32 or int64 id
 * renders as. */
static bool
is_decimal(const char *s, size_t len)
{
   size_t i = (len > 0 && s[0] == '-') ? 1 : 0;
   if (i == len) {
      return false;
   }
   for (; i < len; i++) {
      if (s[i] < '0' || s[i] > '9') {
         return false;
      }
   }
   return true;
}

/* True if a string id shown as itself could be taken for another id's rendering: the empty
 * string (an empty topic level, a "subject" CloudEvents forbids), a decimal integer (int32
 * and int64 ids render in decimal), and what starts like canonical extended JSON (every
 * other type but strings and ObjectIds renders as that: '{', '[', null, true, false) or like
 * a quoted string ('"'). Not 24 hex digits: writers that store
 * an ObjectId's hex as a string id (the Python example does) and consumers that read it back
 * as one (the C example does) rely on both showing the same, so an ObjectId and the string
 * of its hex digits are the one pair that renders alike (render.h). */
static bool
string_id_is_ambiguous(const char *s, size_t len)
{
   return len == 0 || s[0] == '"' || s[0] == '{' || s[0] == '[' || is_decimal(s, len) ||
          (len == 4 && (!memcmp(s, "null", 4) || !memcmp(s, "true", 4))) ||
          (len == 5 && !memcmp(s, "false", 5));
}

char *
relay_render_id(const bson_value_t *id, size_t *len)
{
   char buf[32];
   char *out;

   switch (id->value_type) {
   case BSON_TYPE_UTF8:
      if (string_id_is_ambiguous(id->value.v_utf8.str, id->value.v_utf8.len)) {
         return quote(id->value.v_utf8.str, id->value.v_utf8.len, len);
      }
      /* bson_strndup would stop at an embedded NUL: copy the bytes. */
      out = bson_malloc(id->value.v_utf8.len + 1u);
      memcpy(out, id->value.v_utf8.str, id->value.v_utf8.len);
      out[id->value.v_utf8.len] = '\0';
      *len = id->value.v_utf8.len;
      return out;
   case BSON_TYPE_OID:
      bson_oid_to_string(&id->value.v_oid, buf);
      *len = 24;
      return bson_strdup(buf);
   case BSON_TYPE_INT32:
      /* Integers stay in decimal (topics like outbox/orders/42); the string "42" is the one
       * quoted instead (issue 29). NumberInt(5) and NumberLong(5) are one _id to MongoDB, so
       * a collection never holds both. */
      *len = (size_t)bson_snprintf(buf, sizeof buf, "%" PRId32, id->value.v_int32);
      return bson_strdup(buf);
   case BSON_TYPE_INT64:
      *len = (size_t)bson_snprintf(buf, sizeof buf, "%" PRId64, id->value.v_int64);
      return bson_strdup(buf);
   default:
      return render_ext_json(id, len);
   }
}

/* bson_string_append() for @n bytes that need not end in NUL (libbson 1.23 has no such
 * function; bson_string_t's fields are public and its buffer is bson_malloc'ed). */
static void
append_len(bson_string_t *out, const char *s, size_t n)
{
   if ((size_t)out->len + n + 1 > out->alloc) {
      size_t cap = out->alloc ? out->alloc : 16;
      while (cap < (size_t)out->len + n + 1) {
         cap *= 2;
      }
      out->str = bson_realloc(out->str, cap);
      out->alloc = (uint32_t)cap;
   }
   memcpy(out->str + out->len, s, n);
   out->len += (uint32_t)n;
   out->str[out->len] = '\0';
}

/* Printable ASCII that stays as it is in a topic level. */
static bool
topic_safe(unsigned char c)
{
   return c >= 0x20 && c < 0x7F && c != '/' && c != '+' && c != '#' && c != '%';
}

void
relay_percent_encode(bson_string_t *out, const char *s, size_t len)
{
   const unsigned char *u = (const unsigned char *)s;
   size_t i = 0;

   /* A topic that begins with '$' is the broker's ($SYS/...) and cannot be published to: an
    * {id} at the start of --topic would make one. Encoded wherever the value goes, so an id
    * has one encoded form. */
   if (len > 0 && s[0] == '$') {
      append_len(out, "%24", 3);
      i = 1;
   }

   while (i < len) {
      size_t run = i;
      /* Runs of characters that stay go in at once (ids are mostly such runs). */
      while (run < len && topic_safe(u[run])) {
         run++;
      }
      if (run > i) {
         append_len(out, s + i, run - i);
         i = run;
         continue;
      }
      if (u[i] >= 0x80) {
         /* The contract's MQTT text rule (outbox/contract.h): a character MQTT may refuse
          * (a C1 control, a non-character) or invalid UTF-8 is encoded byte by byte, so the
          * broker never sees it. */
         size_t n = _outbox_mqtt_char_len(s + i, len - i);
         if (n) {
            append_len(out, s + i, n);
            i += n;
            continue;
         }
      }
      char esc[4] = {'%', "0123456789ABCDEF"[u[i] >> 4], "0123456789ABCDEF"[u[i] & 0xF], 0};
      append_len(out, esc, 3);
      i++;
   }
}

/* Matches a placeholder at @p ("{name}"); returns its length or 0. */
static size_t
placeholder(const char *p, const relay_template_vars_t *vars, relay_str_t *value)
{
   static const char *const names[] = {"{db}", "{collection}", "{id}", "{type}", "{partition}"};
   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      size_t n = strlen(names[i]);
      if (!strncmp(p, names[i], n)) {
         if (vars && value) {
            const relay_str_t *all[] = {&vars->db, &vars->collection, &vars->id, &vars->type,
                                        &vars->partition};
            *value = *all[i];
         }
         return n;
      }
   }
   return 0;
}

bool
relay_template_check(const char *tmpl, const char *what, bool topic, bson_error_t *error)
{
   if (!tmpl || !*tmpl) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: the template is empty",
                     what);
      return false;
   }
   for (const char *p = tmpl; *p;) {
      size_t n = *p == '{' ? placeholder(p, NULL, NULL) : 0;
      if (n) {
         p += n;
         continue;
      }
      if (*p == '{' || *p == '}') {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: unknown placeholder at '%s' (use {db}, {collection}, {id}, {type}, "
                        "{partition})",
                        what, p);
         return false;
      }
      if (topic && (*p == '+' || *p == '#')) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: MQTT wildcard '%c' in the template", what, *p);
         return false;
      }
      p++;
   }
   return true;
}

char *
relay_template_render(const char *tmpl, const relay_template_vars_t *vars)
{
   bson_string_t *out = bson_string_new(NULL);

   for (const char *p = tmpl; *p;) {
      relay_str_t value = {NULL, 0};
      size_t n = *p == '{' ? placeholder(p, vars, &value) : 0;
      if (n) {
         if (value.str) {
            relay_percent_encode(out, value.str, value.len);
         }
         p += n;
      } else {
         const char *brace = strchr(p + 1, '{');
         size_t lit = brace ? (size_t)(brace - p) : strlen(p);
         append_len(out, p, lit);
         p += lit;
      }
   }
   return bson_string_free(out, false);
}

/* One pass for the length, one to fill: the values need no encoding. */
char *
relay_template_render_encoded(const char *tmpl, const relay_template_vars_t *vars, size_t *len)
{
   size_t total = 0, at = 0;
   char *out;

   for (int pass = 0; pass < 2; pass++) {
      for (const char *p = tmpl; *p;) {
         relay_str_t value = {NULL, 0};
         size_t n = *p == '{' ? placeholder(p, vars, &value) : 0;
         const char *from = value.str;
         size_t count = value.str ? value.len : 0;
         if (!n) {
            const char *brace = strchr(p + 1, '{');
            n = count = brace ? (size_t)(brace - p) : strlen(p);
            from = p;
         }
         if (pass) {
            memcpy(out + at, from, count);
            at += count;
         } else {
            total += count;
         }
         p += n;
      }
      if (!pass) {
         out = bson_malloc(total + 1);
      }
   }
   out[total] = '\0';
   *len = total;
   return out;
}

size_t
relay_format_int64(int64_t v, char *buf)
{
   char tmp[24];
   size_t n = 0, i = 0;
   uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

   do {
      tmp[n++] = (char)('0' + u % 10);
      u /= 10;
   } while (u);
   if (v < 0) {
      buf[i++] = '-';
   }
   while (n) {
      buf[i++] = tmp[--n];
   }
   buf[i] = '\0';
   return i;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian), for years 1..9999: the
 * well-known era arithmetic (400-year cycles of 146097 days, March-based years). */
static void
civil_from_days(int64_t days, int *y, int *m, int *d)
{
   int64_t z = days + 719468;
   int64_t era = (z >= 0 ? z : z - 146096) / 146097;
   int64_t doe = z - era * 146097;                                      /* 0..146096 */
   int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* 0..399 */
   int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* 0..365 */
   int64_t mp = (5 * doy + 2) / 153;                                    /* 0..11, from March */

   *d = (int)(doy - (153 * mp + 2) / 5 + 1);
   *m = (int)(mp < 10 ? mp + 3 : mp - 9);
   *y = (int)(yoe + era * 400 + (*m <= 2));
}

static void
digits(char *p, int v, int n)
{
   while (n--) {
      p[n] = (char)('0' + v % 10);
      v /= 10;
   }
}

void
relay_format_time(int64_t ms, char *buf, size_t size)
{
   /* RFC 3339's years 0001-9999 (all an event's time may hold) without gmtime_r() and
    * snprintf(), which were a fifth of the relay's rendering. */
   if (size >= 25 && ms >= INT64_C(-62135596800000) && ms <= INT64_C(253402300799999)) {
      int64_t days = (ms >= 0 ? ms : ms - 86399999) / 86400000;
      int64_t in_day = ms - days * 86400000;
      int y, mo, d;
      civil_from_days(days, &y, &mo, &d);
      memcpy(buf, "0000-00-00T00:00:00.000Z", 25);
      digits(buf, y, 4);
      digits(buf + 5, mo, 2);
      digits(buf + 8, d, 2);
      digits(buf + 11, (int)(in_day / 3600000), 2);
      digits(buf + 14, (int)(in_day / 60000 % 60), 2);
      digits(buf + 17, (int)(in_day / 1000 % 60), 2);
      digits(buf + 20, (int)(in_day % 1000), 3);
      return;
   }
   /* Floor division, so times before 1970 keep a millisecond part in 0..999. The part comes
    * from the remainder: secs * 1000 overflows for the smallest dates (found with the fuzz
    * targets). */
   int64_t secs = ms / 1000 - (ms % 1000 < 0 ? 1 : 0);
   int millis = (int)(ms % 1000 < 0 ? ms % 1000 + 1000 : ms % 1000);
   time_t t = (time_t)secs;
   struct tm tm;

   gmtime_r(&t, &tm);
   bson_snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}
