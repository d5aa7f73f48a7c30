/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Why a document fails a $jsonSchema, in the shape MongoDB 6.0 puts into a
 * DocumentValidationFailure's errInfo.details (doc_validation_error.cpp): the schema's
 * failing rules in the parser's keyword order (scalar, array, object, logical keywords, then
 * the type), each as {operatorName, specifiedAs, reason, consideredValue ...}; nested schemas
 * explain themselves in `details` arrays. A keyword that fails only because the value has the
 * wrong type stays silent: the type keyword explains it.
 */
#include <string.h>

#include "jsonschema-private.h"

void
tm_schema_err_open(tm_schema_err_list_t *l, bson_t *child)
{
   char key[16];
   const char *k;
   bson_uint32_to_string(l->n++, &k, key, sizeof key);
   bson_append_document_begin(l->arr, k, -1, child);
}

void
tm_schema_err_close(tm_schema_err_list_t *l, bson_t *child)
{
   bson_append_document_end(l->arr, child);
}

/* Appends `name: [details of s for v]`. */
void
tm_schema_err_details(bson_t *e, const char *name, const tm_schema_t *s, const bson_value_t *v)
{
   bson_t arr;
   bson_append_array_begin(e, name, -1, &arr);
   tm_schema_err_sub(s, v, &arr);
   bson_append_array_end(e, &arr);
}

void
tm_schema_err_annotations(bson_t *e, const tm_schema_t *s)
{
   if (s->title) {
      BSON_APPEND_UTF8(e, "title", s->title);
   }
   if (s->description) {
      BSON_APPEND_UTF8(e, "description", s->description);
   }
}

void
tm_schema_err_head(bson_t *e, const tm_schema_t *s, tm_kw_t kw, bool specified)
{
   BSON_APPEND_UTF8(e, "operatorName", tm_kw_name(kw));
   if (!specified) {
      return;
   }
   bson_t spec;
   BSON_APPEND_DOCUMENT_BEGIN(e, "specifiedAs", &spec);
   bson_append_value(&spec, tm_kw_name(kw), -1, &s->kw[kw]);
   if ((kw == TM_KW_MAXIMUM && s->exclusive_max) || (kw == TM_KW_MINIMUM && s->exclusive_min)) {
      BSON_APPEND_BOOL(&spec, kw == TM_KW_MAXIMUM ? "exclusiveMaximum" : "exclusiveMinimum", true);
   }
   bson_append_document_end(e, &spec);
}

static void
leaf(tm_schema_err_list_t *l, const tm_schema_t *s, tm_kw_t kw, const char *reason,
     const bson_value_t *v)
{
   bson_t e;
   tm_schema_err_open(l, &e);
   tm_schema_err_head(&e, s, kw, true);
   BSON_APPEND_UTF8(&e, "reason", reason);
   if (v) {
      bson_append_value(&e, "consideredValue", -1, v);
   }
   tm_schema_err_close(l, &e);
}

static bool
array_at(const bson_value_t *arr, uint32_t i, bson_value_t *out)
{
   bson_t a;
   bson_iter_t it;
   char key[16];
   snprintf(key, sizeof key, "%u", i);
   if (!tm_value_as_bson(arr, &a) || !bson_iter_init_find(&it, &a, key)) {
      return false;
   }
   *out = *bson_iter_value(&it);
   return true;
}

static void
scalar_errors(const tm_schema_t *s, const bson_value_t *v, tm_schema_err_list_t *l)
{
   static const struct {
      tm_kw_t kw;
      tm_restrict_t r;
      const char *reason;
   } order[] = {
      {TM_KW_PATTERN, TM_R_STRING, "regular expression did not match"},
      {TM_KW_MAX_LENGTH, TM_R_STRING, "specified string length was not satisfied"},
      {TM_KW_MIN_LENGTH, TM_R_STRING, "specified string length was not satisfied"},
      {TM_KW_MULTIPLE_OF, TM_R_NUMBER,
       "considered value is not a multiple of the specified "
       "value"},
      {TM_KW_MAXIMUM, TM_R_NUMBER, "comparison failed"},
      {TM_KW_MINIMUM, TM_R_NUMBER, "comparison failed"},
   };
   for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      if (s->has[order[i].kw] && tm_schema_restriction(s, order[i].r, v) == TM_RESTRICT_CHECK &&
          !tm_schema_check_scalar(s, order[i].kw, v)) {
         leaf(l, s, order[i].kw, order[i].reason, v);
      }
   }
}

