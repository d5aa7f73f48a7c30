/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The CloudEvents JSON payloads of render.h (relay_cloudevent_json(), relay_data_json()): a
 * writer of our own for the common value types that produces exactly libbson's relaxed
 * extended JSON, falling back to libbson for the rest. Pure functions: safe from any thread.
 */
#include <string.h>

#include "mqtt/render.h"

#include <openssl/evp.h>

/* A growable output buffer for the JSON writer below. */
typedef struct {
   char *p;
   size_t len, cap;
} jbuf_t;

static void
jb_reserve(jbuf_t *b, size_t n)
{
   if (b->len + n + 1 > b->cap) {
      size_t cap = b->cap ? b->cap * 2 : 512;
      while (cap < b->len + n + 1) {
         cap *= 2;
      }
      b->p = bson_realloc(b->p, cap);
      b->cap = cap;
   }
}

static void
jb_put(jbuf_t *b, const char *s, size_t n)
{
   jb_reserve(b, n);
   memcpy(b->p + b->len, s, n);
   b->len += n;
}

#define JB_LIT(b, s) jb_put((b), (s), sizeof(s) - 1)

static void
jb_int(jbuf_t *b, int64_t v)
{
   char tmp[24];
   jb_put(b, tmp, relay_format_int64(v, tmp));
}

/* True if the 8 bytes at @p are written as they are: all in 0x20..0x7f, none '"' or '\\'.
 * Data strings are mostly such runs, and the byte loop of jb_str() was a tenth of the
 * relay's CPU for 64 KiB events. (A byte below 0x20, or one equal to the character after the
 * XOR, borrows into its high bit; bytes >= 0x80 have it set already.) */
static uint64_t
special8(const unsigned char *p)
{
   const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
   uint64_t v, quote, backslash;

   memcpy(&v, p, 8);
   quote = v ^ (ones * '"');
   backslash = v ^ (ones * '\\');
   return (v | ((v - ones * 0x20) & ~v) | ((quote - ones) & ~quote) |
           ((backslash - ones) & ~backslash)) &
          high;
}

static bool
plain8(const unsigned char *p)
{
   return !special8(p);
}

/* The same for 32 bytes at once: long strings (64 KiB pads) are mostly such runs. */
static bool
plain32(const unsigned char *p)
{
   return !(special8(p) | special8(p + 8) | special8(p + 16) | special8(p + 24));
}

/* Appends @s as a JSON string, escaped exactly as libbson's bson_utf8_escape_for_json does
 * ('"', '\\', \b \f \n \r \t, other controls and NUL as \u00xx, everything else as is).
 * Returns false on invalid UTF-8 (then the caller falls back to libbson). */
static bool
jb_str(jbuf_t *b, const char *s, size_t len)
{
   static const char hex[] = "0123456789abcdef";
   const unsigned char *u = (const unsigned char *)s;
   size_t i = 0, run = 0;

   jb_reserve(b, len + 2);
   b->p[b->len++] = '"';
   while (i < len) {
      if (len - i >= 32 && plain32(u + i)) {
         i += 32;
         run += 32;
         continue;
      }
      if (len - i >= 8 && plain8(u + i)) {
         i += 8;
         run += 8;
         continue;
      }
      unsigned char c = u[i];
      if (c >= 0x80) {
         size_t n;
         uint32_t cp;
         if (c >= 0xC2 && c <= 0xDF) {
            n = 2, cp = c & 0x1Fu;
         } else if (c >= 0xE0 && c <= 0xEF) {
            n = 3, cp = c & 0x0Fu;
         } else if (c >= 0xF0 && c <= 0xF4) {
            n = 4, cp = c & 0x07u;
         } else {
            return false;
         }
         if (n > len - i) {
            return false;
         }
         for (size_t k = 1; k < n; k++) {
            if ((u[i + k] & 0xC0) != 0x80) {
               return false;
            }
            cp = (cp << 6) | (u[i + k] & 0x3Fu);
         }
         if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
             (cp >= 0xD800 && cp <= 0xDFFF)) {
            return false;
         }
         i += n;
         run += n;
         continue;
      }
      if (c >= 0x20 && c != '"' && c != '\\') {
         i++;
         run++;
         continue;
      }
      jb_put(b, s + i - run, run);
      run = 0;
      switch (c) {
      case '"':
         JB_LIT(b, "\\\"");
         break;
      case '\\':
         JB_LIT(b, "\\\\");
         break;
      case '\b':
         JB_LIT(b, "\\b");
         break;
      case '\f':
         JB_LIT(b, "\\f");
         break;
      case '\n':
         JB_LIT(b, "\\n");
         break;
      case '\r':
         JB_LIT(b, "\\r");
         break;
      case '\t':
         JB_LIT(b, "\\t");
         break;
      default: {
         char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
         jb_put(b, esc, sizeof esc);
      }
      }
      i++;
   }
   jb_put(b, s + i - run, run);
   jb_put(b, "\"", 1);
   return true;
}

