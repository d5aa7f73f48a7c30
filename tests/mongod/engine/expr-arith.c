/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Arithmetic expressions as mongod 6.0 evaluates them: $add (numbers and at most one date),
 * $subtract (date - date, date - number), $multiply, $divide; result types widen int32 ->
 * int64 -> double -> decimal, and integer overflow moves to double. Decimals are computed
 * through long double (a test server needs no exact decimal arithmetic).
 */
#include <math.h>
#include <stdio.h>

#include "expr.h"

static bool
is_nullish(const bson_value_t *v)
{
   return v->value_type == BSON_TYPE_EOD || v->value_type == BSON_TYPE_NULL ||
          v->value_type == BSON_TYPE_UNDEFINED;
}

/* Numeric result of the widest input type: int32 < int64 < double < decimal. */
void
tm_value_set_number(bson_type_t type, long double r, bson_value_t *out)
{
   char buf[64];

   if (type == BSON_TYPE_INT32 && r >= INT32_MIN && r <= INT32_MAX) {
      out->value_type = BSON_TYPE_INT32;
      out->value.v_int32 = (int32_t)r;
   } else if ((type == BSON_TYPE_INT32 || type == BSON_TYPE_INT64) && r >= -9.2e18L &&
              r <= 9.2e18L) {
      out->value_type = BSON_TYPE_INT64;
      out->value.v_int64 = (int64_t)r;
   } else if (type == BSON_TYPE_DECIMAL128) {
      snprintf(buf, sizeof buf, "%.17Lg", r);
      out->value_type = BSON_TYPE_DECIMAL128;
      bson_decimal128_from_string(buf, &out->value.v_decimal128);
   } else {
      out->value_type = BSON_TYPE_DOUBLE;
      out->value.v_double = (double)r;
   }
}

static bson_type_t
wider(bson_type_t a, bson_type_t b)
{
   static const bson_type_t order[] = {BSON_TYPE_INT32, BSON_TYPE_INT64, BSON_TYPE_DOUBLE,
                                       BSON_TYPE_DECIMAL128};
   int ia = 0, ib = 0;

   for (int i = 0; i < 4; i++) {
      ia = order[i] == a ? i : ia;
      ib = order[i] == b ? i : ib;
   }
   return order[ia > ib ? ia : ib];
}

static long double
num(const bson_value_t *v)
{
   return v->value_type == BSON_TYPE_INT64 ? (long double)v->value.v_int64
                                           : (long double)tm_value_as_double(v);
}

/* A number (or a date's milliseconds) as mongod's Value::coerceToLong: doubles truncate,
 * decimals round half to even; out-of-range values clamp here instead of overflowing. */
static int64_t
coerce_to_long(const bson_value_t *v)
{
   long double d;

   switch (v->value_type) {
   case BSON_TYPE_INT32:
      return v->value.v_int32;
   case BSON_TYPE_INT64:
      return v->value.v_int64;
   case BSON_TYPE_DATE_TIME:
      return v->value.v_datetime;
   case BSON_TYPE_DECIMAL128:
      d = nearbyintl(num(v));
      break;
   default:
      d = truncl(num(v));
      break;
   }
   if (isnan(d)) {
      return 0;
   }
   if (d >= 9223372036854775808.0L) {
      return INT64_MAX;
   }
   return d < -9223372036854775808.0L ? INT64_MIN : (int64_t)d;
}

static bool
set_int_or_long(bson_value_t *out, int64_t v)
{
   if (v >= INT32_MIN && v <= INT32_MAX) {
      out->value_type = BSON_TYPE_INT32;
      out->value.v_int32 = (int32_t)v;
   } else {
      out->value_type = BSON_TYPE_INT64;
      out->value.v_int64 = v;
   }
   return true;
}

static bool
set_date(bson_value_t *out, int64_t ms)
{
   out->value_type = BSON_TYPE_DATE_TIME;
   out->value.v_datetime = ms;
   return true;
}

/* Running sums of $add as mongod 6.0 keeps them (its AddState): a long sum while all operands
 * are integers (overflow moves it to double), a double sum, and a decimal one (approximated
 * here with long double). A date counts as its milliseconds without widening the type. */
