/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing a $jsonSchema: the keyword map, metadata, type/bsonType and the scalar keywords,
 * in the order MongoDB 6.0's JSON Schema parser checks them, so the first error reported is
 * the one mongod reports (codes and messages as json_schema_parser.cpp words them). The
 * compound keywords are in jsonschema-kw.c.
 */
#include <math.h>
#include <string.h>

#include "jsonschema-private.h"
#include "match-private.h"

static const char *const kw_names[TM_KW_COUNT] = {
   "additionalItems",
   "additionalProperties",
   "allOf",
   "anyOf",
   "bsonType",
   "dependencies",
   "description",
   "encrypt",
   "encryptMetadata",
   "enum",
   "exclusiveMaximum",
   "exclusiveMinimum",
   "items",
   "maxItems",
   "maxLength",
   "maxProperties",
   "maximum",
   "minItems",
   "minLength",
   "minProperties",
   "minimum",
   "multipleOf",
   "not",
   "oneOf",
   "pattern",
   "patternProperties",
   "properties",
   "required",
   "title",
   "type",
   "uniqueItems",
};

/* Keywords of JSON Schema draft 4 that MongoDB refuses by name. */
static const char *const unsupported[] = {"$ref",   "$schema", "default", "definitions",
                                          "format", "id",      NULL};

const char *
tm_kw_name(tm_kw_t kw)
{
   return kw_names[kw];
}

static bool
map_keywords(tm_schema_t *s, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, &s->doc);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      int kw = 0;
      while (kw < TM_KW_COUNT && strcmp(kw_names[kw], key) != 0) {
         kw++;
      }
      if (kw == TM_KW_COUNT) {
         for (int i = 0; unsupported[i]; i++) {
            if (strcmp(unsupported[i], key) == 0) {
               return tm_error_set(error, 9,
                                   "$jsonSchema keyword '%s' is not currently "
                                   "supported",
                                   key);
            }
         }
         return tm_error_set(error, 9, "Unknown $jsonSchema keyword: %s", key);
      }
      if (s->has[kw]) {
         return tm_error_set(error, 9, "Duplicate $jsonSchema keyword: %s", key);
      }
      s->has[kw] = true;
      s->kw[kw] = *bson_iter_value(&it);
   }
   return true;
}

static bool
parse_metadata(tm_schema_t *s, bson_error_t *error)
{
   static const tm_kw_t meta[] = {TM_KW_DESCRIPTION, TM_KW_TITLE};
   for (size_t i = 0; i < 2; i++) {
      if (s->has[meta[i]] && s->kw[meta[i]].value_type != BSON_TYPE_UTF8) {
         return tm_error_set(error, 14, "$jsonSchema keyword '%s' must be of type string",
                             kw_names[meta[i]]);
      }
   }
   s->description = s->has[TM_KW_DESCRIPTION] ? s->kw[TM_KW_DESCRIPTION].value.v_utf8.str : NULL;
   s->title = s->has[TM_KW_TITLE] ? s->kw[TM_KW_TITLE].value.v_utf8.str : NULL;
   if (s->has[TM_KW_ENCRYPT] || s->has[TM_KW_ENCRYPT_METADATA]) {
      return tm_error_set(error, 2, "$jsonSchema keyword '%s' is not supported by test-mongod",
                          s->has[TM_KW_ENCRYPT] ? "encrypt" : "encryptMetadata");
   }
   return true;
}

/* One type name into the set: bsonType takes $type's aliases, type JSON Schema's own. */
static bool
add_type_alias(tm_typeset_t *set, const char *name, bool json_names, bson_error_t *error)
{
   static const struct {
      const char *json, *bson;
   } json_aliases[] = {{"array", "array"},   {"boolean", "bool"},  {"null", "null"},
                       {"number", "number"}, {"object", "object"}, {"string", "string"}};
   int32_t code;
   const char *bson_name = json_names ? NULL : name;
   for (size_t i = 0; json_names && i < sizeof json_aliases / sizeof json_aliases[0]; i++) {
      if (strcmp(json_aliases[i].json, name) == 0) {
         bson_name = json_aliases[i].bson;
      }
   }
   if (!bson_name || !tm_type_alias(bson_name, &code)) {
      return tm_error_set(error, 2, "Unknown type name alias: %s", name);
   }
   if (code == 0) {
      set->all_numbers = true;
   } else {
      set->bits |=
         1u << (code == -1 ? TM_TYPE_BIT_MINKEY : (code == 127 ? TM_TYPE_BIT_MAXKEY : code));
   }
   return true;
}

