/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * MongoDB's canonical comparison of BSON values (the order of sort and of $gt/$lt).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine-private.h"

/* Brackets as MongoDB's canonicalizeBSONType numbers them, so that the order is theirs. */
int
tm_type_bracket(bson_type_t type)
{
   switch (type) {
   case BSON_TYPE_MINKEY:
      return -1;
   case BSON_TYPE_EOD:
   case BSON_TYPE_UNDEFINED:
      return 0;
   case BSON_TYPE_NULL:
      return 5;
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DECIMAL128:
      return 10;
   case BSON_TYPE_UTF8:
   case BSON_TYPE_SYMBOL:
      return TM_BRACKET_STRING;
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
   case BSON_TYPE_MAXKEY:
      return 127;
   default:
      return 126;
   }
}

bool
tm_value_is_number(const bson_value_t *v)
{
   return v && tm_type_bracket(v->value_type) == 10;
}

double
tm_value_as_double(const bson_value_t *v)
{
   char buf[BSON_DECIMAL128_STRING];

   switch (v->value_type) {
   case BSON_TYPE_INT32:
      return v->value.v_int32;
   case BSON_TYPE_INT64:
      return (double)v->value.v_int64;
   case BSON_TYPE_DOUBLE:
      return v->value.v_double;
   case BSON_TYPE_DECIMAL128:
      /* A test server does not need exact decimal arithmetic: going through double keeps
       * decimal128 comparable with the other numbers at the cost of precision. */
      bson_decimal128_to_string(&v->value.v_decimal128, buf);
      if (strcmp(buf, "NaN") == 0) {
         return NAN;
      }
      if (strstr(buf, "Inf")) {
         return buf[0] == '-' ? -INFINITY : INFINITY;
      }
      return strtod(buf, NULL);
   default:
      return 0;
   }
}

static int
sign(long double d)
{
   return d < 0 ? -1 : (d > 0 ? 1 : 0);
}

static int
number_compare(const bson_value_t *a, const bson_value_t *b)
{
   bool a_int = a->value_type == BSON_TYPE_INT32 || a->value_type == BSON_TYPE_INT64;
   bool b_int = b->value_type == BSON_TYPE_INT32 || b->value_type == BSON_TYPE_INT64;
   long double x, y;

   if (a_int && b_int) {
      int64_t i = a->value_type == BSON_TYPE_INT32 ? a->value.v_int32 : a->value.v_int64;
      int64_t j = b->value_type == BSON_TYPE_INT32 ? b->value.v_int32 : b->value.v_int64;
      return i < j ? -1 : (i > j ? 1 : 0);
   }
   /* long double holds every int64 exactly on the platforms we build on, so large int64
    * values still compare correctly against doubles. */
   x = a->value_type == BSON_TYPE_INT64 ? (long double)a->value.v_int64
                                        : (long double)tm_value_as_double(a);
   y = b->value_type == BSON_TYPE_INT64 ? (long double)b->value.v_int64
                                        : (long double)tm_value_as_double(b);
   /* MongoDB orders NaN below every other number and equal to itself. */
   if (isnan(x) || isnan(y)) {
      return isnan(x) && isnan(y) ? 0 : (isnan(x) ? -1 : 1);
   }
   return sign(x - y);
}

static int
bytes_compare(const void *a, size_t la, const void *b, size_t lb)
{
   int r = memcmp(a, b, la < lb ? la : lb);

   if (r != 0) {
      return r < 0 ? -1 : 1;
   }
   return la < lb ? -1 : (la > lb ? 1 : 0);
}