typedef struct {
   bson_type_t widest;
   int64_t l;
   double d;
   long double x;
   bool is_date;
} add_state_t;

static void
add_one(add_state_t *st, const bson_value_t *v)
{
   bson_type_t before = st->widest;
   int64_t sum;

   if (v->value_type != BSON_TYPE_DATE_TIME) {
      st->widest = wider(st->widest, v->value_type);
   }
   if (before != st->widest && st->widest == BSON_TYPE_DOUBLE) {
      st->d = (double)st->l;
   } else if (before != st->widest && st->widest == BSON_TYPE_DECIMAL128) {
      st->x = before == BSON_TYPE_DOUBLE ? (long double)st->d : (long double)st->l;
   }
   if (st->widest == BSON_TYPE_INT32 || st->widest == BSON_TYPE_INT64) {
      if (!__builtin_add_overflow(st->l, coerce_to_long(v), &sum)) {
         st->l = sum;
         return;
      }
      st->widest = BSON_TYPE_DOUBLE;
      st->d = (double)st->l;
   }
   if (st->widest == BSON_TYPE_DOUBLE) {
      st->d +=
         v->value_type == BSON_TYPE_DATE_TIME ? (double)v->value.v_datetime : tm_value_as_double(v);
   } else {
      st->x += v->value_type == BSON_TYPE_DATE_TIME ? (long double)v->value.v_datetime : num(v);
   }
}

static bool
add_result(const add_state_t *st, bson_value_t *out, bson_error_t *error)
{
   if (!st->is_date) {
      switch (st->widest) {
      case BSON_TYPE_INT32:
         return set_int_or_long(out, st->l);
      case BSON_TYPE_INT64:
         out->value_type = BSON_TYPE_INT64;
         out->value.v_int64 = st->l;
         return true;
      case BSON_TYPE_DOUBLE:
         out->value_type = BSON_TYPE_DOUBLE;
         out->value.v_double = st->d;
         return true;
      default:
         tm_value_set_number(BSON_TYPE_DECIMAL128, st->x, out);
         return true;
      }
   }
   switch (st->widest) {
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
      return set_date(out, st->l);
   case BSON_TYPE_DOUBLE:
      /* Fractions of a millisecond round half away from zero (llround), as mongod does. */
      if (!(st->d >= -9223372036854775808.0 && st->d < 9223372036854775808.0)) {
         return tm_error_set(error, 15, "date overflow in $add");
      }
      return set_date(out, llround(st->d));
   default: {
      bson_value_t x = {.value_type = BSON_TYPE_DECIMAL128};
      tm_value_set_number(BSON_TYPE_DECIMAL128, st->x, &x);
      return set_date(out, coerce_to_long(&x));
   }
   }
}

/* {$add: [...]}: numbers, and at most one date (then the result is a date). */
bool
tm_expr_add(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   add_state_t st = {.widest = BSON_TYPE_INT32};

   for (size_t i = 0; i < n; i++) {
      if (is_nullish(&a[i])) {
         out->value_type = BSON_TYPE_NULL;
         return true;
      }
      if (a[i].value_type == BSON_TYPE_DATE_TIME) {
         if (st.is_date) {
            return tm_error_set(error, 16612, "only one date allowed in an $add expression");
         }
         st.is_date = true;
      } else if (!tm_value_is_number(&a[i])) {
         return tm_error_set(error, 14, "$add only supports numeric or date types, not %s",
                             tm_type_name(a[i].value_type));
      }
      add_one(&st, &a[i]);
   }
   return add_result(&st, out, error);
}

static bool
subtract_numbers(const bson_value_t *l, const bson_value_t *r, bson_value_t *out)
{
   int64_t diff;

   bson_type_t type = wider(l->value_type, r->value_type);

   if (type == BSON_TYPE_DECIMAL128) {
      tm_value_set_number(BSON_TYPE_DECIMAL128, num(l) - num(r), out);
   } else if (type == BSON_TYPE_INT32) {
      set_int_or_long(out, coerce_to_long(l) - coerce_to_long(r));
   } else if (type == BSON_TYPE_INT64 &&
              !__builtin_sub_overflow(coerce_to_long(l), coerce_to_long(r), &diff)) {
      out->value_type = BSON_TYPE_INT64;
      out->value.v_int64 = diff;
   } else {
      /* Doubles, and long differences that overflow. */
      out->value_type = BSON_TYPE_DOUBLE;
      out->value.v_double = tm_value_as_double(l) - tm_value_as_double(r);
   }
   return true;
}

