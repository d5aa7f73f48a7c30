/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Field operators: $set $setOnInsert $unset $inc $mul $min $max $currentDate and the
 * destination side of $rename.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "update-private.h"

static bool
set_or_create(tm_apply_t *ctx, tm_tnode_t *container, const char *key, tm_tnode_t *node,
              const bson_value_t *value)
{
   if (!node) {
      node = tm_apply_create(ctx, container, key);
      if (!node) {
         return false;
      }
      tm_tree_set_value(node, value);
      return true;
   }
   tm_apply_set(node, value);
   return true;
}

static void
to_decimal(double d, bson_value_t *out)
{
   char buf[64];

   /* Decimal arithmetic goes through double: precise enough for a test server. */
   snprintf(buf, sizeof buf, "%.17g", d);
   out->value_type = BSON_TYPE_DECIMAL128;
   bson_decimal128_from_string(buf, &out->value.v_decimal128);
}

/* x + y or x * y with MongoDB's type promotion; false on int64 overflow. */
static bool
arith(const bson_value_t *x, const bson_value_t *y, bool mul, bson_value_t *out)
{
   bson_type_t tx = x->value_type, ty = y->value_type;
   int64_t a, b, r;

   if (tx == BSON_TYPE_DECIMAL128 || ty == BSON_TYPE_DECIMAL128) {
      double dx = tm_value_as_double(x), dy = tm_value_as_double(y);
      to_decimal(mul ? dx * dy : dx + dy, out);
      return true;
   }
   if (tx == BSON_TYPE_DOUBLE || ty == BSON_TYPE_DOUBLE) {
      double dx = tm_value_as_double(x), dy = tm_value_as_double(y);
      out->value_type = BSON_TYPE_DOUBLE;
      out->value.v_double = mul ? dx * dy : dx + dy;
      return true;
   }
   a = tx == BSON_TYPE_INT32 ? x->value.v_int32 : x->value.v_int64;
   b = ty == BSON_TYPE_INT32 ? y->value.v_int32 : y->value.v_int64;
   if (mul ? __builtin_mul_overflow(a, b, &r) : __builtin_add_overflow(a, b, &r)) {
      return false;
   }
   /* Two int32s stay int32 unless the result overflows, which promotes it to int64. */
   if (tx == BSON_TYPE_INT32 && ty == BSON_TYPE_INT32 && r >= INT32_MIN && r <= INT32_MAX) {
      out->value_type = BSON_TYPE_INT32;
      out->value.v_int32 = (int32_t)r;
   } else {
      out->value_type = BSON_TYPE_INT64;
      out->value.v_int64 = r;
   }
   return true;
}

static bool
op_arith(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
         tm_tnode_t *node)
{
   bool mul = act->op == TM_U_MUL;
   bson_value_t result;

   if (!node) {
      /* $mul on a missing field creates 0 of the operand's numeric type. */
      result = act->operand;
      if (mul) {
         if (!arith(&act->operand, &(bson_value_t){.value_type = BSON_TYPE_INT32}, true, &result)) {
            return false;
         }
      }
      return set_or_create(ctx, container, key, NULL, &result);
   }
   if (!tm_value_is_number(&node->value)) {
      char *id = tm_apply_id_json(ctx), *path = tm_tnode_path(node);
      tm_error_set(ctx->error, 14,
                   "Cannot apply %s to a value of non-numeric type. %s has the field '%s' of "
                   "non-numeric type %s",
                   act->op_name, id, key, tm_type_name(node->value.value_type));
      bson_free(id);
      bson_free(path);
      return false;
   }
   if (!arith(&node->value, &act->operand, mul, &result)) {
      char *id = tm_apply_id_json(ctx), *cur = tm_value_to_json(&node->value);
      tm_error_set(ctx->error, 2,
                   "Failed to apply %s operations to current value (%s) for document %s",
                   act->op_name, cur, id);
      bson_free(id);
      bson_free(cur);
      return false;
   }
   tm_apply_set(node, &result);
   return true;
}

static bool
op_min_max(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
           tm_tnode_t *node)
{
   bson_t tmp;
   bson_value_t cur;
   int r;

   if (!node) {
      return set_or_create(ctx, container, key, NULL, &act->operand);
   }
   tm_tree_value(node, &tmp, &cur);
   r = tm_value_compare(&act->operand, &cur);
   bson_destroy(&tmp);
   if ((act->op == TM_U_MIN && r < 0) || (act->op == TM_U_MAX && r > 0)) {
      tm_apply_set(node, &act->operand);
   }
   return true;
}

