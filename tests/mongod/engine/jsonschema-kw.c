/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing the compound $jsonSchema keywords: array keywords (minItems, maxItems, uniqueItems,
 * items, additionalItems), object keywords (required, properties, patternProperties,
 * additionalProperties, minProperties, maxProperties, dependencies) and logical keywords
 * (allOf, anyOf, oneOf, not, enum), each group in MongoDB 6.0's order with its messages.
 */
#include <math.h>
#include <string.h>

#include "jsonschema-private.h"
#include "match-private.h"

static const char *
kw(tm_kw_t k)
{
   return tm_kw_name(k);
}

bool
tm_schema_parse_count(const tm_schema_t *s, tm_kw_t k, int64_t *out, bson_error_t *error)
{
   const bson_value_t *v = &s->kw[k];
   char *json = tm_value_to_json(v);
   bool ok = false;
   if (!tm_value_is_number(v)) {
      tm_error_set(error, 9, "Expected a number in: %s: %s", kw(k), json);
   } else if (v->value_type == BSON_TYPE_DOUBLE && v->value.v_double != floor(v->value.v_double)) {
      tm_error_set(error, 9, "Expected an integer: %s: %s", kw(k), json);
   } else if (tm_value_as_double(v) >= 9.2233720368547758e18 ||
              tm_value_as_double(v) < -9.2233720368547758e18) {
      tm_error_set(error, 9, "Cannot represent as a 64-bit integer: %s: %s", kw(k), json);
   } else if (tm_value_as_double(v) < 0) {
      tm_error_set(error, 9, "Expected a positive number in: %s: %s", kw(k), json);
   } else {
      *out = v->value_type == BSON_TYPE_INT64   ? v->value.v_int64
             : v->value_type == BSON_TYPE_INT32 ? v->value.v_int32
                                                : (int64_t)tm_value_as_double(v);
      ok = true;
   }
   bson_free(json);
   return ok;
}

/* A list of subschemas (allOf, anyOf, oneOf, items as an array). */
static bool
parse_list(const tm_schema_t *s, tm_kw_t k, bool top, tm_schema_list_t *l, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;
   tm_value_as_bson(&s->kw[k], &arr);
   l->items = bson_malloc0((bson_count_keys(&arr) + 1) * sizeof(tm_schema_t *));
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         if (k == TM_KW_ITEMS) {
            return tm_error_set(error, 14,
                                "$jsonSchema keyword 'items' requires that each "
                                "element of the array is an object, but found a %s",
                                tm_type_name(bson_iter_type(&it)));
         }
         return tm_error_set(error, 14,
                             "$jsonSchema keyword '%s' must be an array of objects, "
                             "but found an element of type %s",
                             kw(k), tm_type_name(bson_iter_type(&it)));
      }
      l->items[l->n] = tm_schema_parse_sub(bson_iter_value(&it), top, error);
      if (!l->items[l->n]) {
         return false;
      }
      l->n++;
   }
   return true;
}