static int
doc_compare(const uint8_t *da, uint32_t la, const uint8_t *db, uint32_t lb)
{
   bson_iter_t ia, ib;
   bool ha, hb;
   int r;

   if (!bson_iter_init_from_data(&ia, da, la) || !bson_iter_init_from_data(&ib, db, lb)) {
      return bytes_compare(da, la, db, lb);
   }
   for (;;) {
      ha = bson_iter_next(&ia);
      hb = bson_iter_next(&ib);
      if (!ha || !hb) {
         return ha == hb ? 0 : (ha ? 1 : -1);
      }
      r = tm_type_bracket(bson_iter_type(&ia)) - tm_type_bracket(bson_iter_type(&ib));
      if (r != 0) {
         return r < 0 ? -1 : 1;
      }
      r = strcmp(bson_iter_key(&ia), bson_iter_key(&ib));
      if (r != 0) {
         return r < 0 ? -1 : 1;
      }
      r = tm_value_compare(bson_iter_value(&ia), bson_iter_value(&ib));
      if (r != 0) {
         return r;
      }
   }
}

static int
u32_compare(uint32_t a, uint32_t b)
{
   return a < b ? -1 : (a > b ? 1 : 0);
}

static int
same_bracket_compare(const bson_value_t *a, const bson_value_t *b)
{
   int r;

   switch (a->value_type) {
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DECIMAL128:
      return number_compare(a, b);
   case BSON_TYPE_UTF8:
   case BSON_TYPE_SYMBOL:
      /* Symbol and utf8 share their layout in bson_value_t (len, then pointer). */
      return bytes_compare(a->value.v_utf8.str, a->value.v_utf8.len, b->value.v_utf8.str,
                           b->value.v_utf8.len);
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      return doc_compare(a->value.v_doc.data, a->value.v_doc.data_len, b->value.v_doc.data,
                         b->value.v_doc.data_len);
   case BSON_TYPE_BINARY:
      r = u32_compare(a->value.v_binary.data_len, b->value.v_binary.data_len);
      if (r == 0) {
         r = u32_compare(a->value.v_binary.subtype, b->value.v_binary.subtype);
      }
      return r ? r
               : bytes_compare(a->value.v_binary.data, a->value.v_binary.data_len,
                               b->value.v_binary.data, b->value.v_binary.data_len);
   case BSON_TYPE_OID:
      return bson_oid_compare(&a->value.v_oid, &b->value.v_oid);
   case BSON_TYPE_BOOL:
      return (int)a->value.v_bool - (int)b->value.v_bool;
   case BSON_TYPE_DATE_TIME:
      return a->value.v_datetime < b->value.v_datetime
                ? -1
                : (a->value.v_datetime > b->value.v_datetime ? 1 : 0);
   case BSON_TYPE_TIMESTAMP:
      r = u32_compare(a->value.v_timestamp.timestamp, b->value.v_timestamp.timestamp);
      return r ? r : u32_compare(a->value.v_timestamp.increment, b->value.v_timestamp.increment);
   case BSON_TYPE_REGEX:
      r = strcmp(a->value.v_regex.regex, b->value.v_regex.regex);
      return r ? (r < 0 ? -1 : 1) : strcmp(a->value.v_regex.options, b->value.v_regex.options);
   case BSON_TYPE_DBPOINTER:
      r = strcmp(a->value.v_dbpointer.collection, b->value.v_dbpointer.collection);
      return r ? (r < 0 ? -1 : 1)
               : bson_oid_compare(&a->value.v_dbpointer.oid, &b->value.v_dbpointer.oid);
   case BSON_TYPE_CODE:
      return bytes_compare(a->value.v_code.code, a->value.v_code.code_len, b->value.v_code.code,
                           b->value.v_code.code_len);
   case BSON_TYPE_CODEWSCOPE:
      r = bytes_compare(a->value.v_codewscope.code, a->value.v_codewscope.code_len,
                        b->value.v_codewscope.code, b->value.v_codewscope.code_len);
      return r ? r
               : doc_compare(a->value.v_codewscope.scope_data, a->value.v_codewscope.scope_len,
                             b->value.v_codewscope.scope_data, b->value.v_codewscope.scope_len);
   default:
      return 0; /* null, undefined, minkey, maxkey: one value each */
   }
}

int
tm_value_compare(const bson_value_t *a, const bson_value_t *b)
{
   int ba = tm_type_bracket(a->value_type);
   int bb = tm_type_bracket(b->value_type);
   int r;

   if (ba != bb) {
      return ba < bb ? -1 : 1;
   }
   r = same_bracket_compare(a, b);
   return r < 0 ? -1 : (r > 0 ? 1 : 0);
}