static void
items_error(const tm_schema_t *s, const bson_value_t *v, int32_t index, tm_schema_err_list_t *l)
{
   bson_t e, arr, entry;
   bson_value_t elem;
   tm_schema_err_open(l, &e);
   BSON_APPEND_UTF8(&e, "operatorName", "items");
   if (!s->items_is_list) {
      tm_schema_err_annotations(&e, s->items);
      BSON_APPEND_UTF8(&e, "reason", "At least one item did not match the sub-schema");
      BSON_APPEND_INT32(&e, "itemIndex", index);
      array_at(v, (uint32_t)index, &elem);
      tm_schema_err_details(&e, "details", s->items, &elem);
      tm_schema_err_close(l, &e);
      return;
   }
   /* A list of schemas explains every position that fails (itemIndex is a long here). */
   tm_schema_err_list_t entries = {&arr, 0};
   BSON_APPEND_ARRAY_BEGIN(&e, "details", &arr);
   for (uint32_t i = 0; i < s->item_list.n && array_at(v, i, &elem); i++) {
      if (!tm_schema_match_value(s->item_list.items[i], &elem)) {
         tm_schema_err_open(&entries, &entry);
         BSON_APPEND_INT64(&entry, "itemIndex", i);
         tm_schema_err_details(&entry, "details", s->item_list.items[i], &elem);
         tm_schema_err_close(&entries, &entry);
      }
   }
   bson_append_array_end(&e, &arr);
   tm_schema_err_close(l, &e);
}

static void
additional_items_error(const tm_schema_t *s, const bson_value_t *v, int32_t index,
                       tm_schema_err_list_t *l)
{
   bson_t e, arr;
   bson_value_t elem;
   tm_schema_err_open(l, &e);
   if (s->additional_items_false) {
      tm_schema_err_head(&e, s, TM_KW_ADDITIONAL_ITEMS, true);
      BSON_APPEND_UTF8(&e, "reason", "found additional items");
      BSON_APPEND_ARRAY_BEGIN(&e, "additionalItems", &arr);
      tm_schema_err_list_t extra = {&arr, 0};
      for (uint32_t i = (uint32_t)s->item_list.n; array_at(v, i, &elem); i++) {
         char key[16];
         const char *k;
         bson_uint32_to_string(extra.n++, &k, key, sizeof key);
         bson_append_value(&arr, k, -1, &elem);
      }
      bson_append_array_end(&e, &arr);
   } else {
      tm_schema_err_head(&e, s, TM_KW_ADDITIONAL_ITEMS, false);
      tm_schema_err_annotations(&e, s->additional_items);
      BSON_APPEND_UTF8(&e, "reason",
                       "At least one additional item did not match the "
                       "sub-schema");
      BSON_APPEND_INT32(&e, "itemIndex", index);
      array_at(v, (uint32_t)index, &elem);
      tm_schema_err_details(&e, "details", s->additional_items, &elem);
   }
   tm_schema_err_close(l, &e);
}

static void
array_errors(const tm_schema_t *s, const bson_value_t *v, tm_schema_err_list_t *l)
{
   static const tm_kw_t order[] = {TM_KW_MIN_ITEMS, TM_KW_MAX_ITEMS, TM_KW_UNIQUE_ITEMS,
                                   TM_KW_ITEMS, TM_KW_ADDITIONAL_ITEMS};
   if (tm_schema_restriction(s, TM_R_ARRAY, v) != TM_RESTRICT_CHECK) {
      return;
   }
   for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
      tm_kw_t kw = order[i];
      int32_t index;
      bson_t e, arr;
      bson_value_t dup;
      if (!s->has[kw] || tm_schema_check_array(s, kw, v, &index)) {
         continue;
      }
      if (kw == TM_KW_ITEMS) {
         items_error(s, v, index, l);
      } else if (kw == TM_KW_ADDITIONAL_ITEMS) {
         additional_items_error(s, v, index, l);
      } else {
         tm_schema_err_open(l, &e);
         tm_schema_err_head(&e, s, kw, true);
         BSON_APPEND_UTF8(&e, "reason",
                          kw == TM_KW_UNIQUE_ITEMS ? "found a duplicate item"
                                                   : "array did not match specified length");
         bson_append_value(&e, "consideredValue", -1, v);
         tm_value_as_bson(v, &arr);
         if (kw == TM_KW_UNIQUE_ITEMS && tm_schema_first_duplicate(v, &dup)) {
            bson_append_value(&e, "duplicatedValue", -1, &dup);
         } else if (kw != TM_KW_UNIQUE_ITEMS) {
            BSON_APPEND_INT32(&e, "numberOfItems", (int32_t)bson_count_keys(&arr));
         }
         tm_schema_err_close(l, &e);
      }
   }
}

