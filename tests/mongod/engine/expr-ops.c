/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The strict (eagerly evaluated) expression operators. Only what drivers' tests and our
 * examples use; anything else is rejected by name when the pipeline is parsed.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "expr.h"

static bool
set_bool(bson_value_t *out, bool b)
{
   out->value_type = BSON_TYPE_BOOL;
   out->value.v_bool = b;
   return true;
}

static bool
is_nullish(const bson_value_t *v)
{
   return v->value_type == BSON_TYPE_EOD || v->value_type == BSON_TYPE_NULL ||
          v->value_type == BSON_TYPE_UNDEFINED;
}

#define CMP_OP(fname, test)                                                                        \
   static bool fname(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)      \
   {                                                                                               \
      int r = tm_value_compare(&a[0], &a[1]);                                                      \
      return set_bool(out, test);                                                                  \
   }
CMP_OP(op_eq, r == 0)
CMP_OP(op_ne, r != 0)
CMP_OP(op_gt, r > 0)
CMP_OP(op_gte, r >= 0)
CMP_OP(op_lt, r < 0)
CMP_OP(op_lte, r <= 0)

static bool
op_cmp(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   out->value_type = BSON_TYPE_INT32;
   out->value.v_int32 = tm_value_compare(&a[0], &a[1]);
   return true;
}

static bool
op_not(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   return set_bool(out, !tm_value_truthy(&a[0]));
}

static bool
op_concat(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_string_t *s;

   for (size_t i = 0; i < n; i++) {
      if (is_nullish(&a[i])) {
         out->value_type = BSON_TYPE_NULL;
         return true;
      }
      if (a[i].value_type != BSON_TYPE_UTF8) {
         return tm_error_set(error, 16702, "$concat only supports strings, not %s",
                             tm_type_name(a[i].value_type));
      }
   }
   s = bson_string_new(NULL);
   for (size_t i = 0; i < n; i++) {
      bson_string_append(s, a[i].value.v_utf8.str);
   }
   out->value_type = BSON_TYPE_UTF8;
   out->value.v_utf8.len = s->len;
   out->value.v_utf8.str = bson_string_free(s, false);
   return true;
}

static bool
op_size(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_t arr;

   if (a[0].value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(&a[0], &arr)) {
      return tm_error_set(error, 17124,
                          "The argument to $size must be an array. Type of argument was: %s",
                          tm_type_name(a[0].value_type));
   }
   out->value_type = BSON_TYPE_INT32;
   out->value.v_int32 = (int32_t)bson_count_keys(&arr);
   return true;
}

static bool
op_is_array(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   return set_bool(out, a[0].value_type == BSON_TYPE_ARRAY);
}

static bool
op_array_elem_at(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;
   int64_t idx, count;

   if (is_nullish(&a[0]) || is_nullish(&a[1])) {
      out->value_type = BSON_TYPE_NULL;
      return true;
   }
   if (a[0].value_type != BSON_TYPE_ARRAY || !tm_value_is_number(&a[1])) {
      return tm_error_set(error, 28689, "$arrayElemAt's first argument must be an array");
   }
   tm_value_as_bson(&a[0], &arr);
   count = bson_count_keys(&arr);
   idx = (int64_t)tm_value_as_double(&a[1]);
   idx = idx < 0 ? count + idx : idx;
   if (idx < 0 || idx >= count) {
      return true; /* missing */
   }
   bson_iter_init(&it, &arr);
   for (int64_t i = 0; bson_iter_next(&it); i++) {
      if (i == idx) {
         tm_value_dup(bson_iter_value(&it), out);
         break;
      }
   }
   return true;
}

static bool
op_in(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;

   if (a[1].value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(&a[1], &arr)) {
      return tm_error_set(error, 40081, "$in requires an array as a second argument, found: %s",
                          tm_type_name(a[1].value_type));
   }
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      if (tm_value_equal(&a[0], bson_iter_value(&it))) {
         return set_bool(out, true);
      }
   }
   return set_bool(out, false);
}

static bool
op_concat_arrays(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_t b = BSON_INITIALIZER;
   uint32_t k = 0;

   for (size_t i = 0; i < n; i++) {
      bson_t arr;
      bson_iter_t it;
      if (is_nullish(&a[i])) {
         bson_destroy(&b);
         out->value_type = BSON_TYPE_NULL;
         return true;
      }
      if (a[i].value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(&a[i], &arr)) {
         bson_destroy(&b);
         return tm_error_set(error, 28664, "$concatArrays only supports arrays, not %s",
                             tm_type_name(a[i].value_type));
      }
      bson_iter_init(&it, &arr);
      while (bson_iter_next(&it)) {
         char buf[16];
         const char *key;
         bson_uint32_to_string(k++, &key, buf, sizeof buf);
         bson_append_value(&b, key, -1, bson_iter_value(&it));
      }
   }
   tm_value_from_bson(&b, BSON_TYPE_ARRAY, out);
   return true;
}

