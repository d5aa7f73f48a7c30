/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * MongoDB's hashed-index key of a BSON value (what `$toHashedIndexKey`, hashed indexes and
 * hashed shard keys compute): the first 8 bytes, read as a little-endian int64, of an MD5
 * over the seed and then, for the value, its canonical type as a 4-byte little-endian int,
 * and either its number squashed to an int64 (all numeric types hash alike), its value bytes
 * as BSON stores them, or, for documents and arrays, each element in turn (type, field name
 * with its NUL, value) and a closing end-of-object element. Learnt from mongod's
 * src/mongo/db/hasher.cpp and BSONElement::safeNumberLongForHash(); checked against the
 * values MongoDB publishes (see test-hash.c). MD5 is OpenSSL's. No state; thread-safe.
 *
 * The relay has its own implementation (relay/group/hash.c), kept separate on purpose: a bug
 * shared by both would hide in both. Both are tested against the same known answers taken
 * from MongoDB itself, tests/fixtures/hashed-index-keys.json.
 */
#include <math.h>
#include <openssl/evp.h>
#include <string.h>

#include "engine-private.h"

__extension__ typedef unsigned __int128 u128;

static void
put_le32(EVP_MD_CTX *md, int32_t v)
{
   uint8_t b[4];

   for (int i = 0; i < 4; i++) {
      b[i] = (uint8_t)((uint32_t)v >> (8 * i));
   }
   EVP_DigestUpdate(md, b, sizeof b);
}

static void
put_le64(EVP_MD_CTX *md, int64_t v)
{
   uint8_t b[8];

   for (int i = 0; i < 8; i++) {
      b[i] = (uint8_t)((uint64_t)v >> (8 * i));
   }
   EVP_DigestUpdate(md, b, sizeof b);
}

/* A BSON string value: int32 length (with the NUL), the bytes, the NUL. */
static void
put_string(EVP_MD_CTX *md, const char *s, uint32_t len)
{
   put_le32(md, (int32_t)len + 1);
   EVP_DigestUpdate(md, s, len + 1);
}

/* MongoDB's double -> int64 for hashing: NaN is 0, out-of-range values clamp, and 2^63
 * itself maps to INT64_MIN (the result older servers got from an overflowing cast, which
 * hashed indexes must keep forever). */
static int64_t
double_to_long(double d)
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

/* Decimal128 -> int64 as Decimal128::toLong() does it (round half to even), clamped to the
 * int64 range; NaN is 0. Non-canonical encodings (coefficient > 10^34 - 1) are zero, as
 * IEEE 754-2008 says. */
static int64_t
decimal_to_long(const bson_decimal128_t *dec)
{
   const u128 max_coeff = (u128)0x1ed09bead87c0ULL << 64 | 0x378d8e63ffffffffULL;
   uint64_t hi = dec->high, lo = dec->low;
   bool negative = hi >> 63;
   int exp;
   u128 coeff, q;

   if (((hi >> 58) & 0x1f) == 0x1f) {
      return 0; /* NaN */
   }
   if (((hi >> 58) & 0x1f) == 0x1e) {
      return negative ? INT64_MIN : INT64_MAX; /* Infinity */
   }
   if (((hi >> 61) & 0x3) == 0x3) {
      return 0; /* the large-coefficient form is always above 10^34: non-canonical */
   }
   exp = (int)((hi >> 49) & 0x3fff) - 6176;
   coeff = (u128)(hi & 0x1ffffffffffffULL) << 64 | lo;
   if (coeff > max_coeff || coeff == 0) {
      return 0;
   }
   if (exp >= 0) {
      q = coeff;
      for (int i = 0; i < exp && q <= ((u128)1 << 64); i++) {
         q *= 10;
      }
   } else if (exp < -34) {
      q = 0; /* below 10^34 * 10^-35 = 0.1: rounds to zero */
   } else {
      u128 div = 1, r;
      for (int i = 0; i < -exp; i++) {
         div *= 10;
      }
      q = coeff / div;
      r = coeff % div;
      if (2 * r > div || (2 * r == div && (q & 1))) {
         q++;
      }
   }
   if (negative) {
      return q >= ((u128)1 << 63) ? INT64_MIN : -(int64_t)q;
   }
   return q > (u128)INT64_MAX ? INT64_MAX : (int64_t)q;
}

static int64_t
number_for_hash(const bson_value_t *v)
{
   switch (v->value_type) {
   case BSON_TYPE_INT32:
      return v->value.v_int32;
   case BSON_TYPE_INT64:
      return v->value.v_int64;
   case BSON_TYPE_DOUBLE:
      return double_to_long(v->value.v_double);
   default:
      return decimal_to_long(&v->value.v_decimal128);
   }
}

static void hash_value(EVP_MD_CTX *md, const bson_value_t *v);

