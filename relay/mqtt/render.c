/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The parts of render.h that are not the JSON payload (cloudevent.c): entity ids, percent-
 * encoding, topic and source templates, times. Pure functions: safe from any thread.
 */
#include "mqtt/render.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Canonical extended JSON of one value: wrap it in {"v": value} and cut out the value, so
 * every BSON type renders the way every MongoDB tool shows it. */
static char *
render_ext_json(const bson_value_t *id, size_t *len)
{
   bson_t doc = BSON_INITIALIZER;
   char *json, *out;
   const char *start;
   size_t jlen, n;

   bson_append_value(&doc, "v", 1, id);
   json = bson_as_canonical_extended_json(&doc, &jlen);
   bson_destroy(&doc);
   /* libbson writes '{ "v" : <value> }'. */
   start = json ? strstr(json, " : ") : NULL;
   if (!start || jlen < 2) {
      bson_free(json);
      *len = 0;
      return bson_strdup("");
   }
   start += 3;
   n = (size_t)(json + jlen - start);
   n = n >= 2 ? n - 2 : 0; /* drop " }" */
   out = bson_strndup(start, n);
   bson_free(json);
   *len = n;
   return out;
}

char *
relay_render_id(const bson_value_t *id, size_t *len)
{
   char buf[32];
   char *out;

   switch (id->value_type) {
   case BSON_TYPE_UTF8:
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
      *len = (size_t)bson_snprintf(buf, sizeof buf, "%" PRId32, id->value.v_int32);
      return bson_strdup(buf);
   case BSON_TYPE_INT64:
      *len = (size_t)bson_snprintf(buf, sizeof buf, "%" PRId64, id->value.v_int64);
      return bson_strdup(buf);
   default:
      return render_ext_json(id, len);
   }
}

/* Length of the valid UTF-8 sequence at @s (1..4), or 0 if invalid or a C1 control
 * (U+0080..U+009F): those are as invisible and dangerous as ASCII controls. */
static size_t
utf8_seq_len(const unsigned char *s, size_t avail)
{
   size_t n;
   uint32_t cp;

   if (s[0] >= 0xC2 && s[0] <= 0xDF) {
      n = 2;
      cp = s[0] & 0x1Fu;
   } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
      n = 3;
      cp = s[0] & 0x0Fu;
   } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
      n = 4;
      cp = s[0] & 0x07u;
   } else {
      return 0;
   }
   if (n > avail) {
      return 0;
   }
   for (size_t i = 1; i < n; i++) {
      if ((s[i] & 0xC0) != 0x80) {
         return 0;
      }
      cp = (cp << 6) | (s[i] & 0x3Fu);
   }
   /* Overlong forms, surrogates, beyond U+10FFFF, C1 controls. */
   if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
       (cp >= 0xD800 && cp <= 0xDFFF) || cp < 0xA0) {
      return 0;
   }
   return n;
}

void
relay_percent_encode(bson_string_t *out, const char *s, size_t len)
{
   const unsigned char *u = (const unsigned char *)s;
   size_t i = 0;

   while (i < len) {
      unsigned char c = u[i];
      if (c >= 0x80) {
         size_t n = utf8_seq_len(u + i, len - i);
         if (n) {
            for (size_t k = 0; k < n; k++) {
               bson_string_append_c(out, (char)u[i + k]);
            }
            i += n;
            continue;
         }
      } else if (c >= 0x20 && c != 0x7F && c != '/' && c != '+' && c != '#' && c != '%') {
         bson_string_append_c(out, (char)c);
         i++;
         continue;
      }
      bson_string_append_printf(out, "%%%02X", (unsigned)c);
      i++;
   }
}

/* Matches a placeholder at @p ("{name}"); returns its length or 0. */
static size_t
placeholder(const char *p, const relay_template_vars_t *vars, relay_str_t *value)
{
   static const char *const names[] = {"{db}", "{collection}", "{id}", "{type}"};
   for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
      size_t n = strlen(names[i]);
      if (!strncmp(p, names[i], n)) {
         if (vars && value) {
            const relay_str_t *all[] = {&vars->db, &vars->collection, &vars->id, &vars->type};
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
      bson_set_error(error, 0, 0, "%s: the template is empty", what);
      return false;
   }
   for (const char *p = tmpl; *p;) {
      size_t n = *p == '{' ? placeholder(p, NULL, NULL) : 0;
      if (n) {
         p += n;
         continue;
      }
      if (*p == '{' || *p == '}') {
         bson_set_error(error, 0, 0,
                        "%s: unknown placeholder at '%s' (use {db}, {collection}, {id}, {type})",
                        what, p);
         return false;
      }
      if (topic && (*p == '+' || *p == '#')) {
         bson_set_error(error, 0, 0, "%s: MQTT wildcard '%c' in the template", what, *p);
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
         bson_string_append_c(out, *p++);
      }
   }
   return bson_string_free(out, false);
}

void
relay_format_time(int64_t ms, char *buf, size_t size)
{
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
