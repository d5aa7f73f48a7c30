/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Matching a value against a parsed $jsonSchema, with the semantics of MongoDB 6.0's
 * translation into match expressions (see jsonschema-private.h): keywords apply only to
 * values of their type, a stated single type switches off keywords of other types, and at
 * the top level only object keywords, logical keywords and enum take effect.
 */
#include <math.h>
#include <string.h>

#include "jsonschema-private.h"
#include "match-private.h"

bool
tm_typeset_has(const tm_typeset_t *set, bson_type_t type)
{
   int bit = type == BSON_TYPE_MINKEY   ? TM_TYPE_BIT_MINKEY
             : type == BSON_TYPE_MAXKEY ? TM_TYPE_BIT_MAXKEY
                                        : (int)type;
   if (set->all_numbers && (type == BSON_TYPE_INT32 || type == BSON_TYPE_INT64 ||
                            type == BSON_TYPE_DOUBLE || type == BSON_TYPE_DECIMAL128)) {
      return true;
   }
   return bit > 0 && bit < 32 && (set->bits & (1u << bit)) != 0;
}

bool
tm_typeset_is_single(const tm_typeset_t *set)
{
   if (set->all_numbers) {
      return set->bits == 0;
   }
   return set->bits != 0 && (set->bits & (set->bits - 1)) == 0;
}

static bool
restrict_has(tm_restrict_t r, bson_type_t type)
{
   switch (r) {
   case TM_R_STRING:
      return type == BSON_TYPE_UTF8;
   case TM_R_ARRAY:
      return type == BSON_TYPE_ARRAY;
   case TM_R_OBJECT:
      return type == BSON_TYPE_DOCUMENT;
   default:
      return type == BSON_TYPE_INT32 || type == BSON_TYPE_INT64 || type == BSON_TYPE_DOUBLE ||
             type == BSON_TYPE_DECIMAL128;
   }
}

/* The one type a single-type set names ("number" stands in as int, as in MongoDB). */
static bson_type_t
single_type(const tm_typeset_t *set)
{
   if (set->all_numbers) {
      return BSON_TYPE_INT32;
   }
   for (int bit = 1; bit < 32; bit++) {
      if (set->bits & (1u << bit)) {
         return bit == TM_TYPE_BIT_MINKEY   ? BSON_TYPE_MINKEY
                : bit == TM_TYPE_BIT_MAXKEY ? BSON_TYPE_MAXKEY
                                            : (bson_type_t)bit;
      }
   }
   return BSON_TYPE_EOD;
}

tm_restrict_mode_t
tm_schema_restriction(const tm_schema_t *s, tm_restrict_t r, const bson_value_t *v)
{
   bool typed = s->has[TM_KW_TYPE] || s->has[TM_KW_BSON_TYPE];
   if (typed && tm_typeset_is_single(&s->types)) {
      if (!restrict_has(r, single_type(&s->types))) {
         return TM_RESTRICT_SKIP;
      }
      return v && restrict_has(r, v->value_type) ? TM_RESTRICT_CHECK : TM_RESTRICT_SILENT;
   }
   return v && restrict_has(r, v->value_type) ? TM_RESTRICT_CHECK : TM_RESTRICT_SKIP;
}

/* Length in code points, as MongoDB counts strings for minLength/maxLength. */
static int64_t
utf8_length(const char *s, uint32_t len)
{
   int64_t n = 0;
   for (uint32_t i = 0; i < len; i++) {
      n += ((unsigned char)s[i] & 0xC0) != 0x80;
   }
   return n;
}

bool
tm_schema_check_scalar(const tm_schema_t *s, tm_kw_t kw, const bson_value_t *v)
{
   int cmp;
   switch (kw) {
   case TM_KW_PATTERN:
      return tm_regex_match(&s->pattern, v);
   case TM_KW_MAX_LENGTH:
      return utf8_length(v->value.v_utf8.str, v->value.v_utf8.len) <= s->max_length;
   case TM_KW_MIN_LENGTH:
      return utf8_length(v->value.v_utf8.str, v->value.v_utf8.len) >= s->min_length;
   case TM_KW_MULTIPLE_OF: {
      double m = tm_value_as_double(&s->kw[TM_KW_MULTIPLE_OF]);
      return fmod(tm_value_as_double(v), m) == 0;
   }
   case TM_KW_MAXIMUM:
      cmp = tm_value_compare(v, &s->kw[TM_KW_MAXIMUM]);
      return s->exclusive_max ? cmp < 0 : cmp <= 0;
   default:
      cmp = tm_value_compare(v, &s->kw[TM_KW_MINIMUM]);
      return s->exclusive_min ? cmp > 0 : cmp >= 0;
   }
}