static bool
type_name_ok(const char *name, bson_error_t *error)
{
   if (strcmp(name, "integer") == 0) {
      return tm_error_set(error, 9, "$jsonSchema type 'integer' is not currently supported.");
   }
   return true;
}

static bool
parse_type(tm_schema_t *s, bson_error_t *error)
{
   tm_kw_t kw = s->has[TM_KW_TYPE] ? TM_KW_TYPE : TM_KW_BSON_TYPE;
   const bson_value_t *v = &s->kw[kw];
   const char *name = kw_names[kw];
   bool json_names = kw == TM_KW_TYPE;
   bson_t arr;
   bson_iter_t it;
   if (v->value_type == BSON_TYPE_UTF8) {
      return type_name_ok(v->value.v_utf8.str, error) &&
             add_type_alias(&s->types, v->value.v_utf8.str, json_names, error);
   }
   if (v->value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(v, &arr)) {
      return tm_error_set(error, 14,
                          "$jsonSchema keyword '%s' must be either a string or an "
                          "array of strings",
                          name);
   }
   bson_iter_init(&it, &arr);
   while (bson_iter_next(&it)) {
      bson_iter_t seen;
      if (!BSON_ITER_HOLDS_UTF8(&it)) {
         return tm_error_set(error, 14,
                             "$jsonSchema keyword '%s' array elements must be "
                             "strings",
                             name);
      }
      const char *alias = bson_iter_utf8(&it, NULL);
      if (!type_name_ok(alias, error)) {
         return false;
      }
      bson_iter_init(&seen, &arr);
      while (bson_iter_next(&seen) && strcmp(bson_iter_key(&seen), bson_iter_key(&it)) != 0) {
         if (BSON_ITER_HOLDS_UTF8(&seen) && strcmp(bson_iter_utf8(&seen, NULL), alias) == 0) {
            return tm_error_set(error, 9, "$jsonSchema keyword '%s' has duplicate value: %s", name,
                                alias);
         }
      }
      if (!add_type_alias(&s->types, alias, json_names, error)) {
         return false;
      }
   }
   if (!s->types.bits && !s->types.all_numbers) {
      return tm_error_set(error, 9, "$jsonSchema keyword '%s' must name at least one type", name);
   }
   return true;
}

static bool
parse_number_kw(tm_schema_t *s, tm_kw_t kw, bson_error_t *error)
{
   if (!tm_value_is_number(&s->kw[kw])) {
      return tm_error_set(error, 14, "$jsonSchema keyword '%s' must be a number", kw_names[kw]);
   }
   return true;
}

/* maximum/minimum with their exclusive flags. */
static bool
parse_bound(tm_schema_t *s, tm_kw_t kw, tm_kw_t excl, bool *exclusive, bson_error_t *error)
{
   if (!s->has[kw]) {
      if (s->has[excl]) {
         return tm_error_set(error, 9,
                             "$jsonSchema keyword '%s' must be a present if %s is "
                             "present",
                             kw_names[kw], kw_names[excl]);
      }
      return true;
   }
   if (s->has[excl]) {
      if (s->kw[excl].value_type != BSON_TYPE_BOOL) {
         return tm_error_set(error, 14, "$jsonSchema keyword '%s' must be a boolean",
                             kw_names[excl]);
      }
      *exclusive = s->kw[excl].value.v_bool;
   }
   return parse_number_kw(s, kw, error);
}