bool
tm_schema_parse_items(tm_schema_t *s, bson_error_t *error)
{
   if ((s->has[TM_KW_MIN_ITEMS] &&
        !tm_schema_parse_count(s, TM_KW_MIN_ITEMS, &s->min_items, error)) ||
       (s->has[TM_KW_MAX_ITEMS] &&
        !tm_schema_parse_count(s, TM_KW_MAX_ITEMS, &s->max_items, error))) {
      return false;
   }
   if (s->has[TM_KW_UNIQUE_ITEMS]) {
      if (s->kw[TM_KW_UNIQUE_ITEMS].value_type != BSON_TYPE_BOOL) {
         return tm_error_set(error, 14, "$jsonSchema keyword 'uniqueItems' must be a boolean");
      }
      s->unique_items = s->kw[TM_KW_UNIQUE_ITEMS].value.v_bool;
   }
   const bson_value_t *items = &s->kw[TM_KW_ITEMS];
   if (s->has[TM_KW_ITEMS]) {
      if (items->value_type == BSON_TYPE_ARRAY) {
         s->items_is_list = true;
         if (!parse_list(s, TM_KW_ITEMS, false, &s->item_list, error)) {
            return false;
         }
      } else if (items->value_type == BSON_TYPE_DOCUMENT) {
         if (!(s->items = tm_schema_parse_sub(items, false, error))) {
            return false;
         }
      } else {
         return tm_error_set(error, 14,
                             "$jsonSchema keyword 'items' must be an array or an "
                             "object, not %s",
                             tm_type_name(items->value_type));
      }
   }
   const bson_value_t *extra = &s->kw[TM_KW_ADDITIONAL_ITEMS];
   if (!s->has[TM_KW_ADDITIONAL_ITEMS]) {
      return true;
   }
   if (extra->value_type == BSON_TYPE_BOOL) {
      s->additional_items_false = !extra->value.v_bool;
      return true;
   }
   if (extra->value_type != BSON_TYPE_DOCUMENT) {
      return tm_error_set(error, 14,
                          "$jsonSchema keyword 'additionalItems' must be either an "
                          "object or a boolean, but got a %s",
                          tm_type_name(extra->value_type));
   }
   return (s->additional_items = tm_schema_parse_sub(extra, false, error)) != NULL;
}

static int
cmp_names(const void *a, const void *b)
{
   return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool
parse_required(tm_schema_t *s, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;
   const bson_value_t *v = &s->kw[TM_KW_REQUIRED];
   if (v->value_type != BSON_TYPE_ARRAY) {
      return tm_error_set(error, 14,
                          "$jsonSchema keyword 'required' must be an array, but "
                          "found an element of type %s",
                          tm_type_name(v->value_type));
   }
   tm_value_as_bson(v, &arr);
   s->required = bson_malloc0((bson_count_keys(&arr) + 1) * sizeof(char *));
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_UTF8(&it)) {
         return tm_error_set(error, 14,
                             "$jsonSchema keyword 'required' must be an array of "
                             "strings, but found an element of type: %s",
                             tm_type_name(bson_iter_type(&it)));
      }
      s->required[s->n_required++] = bson_iter_utf8(&it, NULL);
   }
   qsort(s->required, s->n_required, sizeof(char *), cmp_names);
   for (size_t i = 1; i < s->n_required; i++) {
      if (strcmp(s->required[i - 1], s->required[i]) == 0) {
         return tm_error_set(error, 9,
                             "$jsonSchema keyword 'required' array cannot contain "
                             "duplicate values");
      }
   }
   if (s->n_required == 0) {
      return tm_error_set(error, 9, "$jsonSchema keyword 'required' cannot be an empty array");
   }
   return true;
}

/* The keyword's value as a document (a borrowed view), or 14 "must be an object". */
static bool
kw_object(const tm_schema_t *s, tm_kw_t k, bson_t *obj, bson_error_t *error)
{
   if (s->kw[k].value_type != BSON_TYPE_DOCUMENT) {
      return tm_error_set(error, 14, "$jsonSchema keyword '%s' must be an object", kw(k));
   }
   return tm_value_as_bson(&s->kw[k], obj);
}

static bool
parse_properties(tm_schema_t *s, bson_error_t *error)
{
   bson_t obj;
   bson_iter_t it;
   if (!kw_object(s, TM_KW_PROPERTIES, &obj, error)) {
      return false;
   }
   s->props = bson_malloc0((bson_count_keys(&obj) + 1) * sizeof *s->props);
   bson_iter_init(&it, &obj);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         return tm_error_set(error, 14,
                             "Nested schema for $jsonSchema property '%s' must be "
                             "an object",
                             bson_iter_key(&it));
      }
      tm_schema_prop_t *p = &s->props[s->n_props];
      p->name = bson_iter_key(&it);
      if (!(p->schema = tm_schema_parse_sub(bson_iter_value(&it), false, error))) {
         return false;
      }
      s->n_props++;
   }
   return true;
}

