/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Validation of update operands: $push modifiers, $pull conditions, $currentDate types,
 * $rename targets. Messages follow MongoDB 6.0.
 */
#include <math.h>
#include <string.h>

#include "update-private.h"

static bool
is_integral(const bson_value_t *v, int64_t *out)
{
   double d;

   if (!tm_value_is_number(v)) {
      return false;
   }
   d = tm_value_as_double(v);
   if (d != floor(d) || fabs(d) > 9.2e18) {
      return false;
   }
   *out = v->value_type == BSON_TYPE_INT64 ? v->value.v_int64 : (int64_t)d;
   return true;
}

static bool
numeric_operand(tm_action_t *a, const char *field, bson_error_t *error)
{
   char *json;

   if (tm_value_is_number(&a->operand)) {
      return true;
   }
   json = tm_value_to_json(&a->operand);
   tm_error_set(error, 14, "Cannot %s with non-numeric argument: {%s: %s}",
                a->op == TM_U_INC ? "increment" : "multiply", field, json);
   bson_free(json);
   return false;
}

static bool
current_date_operand(tm_action_t *a, bson_error_t *error)
{
   bson_t doc;
   bson_value_t type;

   if (a->operand.value_type == BSON_TYPE_BOOL) {
      return true;
   }
   if (a->operand.value_type != BSON_TYPE_DOCUMENT) {
      return tm_error_set(error, 2,
                          "%s is not valid type for $currentDate. Please use a boolean ('true') "
                          "or a $type expression ({$type: 'timestamp/date'}).",
                          tm_type_name(a->operand.value_type));
   }
   tm_value_as_bson(&a->operand, &doc);
   if (bson_count_keys(&doc) != 1 || !tm_path_get(&doc, "$type", &type) ||
       type.value_type != BSON_TYPE_UTF8 ||
       (strcmp(type.value.v_utf8.str, "date") != 0 &&
        strcmp(type.value.v_utf8.str, "timestamp") != 0)) {
      return tm_error_set(error, 2,
                          "The '$type' string field is required to be 'date' or 'timestamp': "
                          "{$currentDate: {field : {$type: 'date'}}}");
   }
   a->timestamp = strcmp(type.value.v_utf8.str, "timestamp") == 0;
   return true;
}

static bool
rename_operand(tm_action_t *a, bson_error_t *error)
{
   const char *from = a->from.dotted, *to = a->path.dotted;

   for (size_t i = 0; i < a->from.n; i++) {
      if (a->from.parts[i][0] == '$') {
         return tm_error_set(error, 2, "The source field for $rename may not be dynamic: %s", from);
      }
   }
   for (size_t i = 0; i < a->path.n; i++) {
      if (a->path.parts[i][0] == '$') {
         return tm_error_set(error, 2, "The destination field for $rename may not be dynamic: %s",
                             to);
      }
   }
   if (strcmp(from, to) == 0) {
      return tm_error_set(
         error, 2, "The source and target field for $rename must differ: %s: \"%s\"", from, to);
   }
   if ((strncmp(from, to, strlen(from)) == 0 && to[strlen(from)] == '.') ||
       (strncmp(to, from, strlen(to)) == 0 && from[strlen(to)] == '.')) {
      return tm_error_set(error, 2,
                          "The source and target field for $rename must not be on the same path: "
                          "%s: \"%s\"",
                          from, to);
   }
   return true;
}

static bool
push_sort(tm_action_t *a, const bson_value_t *v, bson_error_t *error)
{
   bson_t spec;

   a->has_sort = true;
   if (tm_value_is_number(v) && fabs(tm_value_as_double(v)) == 1) {
      a->sort_dir = tm_value_as_double(v) > 0 ? 1 : -1;
      return true;
   }
   if (v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &spec) && !bson_empty(&spec)) {
      a->sort_by = tm_sort_new(&spec, NULL);
      if (a->sort_by) {
         return true;
      }
   }
   return tm_error_set(error, 2,
                       "The $sort is invalid: use 1/-1 to sort the whole element, or {field:1/-1} "
                       "to sort embedded fields");
}