/* Each element as (canonical type, key with its NUL, value), then the end-of-object element,
 * which contributes only its type (0): mongod gives it no field name and no value. */
static void
hash_elements(EVP_MD_CTX *md, const uint8_t *data, uint32_t len)
{
   bson_iter_t it;

   if (bson_iter_init_from_data(&it, data, len)) {
      while (bson_iter_next(&it)) {
         put_le32(md, tm_type_bracket(bson_iter_type(&it)));
         EVP_DigestUpdate(md, bson_iter_key(&it), bson_iter_key_len(&it) + 1);
         hash_value(md, bson_iter_value(&it));
      }
   }
   put_le32(md, 0);
}

static void
hash_binary(EVP_MD_CTX *md, const bson_value_t *v)
{
   uint32_t n = v->value.v_binary.data_len;
   uint8_t subtype = (uint8_t)v->value.v_binary.subtype;

   /* The old binary subtype 2 nests a second length, which libbson strips. */
   put_le32(md, (int32_t)(subtype == BSON_SUBTYPE_BINARY_DEPRECATED ? n + 4 : n));
   EVP_DigestUpdate(md, &subtype, 1);
   if (subtype == BSON_SUBTYPE_BINARY_DEPRECATED) {
      put_le32(md, (int32_t)n);
   }
   EVP_DigestUpdate(md, v->value.v_binary.data, n);
}

/* The value part of an element (its type is already in the digest). */
static void
hash_value(EVP_MD_CTX *md, const bson_value_t *v)
{
   const char *s;

   switch (v->value_type) {
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DECIMAL128:
      put_le64(md, number_for_hash(v));
      break;
   case BSON_TYPE_UTF8:
      put_string(md, v->value.v_utf8.str, v->value.v_utf8.len);
      break;
   case BSON_TYPE_SYMBOL:
      put_string(md, v->value.v_symbol.symbol, v->value.v_symbol.len);
      break;
   case BSON_TYPE_CODE:
      put_string(md, v->value.v_code.code, v->value.v_code.code_len);
      break;
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      hash_elements(md, v->value.v_doc.data, v->value.v_doc.data_len);
      break;
   case BSON_TYPE_CODEWSCOPE:
      /* The code's characters and NUL (not its length), then the scope's elements. */
      EVP_DigestUpdate(md, v->value.v_codewscope.code, v->value.v_codewscope.code_len + 1);
      hash_elements(md, v->value.v_codewscope.scope_data, v->value.v_codewscope.scope_len);
      break;
   case BSON_TYPE_BINARY:
      hash_binary(md, v);
      break;
   case BSON_TYPE_OID:
      EVP_DigestUpdate(md, v->value.v_oid.bytes, 12);
      break;
   case BSON_TYPE_BOOL:
      EVP_DigestUpdate(md, v->value.v_bool ? "\1" : "\0", 1);
      break;
   case BSON_TYPE_DATE_TIME:
      put_le64(md, v->value.v_datetime);
      break;
   case BSON_TYPE_TIMESTAMP:
      put_le32(md, (int32_t)v->value.v_timestamp.increment);
      put_le32(md, (int32_t)v->value.v_timestamp.timestamp);
      break;
   case BSON_TYPE_REGEX:
      s = v->value.v_regex.regex;
      EVP_DigestUpdate(md, s, strlen(s) + 1);
      s = v->value.v_regex.options ? v->value.v_regex.options : "";
      EVP_DigestUpdate(md, s, strlen(s) + 1);
      break;
   case BSON_TYPE_DBPOINTER:
      put_string(md, v->value.v_dbpointer.collection, v->value.v_dbpointer.collection_len);
      EVP_DigestUpdate(md, v->value.v_dbpointer.oid.bytes, 12);
      break;
   default:
      break; /* null, undefined, minKey, maxKey: no value bytes */
   }
}

int64_t
tm_value_hash64(const bson_value_t *value, int32_t seed)
{
   bson_value_t null_value = {.value_type = BSON_TYPE_NULL};
   uint8_t digest[EVP_MAX_MD_SIZE];
   unsigned int digest_len = 0;
   uint64_t r = 0;
   EVP_MD_CTX *md = EVP_MD_CTX_new();

   BSON_ASSERT(md);
   if (value->value_type == BSON_TYPE_EOD) {
      value = &null_value; /* missing hashes as null, as $toHashedIndexKey does */
   }
   BSON_ASSERT(EVP_DigestInit_ex(md, EVP_md5(), NULL));
   put_le32(md, seed);
   put_le32(md, tm_type_bracket(value->value_type));
   hash_value(md, value);
   BSON_ASSERT(EVP_DigestFinal_ex(md, digest, &digest_len) && digest_len == 16);
   EVP_MD_CTX_free(md);
   for (int i = 7; i >= 0; i--) {
      r = r << 8 | digest[i];
   }
   return (int64_t)r;
}