/* {$subtract: [a, b]}: numbers; date - date is an Int64 of milliseconds; date - number is a
 * date (the number truncated to whole milliseconds); number - date is an error. */
bool
tm_expr_subtract(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   const bson_value_t *l = &a[0], *r = &a[1];

   if (tm_value_is_number(l) && tm_value_is_number(r)) {
      return subtract_numbers(l, r, out);
   }
   if (is_nullish(l) || is_nullish(r)) {
      out->value_type = BSON_TYPE_NULL;
      return true;
   }
   if (l->value_type == BSON_TYPE_DATE_TIME &&
       (r->value_type == BSON_TYPE_DATE_TIME || tm_value_is_number(r))) {
      /* Wraps around instead of overflowing (no valid date gets near). */
      int64_t diff = (int64_t)((uint64_t)l->value.v_datetime - (uint64_t)coerce_to_long(r));
      if (r->value_type == BSON_TYPE_DATE_TIME) {
         out->value_type = BSON_TYPE_INT64;
         out->value.v_int64 = diff;
         return true;
      }
      return set_date(out, diff);
   }
   if (l->value_type == BSON_TYPE_DATE_TIME) {
      return tm_error_set(error, 14, "can't $subtract %s from Date", tm_type_name(r->value_type));
   }
   return tm_error_set(error, 14, "can't $subtract %s from %s", tm_type_name(r->value_type),
                       tm_type_name(l->value_type));
}

/* {$multiply: [...]}: numbers only (16555); a long product that overflows goes to double. */
bool
tm_expr_multiply(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   bson_type_t widest = BSON_TYPE_INT32;
   int64_t l = 1;
   double d = 1;
   long double x = 1;

   for (size_t i = 0; i < n; i++) {
      if (is_nullish(&a[i])) {
         out->value_type = BSON_TYPE_NULL;
         return true;
      }
      if (!tm_value_is_number(&a[i])) {
         return tm_error_set(error, 16555, "$multiply only supports numeric types, not %s",
                             tm_type_name(a[i].value_type));
      }
      widest = wider(widest, a[i].value_type);
      x *= num(&a[i]);
      d *= tm_value_as_double(&a[i]);
      if (widest != BSON_TYPE_DECIMAL128 && __builtin_mul_overflow(l, coerce_to_long(&a[i]), &l)) {
         widest = BSON_TYPE_DOUBLE;
      }
   }
   switch (widest) {
   case BSON_TYPE_INT32:
      return set_int_or_long(out, l);
   case BSON_TYPE_INT64:
      out->value_type = BSON_TYPE_INT64;
      out->value.v_int64 = l;
      return true;
   case BSON_TYPE_DOUBLE:
      out->value_type = BSON_TYPE_DOUBLE;
      out->value.v_double = d;
      return true;
   default:
      tm_value_set_number(BSON_TYPE_DECIMAL128, x, out);
      return true;
   }
}

bool
tm_expr_divide(const bson_value_t *a, size_t n, bson_value_t *out, bson_error_t *error)
{
   if (is_nullish(&a[0]) || is_nullish(&a[1])) {
      out->value_type = BSON_TYPE_NULL;
      return true;
   }
   if (!tm_value_is_number(&a[0]) || !tm_value_is_number(&a[1])) {
      return tm_error_set(error, 16609, "$divide only supports numeric types, not %s and %s",
                          tm_type_name(a[0].value_type), tm_type_name(a[1].value_type));
   }
   if (tm_value_as_double(&a[1]) == 0) {
      return tm_error_set(error, 16608, "can't $divide by zero");
   }
   tm_value_set_number(wider(wider(a[0].value_type, a[1].value_type), BSON_TYPE_DOUBLE),
                       num(&a[0]) / num(&a[1]), out);
   return true;
}
