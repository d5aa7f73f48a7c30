/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The DocumentValidationFailure details of the object keywords (properties,
 * additionalProperties/patternProperties, required, minProperties, maxProperties,
 * dependencies), in MongoDB 6.0's order and shapes; see jsonschema-error.c.
 */
#include <string.h>

#include "jsonschema-private.h"
#include "match-private.h"

static bson_value_t
doc_value(const bson_t *obj)
{
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   v.value.v_doc.data = (uint8_t *)bson_get_data(obj);
   v.value.v_doc.data_len = obj->len;
   return v;
}

/* Ends the entry array `arr` of the error `e` and adds `e` to `l` if it has entries. */
static void
close_error(tm_schema_err_list_t *l, bson_t *e, bson_t *arr, uint32_t n_entries)
{
   bson_t entry;
   bson_append_array_end(e, arr);
   if (n_entries) {
      tm_schema_err_open(l, &entry);
      bson_concat(&entry, e);
      tm_schema_err_close(l, &entry);
   }
   bson_destroy(e);
}

/* properties: one entry per property whose schema fails and says why. */
static void
properties_error(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e, arr, entry, details;
   bson_iter_t it;
   tm_schema_err_list_t entries = {&arr, 0};
   bson_init(&e);
   BSON_APPEND_UTF8(&e, "operatorName", "properties");
   BSON_APPEND_ARRAY_BEGIN(&e, "propertiesNotSatisfied", &arr);
   for (size_t i = 0; i < s->n_props; i++) {
      const tm_schema_prop_t *p = &s->props[i];
      bool present = bson_iter_init_find(&it, obj, p->name);
      const bson_value_t *v = present ? bson_iter_value(&it) : NULL;
      if ((!present && !tm_schema_is_required(s, p->name)) || tm_schema_match_value(p->schema, v)) {
         continue;
      }
      bson_init(&details);
      tm_schema_err_sub(p->schema, v, &details);
      if (!bson_empty(&details)) {
         tm_schema_err_open(&entries, &entry);
         BSON_APPEND_UTF8(&entry, "propertyName", p->name);
         tm_schema_err_annotations(&entry, p->schema);
         BSON_APPEND_ARRAY(&entry, "details", &details);
         tm_schema_err_close(&entries, &entry);
      }
      bson_destroy(&details);
   }
   close_error(l, &e, &arr, entries.n);
}

static bool
matches_pattern(const tm_schema_t *s, const char *name)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)name;
   v.value.v_utf8.len = (uint32_t)strlen(name);
   for (size_t i = 0; i < s->n_patterns; i++) {
      if (tm_regex_match(&s->patterns[i].re, &v)) {
         return true;
      }
   }
   return false;
}

/* additionalProperties: false lists the extra names; a schema explains the first extra
 * property that fails it. Nothing when the extra properties are fine (a pattern failed). */
static void
additional_error(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e, names = BSON_INITIALIZER;
   bson_iter_t it, failing;
   bool found = false;
   uint32_t n = 0;
   char key[16];
   const char *k;
   bson_iter_init(&it, obj);
   while (bson_iter_next(&it)) {
      const char *name = bson_iter_key(&it);
      if (tm_schema_is_property(s, name) || matches_pattern(s, name)) {
         continue;
      }
      if (s->additional_props_false) {
         bson_uint32_to_string(n++, &k, key, sizeof key);
         bson_append_utf8(&names, k, -1, name, -1);
      } else if (!found && s->additional_props &&
                 !tm_schema_match_value(s->additional_props, bson_iter_value(&it))) {
         failing = it;
         found = true;
      }
   }
   if (n || found) {
      tm_schema_err_open(l, &e);
      tm_schema_err_head(&e, s, TM_KW_ADDITIONAL_PROPERTIES, n > 0);
      if (n) {
         BSON_APPEND_ARRAY(&e, "additionalProperties", &names);
      } else {
         tm_schema_err_annotations(&e, s->additional_props);
         BSON_APPEND_UTF8(&e, "reason",
                          "at least one additional property did not match the "
                          "subschema");
         BSON_APPEND_UTF8(&e, "failingProperty", bson_iter_key(&failing));
         tm_schema_err_details(&e, "details", s->additional_props, bson_iter_value(&failing));
      }
      tm_schema_err_close(l, &e);
   }
   bson_destroy(&names);
}

/* patternProperties: for each pattern, the first property it matches that fails. */
static void
pattern_error(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e, arr, entry;
   bson_iter_t it;
   tm_schema_err_list_t entries = {&arr, 0};
   bson_init(&e);
   BSON_APPEND_UTF8(&e, "operatorName", "patternProperties");
   BSON_APPEND_ARRAY_BEGIN(&e, "details", &arr);
   for (size_t i = 0; i < s->n_patterns; i++) {
      const tm_schema_pattern_t *p = &s->patterns[i];
      bson_iter_init(&it, obj);
      while (bson_iter_next(&it)) {
         bson_value_t name = {.value_type = BSON_TYPE_UTF8};
         name.value.v_utf8.str = (char *)bson_iter_key(&it);
         name.value.v_utf8.len = (uint32_t)strlen(name.value.v_utf8.str);
         if (tm_regex_match(&p->re, &name) &&
             !tm_schema_match_value(p->schema, bson_iter_value(&it))) {
            tm_schema_err_open(&entries, &entry);
            BSON_APPEND_UTF8(&entry, "propertyName", name.value.v_utf8.str);
            tm_schema_err_annotations(&entry, p->schema);
            BSON_APPEND_UTF8(&entry, "regexMatched", p->pattern);
            tm_schema_err_details(&entry, "details", p->schema, bson_iter_value(&it));
            tm_schema_err_close(&entries, &entry);
            break;
         }
      }
   }
   close_error(l, &e, &arr, entries.n);
}