static bool
push_modifier(tm_action_t *a, const char *name, const bson_value_t *v, bson_error_t *error)
{
   if (strcmp(name, "$each") == 0) {
      if (v->value_type != BSON_TYPE_ARRAY) {
         return tm_error_set(error, 2,
                             "The argument to $each in %s must be an array but it was of type: %s",
                             a->op_name, tm_type_name(v->value_type));
      }
      a->has_each = true;
      a->each = *v;
      return true;
   }
   if (a->op == TM_U_ADD_TO_SET) {
      return tm_error_set(error, 2, "Found unexpected fields after $each in $addToSet: %s", name);
   }
   if (strcmp(name, "$slice") == 0) {
      a->has_slice = true;
      return is_integral(v, &a->slice) ||
             tm_error_set(error, 2,
                          "The value for $slice must be an integer value but was given type: %s",
                          tm_type_name(v->value_type));
   }
   if (strcmp(name, "$position") == 0) {
      a->has_position = true;
      return is_integral(v, &a->position) ||
             tm_error_set(error, 2,
                          "The value for $position must be an integer value, not of type: %s",
                          tm_type_name(v->value_type));
   }
   if (strcmp(name, "$sort") == 0) {
      return push_sort(a, v, error);
   }
   return tm_error_set(error, 2, "Unrecognized clause in $push: %s", name);
}

static bool
push_operand(tm_action_t *a, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;

   if (a->operand.value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(&a->operand, &doc) ||
       !bson_iter_init(&it, &doc) || !bson_iter_next(&it) ||
       strcmp(bson_iter_key(&it), "$each") != 0) {
      return true; /* a plain value to add */
   }
   do {
      if (!push_modifier(a, bson_iter_key(&it), bson_iter_value(&it), error)) {
         return false;
      }
   } while (bson_iter_next(&it));
   return true;
}

static bool
pull_operand(tm_action_t *a, bson_error_t *error)
{
   bson_t doc;

   if (a->operand.value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(&a->operand, &doc)) {
      /* {$gte: 5} is tested against each element; {a: 1} is a query on document elements. */
      a->cond_doc_mode = !tm_is_operator_doc(&a->operand);
      a->cond =
         a->cond_doc_mode ? tm_match_parse_doc(&doc, error) : tm_match_parse_value(&doc, error);
   } else {
      a->cond = tm_match_value_eq(&a->operand, error);
   }
   return a->cond != NULL;
}

static bool
bit_operand(tm_action_t *a, const char *field, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;

   if (a->operand.value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(&a->operand, &doc)) {
      return tm_error_set(error, 2,
                          "The $bit modifier is not compatible with a %s. You must pass in an "
                          "embedded document: {$bit: {field: {and/or/xor: #}}",
                          tm_type_name(a->operand.value_type));
   }
   bson_iter_init(&it, &doc);
   while (bson_iter_next(&it)) {
      const char *op = bson_iter_key(&it);
      if (strcmp(op, "and") != 0 && strcmp(op, "or") != 0 && strcmp(op, "xor") != 0) {
         return tm_error_set(error, 2,
                             "The $bit modifier only supports 'and', 'or', and 'xor', not '%s' "
                             "which is an unknown operator: {%s: ...}",
                             op, op);
      }
      if (!BSON_ITER_HOLDS_INT32(&it) && !BSON_ITER_HOLDS_INT64(&it)) {
         return tm_error_set(error, 2,
                             "The $bit modifier field must be an Integer(32/64 bit); a '%s' is "
                             "not supported here: {%s: ...}",
                             tm_type_name(bson_iter_type(&it)), op);
      }
   }
   if (bson_empty(&doc)) {
      return tm_error_set(error, 2,
                          "You must pass in at least one bitwise operation. The format is: "
                          "{$bit: {field: {and/or/xor: #}}");
   }
   return true;
}

bool
tm_action_parse_operand(tm_action_t *a, const char *field, bson_error_t *error)
{
   switch (a->op) {
   case TM_U_INC:
   case TM_U_MUL:
      return numeric_operand(a, field, error);
   case TM_U_CURRENT_DATE:
      return current_date_operand(a, error);
   case TM_U_RENAME:
      return rename_operand(a, error);
   case TM_U_PUSH:
   case TM_U_ADD_TO_SET:
      return push_operand(a, error);
   case TM_U_PULL:
      return pull_operand(a, error);
   case TM_U_BIT:
      return bit_operand(a, field, error);
   case TM_U_PULL_ALL:
      return a->operand.value_type == BSON_TYPE_ARRAY ||
             tm_error_set(error, 2, "$pullAll requires an array argument but was given a %s",
                          tm_type_name(a->operand.value_type));
   case TM_U_POP:
      if (!tm_value_is_number(&a->operand) || fabs(tm_value_as_double(&a->operand)) != 1) {
         char *json = tm_value_to_json(&a->operand);
         tm_error_set(error, 2, "$pop expects 1 or -1, found: %s", json);
         bson_free(json);
         return false;
      }
      a->pop = tm_value_as_double(&a->operand) > 0 ? 1 : -1;
      return true;
   default:
      return true;
   }
}