bool
tm_schema_values_equal(const bson_value_t *a, const bson_value_t *b)
{
   bson_t da, db;
   bson_iter_t ia, ib;
   if (a->value_type == BSON_TYPE_DOCUMENT && b->value_type == BSON_TYPE_DOCUMENT) {
      tm_value_as_bson(a, &da);
      tm_value_as_bson(b, &db);
      if (bson_count_keys(&da) != bson_count_keys(&db)) {
         return false;
      }
      bson_iter_init(&ia, &da);
      while (bson_iter_next(&ia)) {
         if (!bson_iter_init_find(&ib, &db, bson_iter_key(&ia)) ||
             !tm_schema_values_equal(bson_iter_value(&ia), bson_iter_value(&ib))) {
            return false;
         }
      }
      return true;
   }
   if (a->value_type == BSON_TYPE_ARRAY && b->value_type == BSON_TYPE_ARRAY) {
      tm_value_as_bson(a, &da);
      tm_value_as_bson(b, &db);
      bson_iter_init(&ia, &da);
      bson_iter_init(&ib, &db);
      for (;;) {
         bool na = bson_iter_next(&ia), nb = bson_iter_next(&ib);
         if (!na || !nb) {
            return na == nb;
         }
         if (!tm_schema_values_equal(bson_iter_value(&ia), bson_iter_value(&ib))) {
            return false;
         }
      }
   }
   return tm_value_equal(a, b);
}

bool
tm_schema_first_duplicate(const bson_value_t *arr, bson_value_t *dup)
{
   bson_t a;
   bson_iter_t it, seen;
   tm_value_as_bson(arr, &a);
   bson_iter_init(&it, &a);
   while (bson_iter_next(&it)) {
      bson_iter_init(&seen, &a);
      while (bson_iter_next(&seen) && strcmp(bson_iter_key(&seen), bson_iter_key(&it)) != 0) {
         if (tm_schema_values_equal(bson_iter_value(&seen), bson_iter_value(&it))) {
            *dup = *bson_iter_value(&it);
            return true;
         }
      }
   }
   return false;
}

/* items / additionalItems: the first element from `from` that `sub` rejects, or -1. */
static int32_t
first_mismatch(const tm_schema_t *sub, bool none_allowed, const bson_t *arr, uint32_t from)
{
   bson_iter_t it;
   uint32_t i = 0;
   bson_iter_init(&it, arr);
   for (; bson_iter_next(&it); i++) {
      if (i >= from && (none_allowed || !tm_schema_match_value(sub, bson_iter_value(&it)))) {
         return (int32_t)i;
      }
   }
   return -1;
}

bool
tm_schema_check_array(const tm_schema_t *s, tm_kw_t kw, const bson_value_t *v,
                      int32_t *failing_index)
{
   bson_t arr;
   bson_value_t dup;
   tm_value_as_bson(v, &arr);
   int64_t n = (int64_t)bson_count_keys(&arr);
   *failing_index = -1;
   switch (kw) {
   case TM_KW_MIN_ITEMS:
      return n >= s->min_items;
   case TM_KW_MAX_ITEMS:
      return n <= s->max_items;
   case TM_KW_UNIQUE_ITEMS:
      return !s->unique_items || !tm_schema_first_duplicate(v, &dup);
   case TM_KW_ITEMS:
      if (!s->items_is_list) {
         *failing_index = first_mismatch(s->items, false, &arr, 0);
         return *failing_index < 0;
      }
      for (size_t i = 0; i < s->item_list.n && (int64_t)i < n; i++) {
         bson_iter_t it;
         char key[16];
         snprintf(key, sizeof key, "%zu", i);
         if (bson_iter_init_find(&it, &arr, key) &&
             !tm_schema_match_value(s->item_list.items[i], bson_iter_value(&it))) {
            *failing_index = (int32_t)i;
            return false;
         }
      }
      return true;
   default: /* additionalItems: only after an items list */
      if (!s->items_is_list || (!s->additional_items && !s->additional_items_false)) {
         return true;
      }
      *failing_index = first_mismatch(s->additional_items, s->additional_items_false, &arr,
                                      (uint32_t)s->item_list.n);
      return *failing_index < 0;
   }
}