static void
list_errors(const tm_schema_t *s, tm_kw_t kw, const tm_schema_list_t *sl, const bson_value_t *v,
            tm_schema_err_list_t *l)
{
   bson_t e, arr, entry;
   tm_schema_err_list_t entries = {&arr, 0};
   int32_t matching[64];
   size_t n_matching = 0;
   if (sl->n == 0) {
      return;
   }
   for (size_t i = 0; i < sl->n; i++) {
      if (tm_schema_match_value(sl->items[i], v) && n_matching < 64) {
         matching[n_matching++] = (int32_t)i;
      }
   }
   bool fails = kw == TM_KW_ALL_OF   ? n_matching < sl->n
                : kw == TM_KW_ANY_OF ? n_matching == 0
                                     : n_matching != 1;
   if (!fails) {
      return;
   }
   tm_schema_err_open(l, &e);
   tm_schema_err_head(&e, s, kw, false);
   if (kw == TM_KW_ONE_OF && n_matching > 1) {
      BSON_APPEND_UTF8(&e, "reason", "more than one subschema matched");
      BSON_APPEND_ARRAY_BEGIN(&e, "matchingSchemaIndexes", &arr);
      for (size_t i = 0; i < n_matching; i++) {
         char key[16];
         const char *k;
         bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
         bson_append_int32(&arr, k, -1, matching[i]);
      }
      bson_append_array_end(&e, &arr);
      tm_schema_err_close(l, &e);
      return;
   }
   BSON_APPEND_ARRAY_BEGIN(&e, "schemasNotSatisfied", &arr);
   for (size_t i = 0; i < sl->n; i++) {
      if (!tm_schema_match_value(sl->items[i], v)) {
         tm_schema_err_open(&entries, &entry);
         BSON_APPEND_INT32(&entry, "index", (int32_t)i);
         tm_schema_err_annotations(&entry, sl->items[i]);
         tm_schema_err_details(&entry, "details", sl->items[i], v);
         tm_schema_err_close(&entries, &entry);
      }
   }
   bson_append_array_end(&e, &arr);
   tm_schema_err_close(l, &e);
}

static void
enum_error(const tm_schema_t *s, const bson_value_t *v, tm_schema_err_list_t *l)
{
   bson_t arr;
   bson_iter_t it;
   bool any_document = false;
   tm_value_as_bson(&s->kw[TM_KW_ENUM], &arr);
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      any_document = any_document || BSON_ITER_HOLDS_DOCUMENT(&it);
   }
   if (s->top && !any_document) {
      leaf(l, s, TM_KW_ENUM, "expression always evaluates to false", NULL);
   } else if (v && !tm_schema_enum_has(s, v)) {
      leaf(l, s, TM_KW_ENUM, "value was not found in enum", v);
   }
}

static void
logical_errors(const tm_schema_t *s, const bson_value_t *v, tm_schema_err_list_t *l)
{
   bson_t e;
   list_errors(s, TM_KW_ALL_OF, &s->all_of, v, l);
   list_errors(s, TM_KW_ANY_OF, &s->any_of, v, l);
   list_errors(s, TM_KW_ONE_OF, &s->one_of, v, l);
   if (s->not_schema && tm_schema_match_value(s->not_schema, v)) {
      tm_schema_err_open(l, &e);
      BSON_APPEND_UTF8(&e, "operatorName", "not");
      BSON_APPEND_UTF8(&e, "reason", "child expression matched");
      tm_schema_err_close(l, &e);
   }
   if (s->has[TM_KW_ENUM]) {
      enum_error(s, v, l);
   }
}

static void
type_error(const tm_schema_t *s, const bson_value_t *v, tm_schema_err_list_t *l)
{
   tm_kw_t kw = s->has[TM_KW_TYPE] ? TM_KW_TYPE : TM_KW_BSON_TYPE;
   bson_t e;
   if (s->top || !s->has[kw] || !v || tm_typeset_has(&s->types, v->value_type)) {
      return; /* a missing value is explained by `required`, if at all */
   }
   tm_schema_err_open(l, &e);
   tm_schema_err_head(&e, s, kw, true);
   BSON_APPEND_UTF8(&e, "reason", "type did not match");
   bson_append_value(&e, "consideredValue", -1, v);
   BSON_APPEND_UTF8(&e, "consideredType", tm_type_name(v->value_type));
   tm_schema_err_close(l, &e);
}

void
tm_schema_err_sub(const tm_schema_t *s, const bson_value_t *v, bson_t *arr)
{
   tm_schema_err_list_t l = {arr, 0};
   bson_t obj;
   if (!s->top) {
      scalar_errors(s, v, &l);
      array_errors(s, v, &l);
   }
   if (v && v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &obj)) {
      tm_schema_err_object(s, &obj, &l);
   }
   logical_errors(s, v, &l);
   type_error(s, v, &l);
}

void
tm_schema_explain(const tm_schema_t *s, const bson_t *doc, bool inverted, bson_t *out)
{
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   bool typed = s->has[TM_KW_TYPE] || s->has[TM_KW_BSON_TYPE];
   BSON_APPEND_UTF8(out, "operatorName", "$jsonSchema");
   if (inverted) {
      BSON_APPEND_UTF8(out, "reason", "schema matched");
      return;
   }
   if (typed && !tm_typeset_has(&s->types, BSON_TYPE_DOCUMENT)) {
      bson_t spec;
      BSON_APPEND_DOCUMENT_BEGIN(out, "specifiedAs", &spec);
      BSON_APPEND_DOCUMENT(&spec, "$jsonSchema", &s->doc);
      bson_append_document_end(out, &spec);
      BSON_APPEND_UTF8(out, "reason", "expression always evaluates to false");
      return;
   }
   tm_schema_err_annotations(out, s);
   v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
   v.value.v_doc.data_len = doc->len;
   tm_schema_err_details(out, "schemaRulesNotSatisfied", s, &v);
}