static void
required_error(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e, arr;
   uint32_t n = 0;
   char key[16];
   const char *k;
   tm_schema_err_open(l, &e);
   tm_schema_err_head(&e, s, TM_KW_REQUIRED, true);
   BSON_APPEND_ARRAY_BEGIN(&e, "missingProperties", &arr);
   for (size_t r = 0; r < s->n_required; r++) {
      if (!bson_has_field(obj, s->required[r])) {
         bson_uint32_to_string(n++, &k, key, sizeof key);
         bson_append_utf8(&arr, k, -1, s->required[r], -1);
      }
   }
   bson_append_array_end(&e, &arr);
   tm_schema_err_close(l, &e);
}

static void
count_error(const tm_schema_t *s, tm_kw_t kw, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e;
   tm_schema_err_open(l, &e);
   tm_schema_err_head(&e, s, kw, true);
   BSON_APPEND_UTF8(&e, "reason", "specified number of properties was not satisfied");
   BSON_APPEND_INT32(&e, "numberOfProperties", (int32_t)bson_count_keys(obj));
   tm_schema_err_close(l, &e);
}

static void
dependencies_error(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_t e, arr, entry, deps, missing;
   bson_iter_t it;
   bson_value_t v = doc_value(obj);
   tm_schema_err_list_t entries = {&arr, 0};
   bson_init(&e);
   BSON_APPEND_UTF8(&e, "operatorName", "dependencies");
   tm_value_as_bson(&s->kw[TM_KW_DEPENDENCIES], &deps);
   if (bson_iter_init_find(&it, &deps, "title") && BSON_ITER_HOLDS_UTF8(&it)) {
      BSON_APPEND_UTF8(&e, "title", bson_iter_utf8(&it, NULL));
   }
   if (bson_iter_init_find(&it, &deps, "description") && BSON_ITER_HOLDS_UTF8(&it)) {
      BSON_APPEND_UTF8(&e, "description", bson_iter_utf8(&it, NULL));
   }
   BSON_APPEND_ARRAY_BEGIN(&e, "failingDependencies", &arr);
   for (size_t i = 0; i < s->n_deps; i++) {
      const tm_schema_dep_t *d = &s->deps[i];
      if (tm_schema_dep_holds(d, &v)) {
         continue;
      }
      tm_schema_err_open(&entries, &entry);
      BSON_APPEND_UTF8(&entry, "conditionalProperty", d->name);
      if (d->schema) {
         tm_schema_err_details(&entry, "details", d->schema, &v);
      } else {
         uint32_t n = 0;
         char key[16];
         const char *k;
         BSON_APPEND_ARRAY_BEGIN(&entry, "missingProperties", &missing);
         bson_iter_init(&it, &d->names);
         while (bson_iter_next(&it)) {
            if (!bson_has_field(obj, bson_iter_utf8(&it, NULL))) {
               bson_uint32_to_string(n++, &k, key, sizeof key);
               bson_append_utf8(&missing, k, -1, bson_iter_utf8(&it, NULL), -1);
            }
         }
         bson_append_array_end(&entry, &missing);
      }
      tm_schema_err_close(&entries, &entry);
   }
   close_error(l, &e, &arr, entries.n);
}

void
tm_schema_err_object(const tm_schema_t *s, const bson_t *obj, tm_schema_err_list_t *l)
{
   bson_value_t v = doc_value(obj);
   if (s->top || tm_schema_restriction(s, TM_R_OBJECT, &v) == TM_RESTRICT_CHECK) {
      if (s->has[TM_KW_PROPERTIES] && !tm_schema_check_object(s, TM_KW_PROPERTIES, obj)) {
         properties_error(s, obj, l);
      }
      if ((s->has[TM_KW_ADDITIONAL_PROPERTIES] || s->has[TM_KW_PATTERN_PROPERTIES]) &&
          !tm_schema_check_allowed(s, obj)) {
         additional_error(s, obj, l);
         pattern_error(s, obj, l);
      }
      if (s->has[TM_KW_REQUIRED] && !tm_schema_check_object(s, TM_KW_REQUIRED, obj)) {
         required_error(s, obj, l);
      }
      if (s->has[TM_KW_MIN_PROPERTIES] && !tm_schema_check_object(s, TM_KW_MIN_PROPERTIES, obj)) {
         count_error(s, TM_KW_MIN_PROPERTIES, obj, l);
      }
      if (s->has[TM_KW_MAX_PROPERTIES] && !tm_schema_check_object(s, TM_KW_MAX_PROPERTIES, obj)) {
         count_error(s, TM_KW_MAX_PROPERTIES, obj, l);
      }
   }
   if (s->n_deps) {
      dependencies_error(s, obj, l);
   }
}