/* Appends the elements of a document or array as libbson's relaxed extended JSON writes
 * them. Only the types whose relaxed form is plain JSON are handled (strings, 32/64-bit
 * integers, booleans, null, documents, arrays); anything else returns false and the caller
 * uses libbson for the whole payload, so the output never differs from libbson's. */
static bool
jb_elements(jbuf_t *b, const bson_t *doc, bool array, int depth)
{
   bson_iter_t it;
   bool first = true;

   if (depth > 32 || !bson_iter_init(&it, doc)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      if (!first) {
         JB_LIT(b, ", ");
      }
      first = false;
      if (!array) {
         const char *key = bson_iter_key(&it);
         if (!jb_str(b, key, bson_iter_key_len(&it))) {
            return false;
         }
         JB_LIT(b, " : ");
      }
      switch (bson_iter_type(&it)) {
      case BSON_TYPE_UTF8: {
         uint32_t len;
         const char *s = bson_iter_utf8(&it, &len);
         if (!jb_str(b, s, len)) {
            return false;
         }
         break;
      }
      case BSON_TYPE_INT32:
         jb_int(b, bson_iter_int32(&it));
         break;
      case BSON_TYPE_INT64:
         jb_int(b, bson_iter_int64(&it));
         break;
      case BSON_TYPE_BOOL:
         if (bson_iter_bool(&it)) {
            JB_LIT(b, "true");
         } else {
            JB_LIT(b, "false");
         }
         break;
      case BSON_TYPE_NULL:
         JB_LIT(b, "null");
         break;
      case BSON_TYPE_DOCUMENT:
      case BSON_TYPE_ARRAY: {
         bool is_array = BSON_ITER_HOLDS_ARRAY(&it);
         const uint8_t *buf;
         uint32_t len;
         bson_t sub;
         if (is_array) {
            bson_iter_array(&it, &len, &buf);
         } else {
            bson_iter_document(&it, &len, &buf);
         }
         if (!bson_init_static(&sub, buf, len)) {
            return false;
         }
         jb_put(b, is_array ? "[ " : "{ ", 2);
         if (!jb_elements(b, &sub, is_array, depth + 1)) {
            return false;
         }
         jb_put(b, is_array ? " ]" : " }", 2);
         break;
      }
      default:
         return false;
      }
   }
   return true;
}

static char *
jb_finish(jbuf_t *b, size_t *len)
{
   jb_reserve(b, 0);
   b->p[b->len] = '\0';
   *len = b->len;
   return b->p;
}

/* The fast path of relay_cloudevent_json(); NULL when a value needs libbson. */
/* The extension attributes of @h (structured mode), after "seq" and before "data". */
static bool
jb_attributes(jbuf_t *b, const relay_headers_t *h)
{
   for (size_t i = 0; h && i < h->n; i++) {
      if (h->items[i].attribute) {
         JB_LIT(b, ", ");
         jb_put(b, "\"", 1);
         jb_put(b, h->items[i].name, strlen(h->items[i].name)); /* [a-z0-9]: no escapes */
         JB_LIT(b, "\" : ");
         if (!jb_str(b, h->items[i].value, strlen(h->items[i].value))) {
            return false;
         }
      }
   }
   return true;
}

/* Standard base64 with padding, as CloudEvents' data_base64 (RFC 4648, section 4). */
static char *
base64(const uint8_t *bytes, uint32_t len)
{
   char *out = bson_malloc(4 * ((size_t)len / 3 + 1) + 1);
   EVP_EncodeBlock((unsigned char *)out, bytes, (int)len);
   return out;
}

const char *
relay_event_content_type(const relay_event_t *ev)
{
   if (!ev->bin) {
      return "application/json";
   }
   return ev->content_type ? ev->content_type : "application/octet-stream";
}