static bool
parse_pattern_properties(tm_schema_t *s, bson_error_t *error)
{
   bson_t obj;
   bson_iter_t it;
   if (!kw_object(s, TM_KW_PATTERN_PROPERTIES, &obj, error)) {
      return false;
   }
   s->patterns = bson_malloc0((bson_count_keys(&obj) + 1) * sizeof *s->patterns);
   bson_iter_init(&it, &obj);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         return tm_error_set(error, 14,
                             "$jsonSchema keyword 'patternProperties' has property "
                             "'%s' which is not an object",
                             bson_iter_key(&it));
      }
      tm_schema_pattern_t *p = &s->patterns[s->n_patterns];
      p->pattern = bson_iter_key(&it);
      p->schema = tm_schema_parse_sub(bson_iter_value(&it), false, error);
      if (!p->schema) {
         return false;
      }
      if (!tm_regex_compile(&p->re, p->pattern, "", error)) {
         tm_schema_destroy(p->schema);
         return false;
      }
      s->n_patterns++;
   }
   return true;
}

static bool
parse_additional_properties(tm_schema_t *s, bson_error_t *error)
{
   const bson_value_t *v = &s->kw[TM_KW_ADDITIONAL_PROPERTIES];
   if (v->value_type == BSON_TYPE_BOOL) {
      s->additional_props_false = !v->value.v_bool;
      return true;
   }
   if (v->value_type != BSON_TYPE_DOCUMENT) {
      return tm_error_set(error, 14,
                          "$jsonSchema keyword 'additionalProperties' must be an "
                          "object or a boolean");
   }
   return (s->additional_props = tm_schema_parse_sub(v, false, error)) != NULL;
}

static bool
parse_dependency_names(const char *name, const bson_value_t *v, bson_t *names, bson_error_t *error)
{
   bson_iter_t it, seen;
   tm_value_as_bson(v, names);
   if (bson_empty(names)) {
      return tm_error_set(error, 9,
                          "property '%s' in $jsonSchema keyword 'dependencies' "
                          "cannot be an empty array",
                          name);
   }
   bson_iter_init(&it, names);
   while (bson_iter_next(&it)) {
      if (!BSON_ITER_HOLDS_UTF8(&it)) {
         return tm_error_set(error, 14,
                             "array '%s' in $jsonSchema keyword 'dependencies' can "
                             "only contain strings, but found element of type: %s",
                             name, tm_type_name(bson_iter_type(&it)));
      }
      bson_iter_init(&seen, names);
      while (bson_iter_next(&seen) && strcmp(bson_iter_key(&seen), bson_iter_key(&it)) != 0) {
         if (strcmp(bson_iter_utf8(&seen, NULL), bson_iter_utf8(&it, NULL)) == 0) {
            return tm_error_set(error, 9,
                                "array '%s' in $jsonSchema keyword 'dependencies' "
                                "contains duplicate element: %s",
                                name, bson_iter_utf8(&it, NULL));
         }
      }
   }
   return true;
}

static bool
parse_dependencies(tm_schema_t *s, bson_error_t *error)
{
   bson_t obj;
   bson_iter_t it;
   if (!kw_object(s, TM_KW_DEPENDENCIES, &obj, error)) {
      return false;
   }
   s->deps = bson_malloc0((bson_count_keys(&obj) + 1) * sizeof *s->deps);
   bson_iter_init(&it, &obj);
   while (bson_iter_next(&it)) {
      const char *name = bson_iter_key(&it);
      tm_schema_dep_t *d = &s->deps[s->n_deps];
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         /* The dependency's schema applies to the object itself, at the same level. */
         if (!(d->schema = tm_schema_parse_sub(bson_iter_value(&it), s->top, error))) {
            return false;
         }
      } else if (BSON_ITER_HOLDS_ARRAY(&it)) {
         if (!parse_dependency_names(name, bson_iter_value(&it), &d->names, error)) {
            return false;
         }
      } else if (BSON_ITER_HOLDS_UTF8(&it) &&
                 (strcmp(name, "title") == 0 || strcmp(name, "description") == 0)) {
         continue; /* annotations are allowed among the dependencies */
      } else {
         return tm_error_set(error, 14,
                             "property '%s' in $jsonSchema keyword 'dependencies' "
                             "must be either an object or an array",
                             name);
      }
      d->name = name;
      s->n_deps++;
   }
   return true;
}