static bool
parse_scalar(tm_schema_t *s, bson_error_t *error)
{
   if (s->has[TM_KW_PATTERN]) {
      if (s->kw[TM_KW_PATTERN].value_type != BSON_TYPE_UTF8) {
         return tm_error_set(error, 14, "$jsonSchema keyword 'pattern' must be a string");
      }
      if (!tm_regex_compile(&s->pattern, s->kw[TM_KW_PATTERN].value.v_utf8.str, "", error)) {
         s->has[TM_KW_PATTERN] = false; /* nothing compiled, nothing to free */
         return false;
      }
   }
   if ((s->has[TM_KW_MAX_LENGTH] &&
        !tm_schema_parse_count(s, TM_KW_MAX_LENGTH, &s->max_length, error)) ||
       (s->has[TM_KW_MIN_LENGTH] &&
        !tm_schema_parse_count(s, TM_KW_MIN_LENGTH, &s->min_length, error))) {
      return false;
   }
   if (s->has[TM_KW_MULTIPLE_OF]) {
      const bson_value_t *m = &s->kw[TM_KW_MULTIPLE_OF];
      if (!parse_number_kw(s, TM_KW_MULTIPLE_OF, error)) {
         return false;
      }
      if (!(tm_value_as_double(m) > 0)) {
         return tm_error_set(error, 9,
                             "$jsonSchema keyword 'multipleOf' must have a positive "
                             "value");
      }
   }
   return parse_bound(s, TM_KW_MAXIMUM, TM_KW_EXCLUSIVE_MAXIMUM, &s->exclusive_max, error) &&
          parse_bound(s, TM_KW_MINIMUM, TM_KW_EXCLUSIVE_MINIMUM, &s->exclusive_min, error);
}

tm_schema_t *
tm_schema_parse_sub(const bson_value_t *v, bool top, bson_error_t *error)
{
   tm_schema_t *s = bson_malloc0(sizeof *s);
   s->top = top;
   tm_value_as_bson(v, &s->doc);
   bool ok = map_keywords(s, error) && parse_metadata(s, error);
   if (ok && s->has[TM_KW_TYPE] && s->has[TM_KW_BSON_TYPE]) {
      ok = tm_error_set(error, 9,
                        "Cannot specify both $jsonSchema keywords 'type' and "
                        "'bsonType'");
   }
   ok = ok && (!(s->has[TM_KW_TYPE] || s->has[TM_KW_BSON_TYPE]) || parse_type(s, error)) &&
        parse_scalar(s, error) && tm_schema_parse_items(s, error) &&
        tm_schema_parse_object(s, error) && tm_schema_parse_logical(s, error);
   if (!ok) {
      tm_schema_destroy(s);
      return NULL;
   }
   return s;
}

tm_schema_t *
tm_schema_parse(const bson_value_t *v, bson_error_t *error)
{
   if (v->value_type != BSON_TYPE_DOCUMENT) {
      tm_error_set(error, 14, "$jsonSchema must be an object");
      return NULL;
   }
   return tm_schema_parse_sub(v, true, error);
}

static void
list_destroy(tm_schema_list_t *l)
{
   for (size_t i = 0; i < l->n; i++) {
      tm_schema_destroy(l->items[i]);
   }
   bson_free(l->items);
}

void
tm_schema_destroy(tm_schema_t *s)
{
   if (!s) {
      return;
   }
   if (s->has[TM_KW_PATTERN]) {
      regfree(&s->pattern);
   }
   tm_schema_destroy(s->items);
   list_destroy(&s->item_list);
   tm_schema_destroy(s->additional_items);
   for (size_t i = 0; i < s->n_props; i++) {
      tm_schema_destroy(s->props[i].schema);
   }
   bson_free(s->props);
   for (size_t i = 0; i < s->n_patterns; i++) {
      regfree(&s->patterns[i].re);
      tm_schema_destroy(s->patterns[i].schema);
   }
   bson_free(s->patterns);
   tm_schema_destroy(s->additional_props);
   bson_free(s->required);
   for (size_t i = 0; i < s->n_deps; i++) {
      tm_schema_destroy(s->deps[i].schema);
   }
   bson_free(s->deps);
   list_destroy(&s->all_of);
   list_destroy(&s->any_of);
   list_destroy(&s->one_of);
   tm_schema_destroy(s->not_schema);
   bson_free(s);
}