bool
tm_value_equal(const bson_value_t *a, const bson_value_t *b)
{
   return tm_value_compare(a, b) == 0;
}

bool
tm_value_binary_equal(const bson_value_t *a, const bson_value_t *b)
{
   if (a->value_type != b->value_type) {
      return false;
   }
   switch (a->value_type) {
   case BSON_TYPE_DOUBLE:
      return memcmp(&a->value.v_double, &b->value.v_double, sizeof(double)) == 0;
   case BSON_TYPE_DECIMAL128:
      return memcmp(&a->value.v_decimal128, &b->value.v_decimal128, sizeof a->value.v_decimal128) ==
             0;
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
      /* Same type, so comparing as numbers is comparing bits. */
      return number_compare(a, b) == 0;
   case BSON_TYPE_DOCUMENT:
   case BSON_TYPE_ARRAY:
      return a->value.v_doc.data_len == b->value.v_doc.data_len &&
             memcmp(a->value.v_doc.data, b->value.v_doc.data, a->value.v_doc.data_len) == 0;
   case BSON_TYPE_BINARY:
      return a->value.v_binary.subtype == b->value.v_binary.subtype &&
             same_bracket_compare(a, b) == 0;
   default:
      return same_bracket_compare(a, b) == 0;
   }
}

const char *
tm_type_name(bson_type_t type)
{
   switch (type) {
   case BSON_TYPE_DOUBLE:
      return "double";
   case BSON_TYPE_UTF8:
      return "string";
   case BSON_TYPE_DOCUMENT:
      return "object";
   case BSON_TYPE_ARRAY:
      return "array";
   case BSON_TYPE_BINARY:
      return "binData";
   case BSON_TYPE_UNDEFINED:
      return "undefined";
   case BSON_TYPE_OID:
      return "objectId";
   case BSON_TYPE_BOOL:
      return "bool";
   case BSON_TYPE_DATE_TIME:
      return "date";
   case BSON_TYPE_NULL:
      return "null";
   case BSON_TYPE_REGEX:
      return "regex";
   case BSON_TYPE_DBPOINTER:
      return "dbPointer";
   case BSON_TYPE_CODE:
      return "javascript";
   case BSON_TYPE_SYMBOL:
      return "symbol";
   case BSON_TYPE_CODEWSCOPE:
      return "javascriptWithScope";
   case BSON_TYPE_INT32:
      return "int";
   case BSON_TYPE_TIMESTAMP:
      return "timestamp";
   case BSON_TYPE_INT64:
      return "long";
   case BSON_TYPE_DECIMAL128:
      return "decimal";
   case BSON_TYPE_MINKEY:
      return "minKey";
   case BSON_TYPE_MAXKEY:
      return "maxKey";
   default:
      return "missing";
   }
}

char *
tm_value_to_json(const bson_value_t *v)
{
   bson_t tmp = BSON_INITIALIZER;
   char *json, *out;
   size_t len;

   if (v->value_type == BSON_TYPE_DOCUMENT || v->value_type == BSON_TYPE_ARRAY) {
      bson_t view;
      if (bson_init_static(&view, v->value.v_doc.data, v->value.v_doc.data_len)) {
         return v->value_type == BSON_TYPE_ARRAY ? bson_array_as_json(&view, NULL)
                                                 : bson_as_relaxed_extended_json(&view, NULL);
      }
      return bson_strdup("?");
   }
   /* Scalars: render {"v": x} and keep only the x. */
   bson_append_value(&tmp, "v", 1, v);
   json = bson_as_relaxed_extended_json(&tmp, &len);
   bson_destroy(&tmp);
   if (!json || len < 10) {
      bson_free(json);
      return bson_strdup("?");
   }
   out = bson_strndup(json + 8, len - 10); /* strip '{ "v" : ' and ' }' */
   bson_free(json);
   return out;
}