static bool
set_string(bson_value_t *out, const char *s)
{
   out->value_type = BSON_TYPE_UTF8;
   out->value.v_utf8.str = bson_strdup(s);
   out->value.v_utf8.len = (uint32_t)strlen(s);
   return true;
}

static bool
op_to_string(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   char buf[64];
   const bson_value_t *v = &a[0];

   switch (v->value_type) {
   case BSON_TYPE_EOD:
   case BSON_TYPE_NULL:
      out->value_type = BSON_TYPE_NULL;
      return true;
   case BSON_TYPE_UTF8:
      return set_string(out, v->value.v_utf8.str);
   case BSON_TYPE_INT32:
      snprintf(buf, sizeof buf, "%d", v->value.v_int32);
      break;
   case BSON_TYPE_INT64:
      snprintf(buf, sizeof buf, "%lld", (long long)v->value.v_int64);
      break;
   case BSON_TYPE_DOUBLE:
      snprintf(buf, sizeof buf, "%.15g", v->value.v_double);
      break;
   case BSON_TYPE_DECIMAL128:
      bson_decimal128_to_string(&v->value.v_decimal128, buf);
      break;
   case BSON_TYPE_BOOL:
      return set_string(out, v->value.v_bool ? "true" : "false");
   case BSON_TYPE_OID:
      bson_oid_to_string(&v->value.v_oid, buf);
      break;
   case BSON_TYPE_DATE_TIME: {
      time_t secs = (time_t)(v->value.v_datetime / 1000);
      struct tm tm;
      char tbuf[32];
      gmtime_r(&secs, &tm);
      strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%S", &tm);
      snprintf(buf, sizeof buf, "%s.%03dZ", tbuf, (int)(v->value.v_datetime % 1000));
      break;
   }
   default:
      return tm_error_set(error, 241, "Unsupported conversion from %s to string",
                          tm_type_name(v->value_type));
   }
   return set_string(out, buf);
}

static bool
change_case(const bson_value_t *a, bson_value_t *out, bool upper, bson_error_t *error)
{
   char *s;

   if (is_nullish(&a[0])) {
      return set_string(out, "");
   }
   if (a[0].value_type != BSON_TYPE_UTF8) {
      return tm_error_set(error, 16007, "can't convert from BSON type %s to String",
                          tm_type_name(a[0].value_type));
   }
   set_string(out, a[0].value.v_utf8.str);
   for (s = out->value.v_utf8.str; *s; s++) {
      *s = (char)(upper ? toupper((unsigned char)*s) : tolower((unsigned char)*s));
   }
   return true;
}

static bool
op_to_lower(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   return change_case(a, out, false, error);
}

static bool
op_to_upper(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   return change_case(a, out, true, error);
}

static bool
op_type(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   return set_string(out, tm_type_name(a[0].value_type));
}

/* {$toHashedIndexKey: <expr>}: the hashed-index key, seed 0 (missing hashes as null). */
static bool
op_to_hashed_index_key(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   out->value_type = BSON_TYPE_INT64;
   out->value.v_int64 = tm_value_hash64(&a[0], 0);
   return true;
}

static const struct {
   const char *name;
   tm_expr_op_fn fn;
   int min, max;
} ops[] = {
   {"$eq", op_eq, 2, 2},
   {"$ne", op_ne, 2, 2},
   {"$gt", op_gt, 2, 2},
   {"$gte", op_gte, 2, 2},
   {"$lt", op_lt, 2, 2},
   {"$lte", op_lte, 2, 2},
   {"$cmp", op_cmp, 2, 2},
   {"$not", op_not, 1, 1},
   {"$add", tm_expr_add, 0, -1},
   {"$subtract", tm_expr_subtract, 2, 2},
   {"$multiply", tm_expr_multiply, 0, -1},
   {"$divide", tm_expr_divide, 2, 2},
   {"$concat", op_concat, 0, -1},
   {"$size", op_size, 1, 1},
   {"$isArray", op_is_array, 1, 1},
   {"$arrayElemAt", op_array_elem_at, 2, 2},
   {"$in", op_in, 2, 2},
   {"$concatArrays", op_concat_arrays, 0, -1},
   {"$toString", op_to_string, 1, 1},
   {"$toLower", op_to_lower, 1, 1},
   {"$toUpper", op_to_upper, 1, 1},
   {"$type", op_type, 1, 1},
   {"$toHashedIndexKey", op_to_hashed_index_key, 1, 1},
};

tm_expr_op_fn
tm_expr_op_lookup(const char *name, int *min_args, int *max_args)
{
   for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
      if (strcmp(ops[i].name, name) == 0) {
         *min_args = ops[i].min;
         *max_args = ops[i].max;
         return ops[i].fn;
      }
   }
   return NULL;
}