bool
tm_schema_is_property(const tm_schema_t *s, const char *name)
{
   for (size_t i = 0; i < s->n_props; i++) {
      if (strcmp(s->props[i].name, name) == 0) {
         return true;
      }
   }
   return false;
}

bool
tm_schema_is_required(const tm_schema_t *s, const char *name)
{
   for (size_t r = 0; r < s->n_required; r++) {
      if (strcmp(s->required[r], name) == 0) {
         return true;
      }
   }
   return false;
}

bool
tm_schema_check_allowed(const tm_schema_t *s, const bson_t *obj)
{
   bson_iter_t it;
   bson_iter_init(&it, obj);
   while (bson_iter_next(&it)) {
      bson_value_t name = {.value_type = BSON_TYPE_UTF8};
      name.value.v_utf8.str = (char *)bson_iter_key(&it);
      name.value.v_utf8.len = (uint32_t)strlen(name.value.v_utf8.str);
      bool other = !tm_schema_is_property(s, name.value.v_utf8.str);
      for (size_t i = 0; i < s->n_patterns; i++) {
         if (tm_regex_match(&s->patterns[i].re, &name)) {
            other = false;
            if (!tm_schema_match_value(s->patterns[i].schema, bson_iter_value(&it))) {
               return false;
            }
         }
      }
      if (other && (s->additional_props_false ||
                    (s->additional_props &&
                     !tm_schema_match_value(s->additional_props, bson_iter_value(&it))))) {
         return false;
      }
   }
   return true;
}

bool
tm_schema_check_object(const tm_schema_t *s, tm_kw_t kw, const bson_t *obj)
{
   bson_iter_t it;
   switch (kw) {
   case TM_KW_PROPERTIES:
      for (size_t i = 0; i < s->n_props; i++) {
         bool present = bson_iter_init_find(&it, obj, s->props[i].name);
         if ((present || tm_schema_is_required(s, s->props[i].name)) &&
             !tm_schema_match_value(s->props[i].schema, present ? bson_iter_value(&it) : NULL)) {
            return false;
         }
      }
      return true;
   case TM_KW_ADDITIONAL_PROPERTIES:
      return tm_schema_check_allowed(s, obj);
   case TM_KW_REQUIRED:
      for (size_t r = 0; r < s->n_required; r++) {
         if (!bson_has_field(obj, s->required[r])) {
            return false;
         }
      }
      return true;
   case TM_KW_MIN_PROPERTIES:
      return (int64_t)bson_count_keys(obj) >= s->min_props;
   default:
      return (int64_t)bson_count_keys(obj) <= s->max_props;
   }
}

bool
tm_schema_dep_holds(const tm_schema_dep_t *d, const bson_value_t *v)
{
   bson_t obj;
   bson_iter_t it;
   if (!v || v->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(v, &obj) ||
       !bson_has_field(&obj, d->name)) {
      return true; /* the condition does not hold */
   }
   if (d->schema) {
      return tm_schema_match_value(d->schema, v);
   }
   bson_iter_init(&it, &d->names);
   while (bson_iter_next(&it)) {
      if (!bson_has_field(&obj, bson_iter_utf8(&it, NULL))) {
         return false;
      }
   }
   return true;
}

bool
tm_schema_enum_has(const tm_schema_t *s, const bson_value_t *v)
{
   bson_t arr;
   bson_iter_t it;
   tm_value_as_bson(&s->kw[TM_KW_ENUM], &arr);
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      /* At the top level only documents can equal the (root) document. */
      if ((!s->top || BSON_ITER_HOLDS_DOCUMENT(&it)) &&
          tm_schema_values_equal(bson_iter_value(&it), v)) {
         return true;
      }
   }
   return false;
}