static bool
op_current_date(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
                tm_tnode_t *node)
{
   struct timespec ts;
   bson_value_t v;

   clock_gettime(CLOCK_REALTIME, &ts);
   if (act->timestamp) {
      v.value_type = BSON_TYPE_TIMESTAMP;
      v.value.v_timestamp.timestamp = (uint32_t)ts.tv_sec;
      v.value.v_timestamp.increment = 1;
   } else {
      v.value_type = BSON_TYPE_DATE_TIME;
      v.value.v_datetime = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
   }
   return set_or_create(ctx, container, key, node, &v);
}

static bool
op_unset(tm_apply_t *ctx, tm_tnode_t *container, const char *key, tm_tnode_t *node)
{
   size_t idx;

   if (!node) {
      return true;
   }
   if (container->value.value_type == BSON_TYPE_ARRAY) {
      /* Unsetting an array element leaves a null in its place, as MongoDB does. */
      bson_value_t null_v = {.value_type = BSON_TYPE_NULL};
      tm_apply_set(node, &null_v);
      return true;
   }
   tm_tree_child(container, key, &idx);
   tm_apply_remove(ctx, container, idx);
   return true;
}

/* Moves the detached $rename source (ctx->moving) to container[key]. */
static bool
op_rename_dest(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
               tm_tnode_t *node)
{
   tm_tnode_t *src = ctx->moving;

   if (container->value.value_type == BSON_TYPE_ARRAY) {
      return tm_error_set(ctx->error, 2,
                          "The destination field cannot be an array element, '%s' in doc with "
                          "%s",
                          act->path.dotted, act->path.dotted);
   }
   if (!node) {
      node = tm_apply_create(ctx, container, key);
      if (!node) {
         return false;
      }
   } else {
      tm_tree_mark(node, TM_MARK_SET);
   }
   /* Take over the source's content: its value and, if expanded, its kids. */
   tm_tree_set_value(node, &src->value);
   node->expanded = src->expanded;
   node->kids = src->kids;
   node->n = src->n;
   node->cap = src->cap;
   for (size_t i = 0; i < node->n; i++) {
      node->kids[i]->parent = node;
   }
   src->kids = NULL;
   src->n = src->cap = 0;
   src->expanded = false;
   return true;
}

/* $bit: and / or / xor in the order given; int32 stays int32 unless an int64 is involved. */
static bool
op_bit(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
       tm_tnode_t *node)
{
   bson_value_t r = {.value_type = BSON_TYPE_INT32};
   bson_t ops;
   bson_iter_t it;

   if (node) {
      if (node->value.value_type != BSON_TYPE_INT32 && node->value.value_type != BSON_TYPE_INT64) {
         char *id = tm_apply_id_json(ctx);
         tm_error_set(ctx->error, 2,
                      "Cannot apply $bit to a value of non-integral type.%s has the field %s of "
                      "non-integer type %s",
                      id, key, tm_type_name(node->value.value_type));
         bson_free(id);
         return false;
      }
      r = node->value;
   }
   tm_value_as_bson(&act->operand, &ops);
   bson_iter_init(&it, &ops);
   while (bson_iter_next(&it)) {
      int64_t x = r.value_type == BSON_TYPE_INT32 ? r.value.v_int32 : r.value.v_int64;
      int64_t y = BSON_ITER_HOLDS_INT32(&it) ? bson_iter_int32(&it) : bson_iter_int64(&it);
      int64_t z = bson_iter_key(&it)[0] == 'a' ? (x & y)
                                               : (bson_iter_key(&it)[0] == 'o' ? (x | y) : (x ^ y));
      if (r.value_type == BSON_TYPE_INT32 && BSON_ITER_HOLDS_INT32(&it)) {
         r.value.v_int32 = (int32_t)z;
      } else {
         r.value_type = BSON_TYPE_INT64;
         r.value.v_int64 = z;
      }
   }
   return set_or_create(ctx, container, key, node, &r);
}

bool
tm_apply_scalar_op(tm_apply_t *ctx, const tm_action_t *act, tm_tnode_t *container, const char *key,
                   tm_tnode_t *node)
{
   switch (act->op) {
   case TM_U_SET:
   case TM_U_SET_ON_INSERT:
      return set_or_create(ctx, container, key, node, &act->operand);
   case TM_U_UNSET:
      return op_unset(ctx, container, key, node);
   case TM_U_INC:
   case TM_U_MUL:
      return op_arith(ctx, act, container, key, node);
   case TM_U_MIN:
   case TM_U_MAX:
      return op_min_max(ctx, act, container, key, node);
   case TM_U_CURRENT_DATE:
      return op_current_date(ctx, act, container, key, node);
   case TM_U_RENAME:
      return op_rename_dest(ctx, act, container, key, node);
   case TM_U_BIT:
      return op_bit(ctx, act, container, key, node);
   default:
      return tm_error_set(ctx->error, 2, "%s is not a field operator", act->op_name);
   }
}
