/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Entity ids as text (render-id.h). Pure functions: safe from any thread.
 */
#include "base/render-id.h"

#include <inttypes.h>
#include <string.h>

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
