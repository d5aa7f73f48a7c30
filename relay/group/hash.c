/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The bytes MongoDB's hasher feeds to MD5 are collected in a buffer, then hashed once with
 * OpenSSL's libcrypto. No state: every call builds its own buffer.
 */
#include "group/hash.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

typedef struct {
   uint8_t *data;
   size_t len, cap;
   uint8_t inline_buf[256];
} buf_t;

static void
buf_add(buf_t *b, const void *p, size_t n)
{
   if (b->len + n > b->cap) {
      size_t cap = b->cap * 2 > b->len + n ? b->cap * 2 : b->len + n;
      uint8_t *d = bson_malloc(cap);
      memcpy(d, b->data, b->len);
      if (b->data != b->inline_buf) {
         bson_free(b->data);
      }
      b->data = d;
      b->cap = cap;
   }
   memcpy(b->data + b->len, p, n);
   b->len += n;
}

static void
buf_add_le32(buf_t *b, int32_t v)
{
   uint32_t u = (uint32_t)v;
   uint8_t le[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
   buf_add(b, le, 4);
}

static void
buf_add_le64(buf_t *b, int64_t v)
{
   uint64_t u = (uint64_t)v;
   uint8_t le[8];
   for (int i = 0; i < 8; i++) {
      le[i] = (uint8_t)(u >> (8 * i));
   }
   buf_add(b, le, 8);
}

/* MongoDB's canonical type: types that compare as one kind (all numbers, string and symbol)
 * share a number, and that number, not the BSON type byte, is what gets hashed. */
static int32_t
canonical_type(bson_type_t t)
{
   switch (t) {
   case BSON_TYPE_MINKEY:
      return -1;
   case BSON_TYPE_MAXKEY:
      return 127;
   case BSON_TYPE_EOD:
   case BSON_TYPE_UNDEFINED:
      return 0;
   case BSON_TYPE_NULL:
      return 5;
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DECIMAL128:
      return 10;
   case BSON_TYPE_UTF8:
   case BSON_TYPE_SYMBOL:
      return 15;
   case BSON_TYPE_DOCUMENT:
      return 20;
   case BSON_TYPE_ARRAY:
      return 25;
   case BSON_TYPE_BINARY:
      return 30;
   case BSON_TYPE_OID:
      return 35;
   case BSON_TYPE_BOOL:
      return 40;
   case BSON_TYPE_DATE_TIME:
      return 45;
   case BSON_TYPE_TIMESTAMP:
      return 47;
   case BSON_TYPE_REGEX:
      return 50;
   case BSON_TYPE_DBPOINTER:
      return 55;
   case BSON_TYPE_CODE:
      return 60;
   case BSON_TYPE_CODEWSCOPE:
      return 65;
   default:
      return 0;
   }
}

/* A double as MongoDB's safeNumberLongForHash() sees it: NaN is 0, values beyond int64 are
 * clamped, except exactly 2^63, which older servers wrapped to INT64_MIN (kept for
 * compatibility), and the rest truncated toward zero. */
static int64_t
double_as_int64(double d)
{
   const double two63 = 9223372036854775808.0;
   if (isnan(d)) {
      return 0;
   }
   if (d == two63) {
      return INT64_MIN;
   }
   if (!(d < two63)) {
      return INT64_MAX;
   }
   if (d < -two63) {
      return INT64_MIN;
   }
   return (int64_t)d;
}

/* Decimal128 to int64 as MongoDB does (NaN 0, clamped, rounded half to even). */
static int64_t
decimal_as_int64(const bson_decimal128_t *dec)
{
   char text[BSON_DECIMAL128_STRING];
   long double v;

   bson_decimal128_to_string(dec, text);
   if (strstr(text, "NaN")) {
      return 0;
   }
   if (strstr(text, "Inf")) {
      return text[0] == '-' ? INT64_MIN : INT64_MAX;
   }
   v = strtold(text, NULL);
   if (v >= 9223372036854775807.0L) {
      return INT64_MAX;
   }
   if (v <= -9223372036854775808.0L) {
      return INT64_MIN;
   }
   return (int64_t)rintl(v); /* the default rounding mode: to nearest, ties to even */
}

static int64_t
number_as_int64(const bson_iter_t *it)
{
   switch (bson_iter_type(it)) {
   case BSON_TYPE_INT32:
      return bson_iter_int32(it);
   case BSON_TYPE_INT64:
      return bson_iter_int64(it);
   case BSON_TYPE_DOUBLE:
      return double_as_int64(bson_iter_double(it));
   default: {
      bson_decimal128_t dec;
      bson_iter_decimal128(it, &dec);
      return decimal_as_int64(&dec);
   }
   }
}

/* The element's value bytes exactly as stored (what MongoDB's BSONElement::value() points
 * at, valuesize() long): copied into a one-element document with an empty name, whose layout
 * is length (4), type (1), name terminator (1), value, document terminator (1). */
static void
add_value_bytes(buf_t *b, const bson_iter_t *it)
{
   bson_t tmp = BSON_INITIALIZER;
   if (bson_append_iter(&tmp, "", 0, it) && tmp.len >= 7) {
      buf_add(b, bson_get_data(&tmp) + 6, tmp.len - 7);
   }
   bson_destroy(&tmp);
}

static void add_element(buf_t *b, const bson_iter_t *it, bool with_name);

static void
add_fields(buf_t *b, const uint8_t *data, uint32_t len)
{
   bson_t doc;
   bson_iter_t child;

   if (bson_init_static(&doc, data, len) && bson_iter_init(&child, &doc)) {
      while (bson_iter_next(&child)) {
         add_element(b, &child, true);
      }
   }
   buf_add_le32(b, canonical_type(BSON_TYPE_EOD)); /* the end marker: type only */
}

static void
add_element(buf_t *b, const bson_iter_t *it, bool with_name)
{
   bson_type_t t = bson_iter_type(it);
   const uint8_t *data;
   uint32_t len;

   buf_add_le32(b, canonical_type(t));
   if (with_name) {
      const char *key = bson_iter_key(it);
      buf_add(b, key, strlen(key) + 1);
   }
   switch (t) {
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DECIMAL128:
      buf_add_le64(b, number_as_int64(it));
      break;
   case BSON_TYPE_DOCUMENT:
      bson_iter_document(it, &len, &data);
      add_fields(b, data, len);
      break;
   case BSON_TYPE_ARRAY:
      bson_iter_array(it, &len, &data);
      add_fields(b, data, len);
      break;
   case BSON_TYPE_CODEWSCOPE: {
      uint32_t code_len;
      const char *code = bson_iter_codewscope(it, &code_len, &len, &data);
      buf_add(b, code, (size_t)code_len + 1); /* with its NUL */
      add_fields(b, data, len);
      break;
   }
   default:
      add_value_bytes(b, it);
      break;
   }
}

static int64_t
digest(const buf_t *b)
{
   unsigned char md[EVP_MAX_MD_SIZE];
   unsigned int md_len = 0;
   uint64_t u = 0;

   if (!EVP_Digest(b->data, b->len, md, &md_len, EVP_md5(), NULL) || md_len < 8) {
      abort(); /* MD5 is always there in libcrypto's default provider */
   }
   for (int i = 7; i >= 0; i--) {
      u = (u << 8) | md[i];
   }
   return (int64_t)u;
}

int64_t
relay_hash_iter(const bson_iter_t *iter)
{
   buf_t b = {.cap = sizeof b.inline_buf};
   int64_t h;

   b.data = b.inline_buf;
   buf_add_le32(&b, 0); /* the seed */
   add_element(&b, iter, false);
   h = digest(&b);
   if (b.data != b.inline_buf) {
      bson_free(b.data);
   }
   return h;
}

int64_t
relay_hash_value(const bson_value_t *value)
{
   bson_t doc = BSON_INITIALIZER;
   bson_iter_t it;
   int64_t h = 0;

   if (bson_append_value(&doc, "", 0, value) && bson_iter_init(&it, &doc) && bson_iter_next(&it)) {
      h = relay_hash_iter(&it);
   }
   bson_destroy(&doc);
   return h;
}
