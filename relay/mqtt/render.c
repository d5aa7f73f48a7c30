/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The parts of render.h that are not the JSON payload (cloudevent.c): entity ids, percent-
 * encoding, topic and source templates, times. Pure functions: safe from any thread.
 */
#include "mqtt/render.h"

#include "utf8-private.h" /* liboutbox: the contract's MQTT text rule */
#include "util/error.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