static bool
match_restricted(const tm_schema_t *s, const bson_value_t *v)
{
   static const struct {
      tm_kw_t kw;
      tm_restrict_t r;
   } order[] = {
      {TM_KW_PATTERN, TM_R_STRING},
      {TM_KW_MAX_LENGTH, TM_R_STRING},
      {TM_KW_MIN_LENGTH, TM_R_STRING},
      {TM_KW_MULTIPLE_OF, TM_R_NUMBER},
      {TM_KW_MAXIMUM, TM_R_NUMBER},
      {TM_KW_MINIMUM, TM_R_NUMBER},
      {TM_KW_MIN_ITEMS, TM_R_ARRAY},
      {TM_KW_MAX_ITEMS, TM_R_ARRAY},
      {TM_KW_UNIQUE_ITEMS, TM_R_ARRAY},
      {TM_KW_ITEMS, TM_R_ARRAY},
      {TM_KW_ADDITIONAL_ITEMS, TM_R_ARRAY},
      {TM_KW_PROPERTIES, TM_R_OBJECT},
      {TM_KW_ADDITIONAL_PROPERTIES, TM_R_OBJECT},
      {TM_KW_REQUIRED, TM_R_OBJECT},
      {TM_KW_MIN_PROPERTIES, TM_R_OBJECT},
      {TM_KW_MAX_PROPERTIES, TM_R_OBJECT},
   };
   for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      tm_kw_t kw = order[i].kw;
      bool present =
         s->has[kw] || (kw == TM_KW_ADDITIONAL_PROPERTIES && s->has[TM_KW_PATTERN_PROPERTIES]);
      tm_restrict_mode_t mode;
      bson_t obj;
      int32_t index;
      if (!present || (s->top && order[i].r != TM_R_OBJECT)) {
         continue; /* absent, or without effect on the document itself */
      }
      mode = s->top ? TM_RESTRICT_CHECK : tm_schema_restriction(s, order[i].r, v);
      if (mode == TM_RESTRICT_SILENT) {
         return false;
      }
      if (mode == TM_RESTRICT_SKIP) {
         continue;
      }
      if ((order[i].r == TM_R_OBJECT &&
           (!tm_value_as_bson(v, &obj) || !tm_schema_check_object(s, kw, &obj))) ||
          (order[i].r == TM_R_ARRAY && !tm_schema_check_array(s, kw, v, &index)) ||
          (order[i].r < TM_R_ARRAY && !tm_schema_check_scalar(s, kw, v))) {
         return false;
      }
   }
   return true;
}

static bool
match_list(const tm_schema_list_t *l, const bson_value_t *v, size_t *n_matched)
{
   *n_matched = 0;
   for (size_t i = 0; i < l->n; i++) {
      *n_matched += tm_schema_match_value(l->items[i], v);
   }
   return *n_matched == l->n;
}

bool
tm_schema_match_value(const tm_schema_t *s, const bson_value_t *v)
{
   size_t n;
   bool typed = s->has[TM_KW_TYPE] || s->has[TM_KW_BSON_TYPE];
   if (s->top && typed && !tm_typeset_has(&s->types, BSON_TYPE_DOCUMENT)) {
      return false; /* only documents are stored */
   }
   if (!match_restricted(s, v)) {
      return false;
   }
   for (size_t i = 0; i < s->n_deps; i++) {
      if (!tm_schema_dep_holds(&s->deps[i], v)) {
         return false;
      }
   }
   if ((s->all_of.n && !match_list(&s->all_of, v, &n)) ||
       (s->any_of.n && (match_list(&s->any_of, v, &n), n == 0)) ||
       (s->one_of.n && (match_list(&s->one_of, v, &n), n != 1)) ||
       (s->not_schema && tm_schema_match_value(s->not_schema, v)) ||
       (s->has[TM_KW_ENUM] && (!v || !tm_schema_enum_has(s, v)))) {
      return false;
   }
   return s->top || !typed || (v && tm_typeset_has(&s->types, v->value_type));
}

bool
tm_schema_match_doc(const tm_schema_t *s, const bson_t *doc)
{
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   return tm_schema_match_value(s, &v);
}