bool
tm_schema_parse_object(tm_schema_t *s, bson_error_t *error)
{
   return (!s->has[TM_KW_REQUIRED] || parse_required(s, error)) &&
          (!s->has[TM_KW_PROPERTIES] || parse_properties(s, error)) &&
          (!s->has[TM_KW_PATTERN_PROPERTIES] || parse_pattern_properties(s, error)) &&
          (!s->has[TM_KW_ADDITIONAL_PROPERTIES] || parse_additional_properties(s, error)) &&
          (!s->has[TM_KW_MIN_PROPERTIES] ||
           tm_schema_parse_count(s, TM_KW_MIN_PROPERTIES, &s->min_props, error)) &&
          (!s->has[TM_KW_MAX_PROPERTIES] ||
           tm_schema_parse_count(s, TM_KW_MAX_PROPERTIES, &s->max_props, error)) &&
          (!s->has[TM_KW_DEPENDENCIES] || parse_dependencies(s, error));
}

static bool
parse_logical_list(tm_schema_t *s, tm_kw_t k, tm_schema_list_t *l, bson_error_t *error)
{
   if (!s->has[k]) {
      return true;
   }
   if (s->kw[k].value_type != BSON_TYPE_ARRAY) {
      return tm_error_set(error, 14, "$jsonSchema keyword '%s' must be an array", kw(k));
   }
   if (s->kw[k].value.v_doc.data_len <= 5) {
      return tm_error_set(error, 2, "$jsonSchema keyword '%s' must be a non-empty array", kw(k));
   }
   return parse_list(s, k, s->top, l, error);
}

static bool
parse_enum(tm_schema_t *s, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it, seen;
   const bson_value_t *v = &s->kw[TM_KW_ENUM];
   if (v->value_type != BSON_TYPE_ARRAY) {
      return tm_error_set(error, 14,
                          "$jsonSchema keyword 'enum' must be an array, but found "
                          "an element of type %s",
                          tm_type_name(v->value_type));
   }
   tm_value_as_bson(v, &arr);
   if (bson_empty(&arr)) {
      return tm_error_set(error, 9, "$jsonSchema keyword 'enum' cannot be an empty array");
   }
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      bson_iter_init(&seen, &arr);
      while (bson_iter_next(&seen) && strcmp(bson_iter_key(&seen), bson_iter_key(&it)) != 0) {
         if (tm_schema_values_equal(bson_iter_value(&seen), bson_iter_value(&it))) {
            return tm_error_set(error, 9,
                                "$jsonSchema keyword 'enum' array cannot contain "
                                "duplicate values.");
         }
      }
   }
   return true;
}

bool
tm_schema_parse_logical(tm_schema_t *s, bson_error_t *error)
{
   if (!parse_logical_list(s, TM_KW_ALL_OF, &s->all_of, error) ||
       !parse_logical_list(s, TM_KW_ANY_OF, &s->any_of, error) ||
       !parse_logical_list(s, TM_KW_ONE_OF, &s->one_of, error)) {
      return false;
   }
   if (s->has[TM_KW_NOT]) {
      if (s->kw[TM_KW_NOT].value_type != BSON_TYPE_DOCUMENT) {
         return tm_error_set(error, 14,
                             "$jsonSchema keyword 'not' must be an object, but "
                             "found an element of type %s",
                             tm_type_name(s->kw[TM_KW_NOT].value_type));
      }
      if (!(s->not_schema = tm_schema_parse_sub(&s->kw[TM_KW_NOT], s->top, error))) {
         return false;
      }
   }
   return !s->has[TM_KW_ENUM] || parse_enum(s, error);
}
