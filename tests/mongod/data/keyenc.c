/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Canonical key bytes for BSON values, so that values MongoDB calls equal (1, 1L, 1.0; equal
 * documents and arrays) hash to the same key in the _id and unique indexes. Pure functions.
 */
#include "data/keyenc.h"

#include <math.h>
#include <string.h>

static void
put(bson_string_t *out, const void *p, size_t n)
{
   /* bson_string_append stops at NUL bytes, so grow the buffer by hand. */
   if (out->len + n + 1 > out->alloc) {
      size_t alloc = out->alloc ? out->alloc : 16;
      while (alloc < out->len + n + 1) {
         alloc *= 2;
      }
      out->str = bson_realloc(out->str, alloc);
      out->alloc = (uint32_t)alloc;
   }
   memcpy(out->str + out->len, p, n);
   out->len += (uint32_t)n;
   out->str[out->len] = '\0';
}

static void
put_tag(bson_string_t *out, char tag)
{
   put(out, &tag, 1);
}

static void
put_number(bson_string_t *out, double d, int64_t i64, bool is_int)
{
   if (!is_int && d == floor(d) && fabs(d) < 9.2e18) {
      i64 = (int64_t)d;
      is_int = true;
   }
   if (is_int) {
      put_tag(out, 'I');
      put(out, &i64, sizeof i64);
   } else {
      if (isnan(d)) {
         d = NAN;
      }
      put_tag(out, 'D');
      put(out, &d, sizeof d);
   }
}

static void
put_doc(bson_string_t *out, const uint8_t *data, uint32_t len, bool with_names)
{
   bson_iter_t it;
   put_tag(out, with_names ? 'O' : 'A');
   if (bson_iter_init_from_data(&it, data, len)) {
      while (bson_iter_next(&it)) {
         if (with_names) {
            put(out, bson_iter_key(&it), bson_iter_key_len(&it) + 1);
         }
         md_keyenc_append(out, bson_iter_value(&it));
      }
   }
   put_tag(out, 'E');
}

void
md_keyenc_append(bson_string_t *out, const bson_value_t *v)
{
   if (!v) {
      put_tag(out, 'N');
      return;
   }
   switch (v->value_type) {
   case BSON_TYPE_NULL:
   case BSON_TYPE_UNDEFINED:
      put_tag(out, 'N');
      break;
   case BSON_TYPE_INT32:
      put_number(out, 0, v->value.v_int32, true);
      break;
   case BSON_TYPE_INT64:
      put_number(out, 0, v->value.v_int64, true);
      break;
   case BSON_TYPE_DOUBLE:
      put_number(out, v->value.v_double, 0, false);
      break;
   case BSON_TYPE_UTF8:
      put_tag(out, 'S');
      put(out, &v->value.v_utf8.len, sizeof v->value.v_utf8.len);
      put(out, v->value.v_utf8.str, v->value.v_utf8.len);
      break;
   case BSON_TYPE_SYMBOL:
      put_tag(out, 'S');
      put(out, &v->value.v_symbol.len, sizeof v->value.v_symbol.len);
      put(out, v->value.v_symbol.symbol, v->value.v_symbol.len);
      break;
   case BSON_TYPE_DOCUMENT:
      put_doc(out, v->value.v_doc.data, v->value.v_doc.data_len, true);
      break;
   case BSON_TYPE_ARRAY:
      put_doc(out, v->value.v_doc.data, v->value.v_doc.data_len, false);
      break;
   case BSON_TYPE_OID:
      put_tag(out, 'o');
      put(out, v->value.v_oid.bytes, 12);
      break;
   case BSON_TYPE_BOOL:
      put_tag(out, v->value.v_bool ? 'T' : 'F');
      break;
   case BSON_TYPE_DATE_TIME:
      put_tag(out, 'd');
      put(out, &v->value.v_datetime, 8);
      break;
   case BSON_TYPE_TIMESTAMP:
      put_tag(out, 't');
      put(out, &v->value.v_timestamp.timestamp, 4);
      put(out, &v->value.v_timestamp.increment, 4);
      break;
   case BSON_TYPE_BINARY:
      put_tag(out, 'b');
      put(out, &v->value.v_binary.subtype, sizeof v->value.v_binary.subtype);
      put(out, &v->value.v_binary.data_len, 4);
      put(out, v->value.v_binary.data, v->value.v_binary.data_len);
      break;
   case BSON_TYPE_REGEX:
      put_tag(out, 'r');
      put(out, v->value.v_regex.regex, strlen(v->value.v_regex.regex) + 1);
      put(out, v->value.v_regex.options, strlen(v->value.v_regex.options) + 1);
      break;
   case BSON_TYPE_DECIMAL128:
      put_tag(out, 'x');
      put(out, &v->value.v_decimal128, sizeof v->value.v_decimal128);
      break;
   default:
      /* MinKey, MaxKey and the deprecated types: the type alone identifies them well
       * enough for a test server. */
      put_tag(out, '#');
      put(out, &v->value_type, sizeof v->value_type);
      break;
   }
}

bool
md_keyenc_field(bson_string_t *out, const bson_t *doc, const char *field)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, field)) {
      return false;
   }
   md_keyenc_append(out, bson_iter_value(&it));
   return true;
}