static char *
cloudevent_json_fast(const relay_event_t *ev, const char *source, relay_str_t subject,
                     const relay_headers_t *headers, bool replay, size_t *len)
{
   jbuf_t b = {NULL, 0, 0};
   char tbuf[40];

   /* Room for the whole payload at once: the attributes, and data that is mostly strings
    * (JSON adds quotes and separators; escapes and numbers may still grow it). */
   jb_reserve(&b, 320 + strlen(source) + subject.len + (ev->data ? ev->data->len * 9 / 8 : 0));
   JB_LIT(&b, "{ \"specversion\" : \"1.0\", \"id\" : ");
   if (!jb_str(&b, ev->id, strlen(ev->id))) {
      goto fail;
   }
   JB_LIT(&b, ", \"source\" : ");
   if (!jb_str(&b, source, strlen(source))) {
      goto fail;
   }
   JB_LIT(&b, ", \"type\" : ");
   if (!jb_str(&b, ev->type, strlen(ev->type))) {
      goto fail;
   }
   JB_LIT(&b, ", \"subject\" : ");
   if (!jb_str(&b, subject.str ? subject.str : "", subject.str ? subject.len : 0)) {
      goto fail;
   }
   if (ev->has_time) {
      relay_format_time(ev->time_ms, tbuf, sizeof tbuf);
      JB_LIT(&b, ", \"time\" : ");
      if (!jb_str(&b, tbuf, strlen(tbuf))) {
         goto fail;
      }
   }
   JB_LIT(&b, ", \"datacontenttype\" : ");
   if (!jb_str(&b, relay_event_content_type(ev), strlen(relay_event_content_type(ev)))) {
      goto fail;
   }
   JB_LIT(&b, ", \"seq\" : ");
   jb_int(&b, ev->seq);
   if (replay) {
      JB_LIT(&b, ", \"" OUTBOX_CONTRACT_REPLAY_MARKER "\" : true");
   }
   if (!jb_attributes(&b, headers)) {
      goto fail;
   }
   if (ev->bin) {
      char *b64 = base64(ev->bin, ev->bin_len);
      JB_LIT(&b, ", \"data_base64\" : ");
      bool ok = jb_str(&b, b64, strlen(b64));
      bson_free(b64);
      if (!ok) {
         goto fail;
      }
      JB_LIT(&b, " }");
      return jb_finish(&b, len);
   }
   JB_LIT(&b, ", \"data\" : { ");
   if (ev->data && !jb_elements(&b, ev->data, false, 0)) {
      goto fail;
   }
   JB_LIT(&b, " } }");
   return jb_finish(&b, len);
fail:
   bson_free(b.p);
   return NULL;
}

static char *
cloudevent_json_libbson(const relay_event_t *ev, const char *source, relay_str_t subject,
                        const relay_headers_t *headers, bool replay, size_t *len)
{
   bson_t doc = BSON_INITIALIZER;
   char tbuf[40];
   char *json;

   BSON_APPEND_UTF8(&doc, "specversion", "1.0");
   BSON_APPEND_UTF8(&doc, "id", ev->id);
   BSON_APPEND_UTF8(&doc, "source", source);
   BSON_APPEND_UTF8(&doc, "type", ev->type);
   bson_append_utf8(&doc, "subject", 7, subject.str ? subject.str : "", (int)subject.len);
   if (ev->has_time) {
      relay_format_time(ev->time_ms, tbuf, sizeof tbuf);
      BSON_APPEND_UTF8(&doc, "time", tbuf);
   }
   BSON_APPEND_UTF8(&doc, "datacontenttype", relay_event_content_type(ev));
   BSON_APPEND_INT64(&doc, "seq", ev->seq);
   if (replay) {
      BSON_APPEND_BOOL(&doc, OUTBOX_CONTRACT_REPLAY_MARKER, true);
   }
   for (size_t i = 0; headers && i < headers->n; i++) {
      if (headers->items[i].attribute) {
         BSON_APPEND_UTF8(&doc, headers->items[i].name, headers->items[i].value);
      }
   }
   if (ev->bin) {
      char *b64 = base64(ev->bin, ev->bin_len);
      BSON_APPEND_UTF8(&doc, "data_base64", b64);
      bson_free(b64);
   } else if (ev->data) {
      BSON_APPEND_DOCUMENT(&doc, "data", ev->data);
   } else {
      bson_t empty = BSON_INITIALIZER;
      BSON_APPEND_DOCUMENT(&doc, "data", &empty);
   }
   json = bson_as_relaxed_extended_json(&doc, len);
   bson_destroy(&doc);
   return json;
}

char *
relay_cloudevent_json_marked(const relay_event_t *ev, const char *source, relay_str_t subject,
                             const relay_headers_t *headers, bool replay, size_t *len)
{
   /* libbson's JSON writer goes character by character through a bson_string_t and was a
    * third of the relay's instructions per event; the fast path writes the same bytes. */
   char *json = cloudevent_json_fast(ev, source, subject, headers, replay, len);
   return json ? json : cloudevent_json_libbson(ev, source, subject, headers, replay, len);
}

char *
relay_cloudevent_json(const relay_event_t *ev, const char *source, relay_str_t subject,
                      const relay_headers_t *headers, size_t *len)
{
   return relay_cloudevent_json_marked(ev, source, subject, headers, false, len);
}

char *
relay_cloudevent_json_reference(const relay_event_t *ev, const char *source, relay_str_t subject,
                                const relay_headers_t *headers, size_t *len)
{
   return cloudevent_json_libbson(ev, source, subject, headers, false, len);
}

char *
relay_data_json(const relay_event_t *ev, size_t *len)
{
   bson_t empty = BSON_INITIALIZER;
   jbuf_t b = {NULL, 0, 0};

   if (!ev->data || bson_empty(ev->data)) {
      return bson_as_relaxed_extended_json(&empty, len); /* "{ }" */
   }
   jb_reserve(&b, 64 + ev->data->len * 9 / 8);
   JB_LIT(&b, "{ ");
   if (jb_elements(&b, ev->data, false, 0)) {
      JB_LIT(&b, " }");
      return jb_finish(&b, len);
   }
   bson_free(b.p);
   return bson_as_relaxed_extended_json(ev->data, len);
}
