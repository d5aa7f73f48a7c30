/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The $jsonSchema property blocks both contracts share (schema-props-private.h). No state.
 */
#include "schema-props-private.h"

#include <string.h>

void
_outbox_schema_prop(bson_t *props, const char *name, const char *type, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BSON_APPEND_UTF8(&p, "bsonType", type);
   if (what) {
      BSON_APPEND_UTF8(&p, "description", what);
   }
   bson_append_document_end(props, &p);
}

void
_outbox_schema_long_prop(bson_t *props, const char *name, int64_t minimum, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "long", "minimum", BCON_INT64(minimum), "description",
               BCON_UTF8(what));
   bson_append_document_end(props, &p);
}

void
_outbox_schema_pattern_prop(bson_t *props, const char *name, const char *pattern, const char *what)
{
   bson_t p;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "string", "pattern", BCON_UTF8(pattern), "description",
               BCON_UTF8(what));
   bson_append_document_end(props, &p);
}

void
_outbox_schema_event_type_prop(bson_t *props, const char *name)
{
   _outbox_schema_pattern_prop(props, name, _OUTBOX_EVENT_TYPE_PATTERN,
                               "1..128 characters of [A-Za-z0-9._-]");
}

void
_outbox_schema_headers_prop(bson_t *props, const char *name)
{
   bson_t p, values;
   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   BCON_APPEND(&p, "bsonType", "object", "description", "string values only");
   BSON_APPEND_DOCUMENT_BEGIN(&p, "additionalProperties", &values);
   BCON_APPEND(&values, "bsonType", "string");
   bson_append_document_end(&p, &values);
   bson_append_document_end(props, &p);
}

/* The $jsonSchema bsonType of BSON type @t, NULL for those a schema cannot name. */
static const char *
bson_type_alias(bson_type_t t)
{
   switch (t) {
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
   case BSON_TYPE_OID:
      return "objectId";
   case BSON_TYPE_BOOL:
      return "bool";
   case BSON_TYPE_DATE_TIME:
      return "date";
   case BSON_TYPE_INT32:
      return "int";
   case BSON_TYPE_INT64:
      return "long";
   case BSON_TYPE_DECIMAL128:
      return "decimal";
   default:
      return NULL;
   }
}

/* bsonType: one alias, or an array of them. */
static void
append_types(bson_t *p, uint32_t types)
{
   const char *names[24];
   size_t n = 0;
   bson_t arr;

   for (int t = BSON_TYPE_DOUBLE; t <= BSON_TYPE_DECIMAL128; t++) {
      if ((types & OUTBOX_CONTRACT_TYPE((bson_type_t)t)) && bson_type_alias((bson_type_t)t)) {
         names[n++] = bson_type_alias((bson_type_t)t);
      }
   }
   if (n == 1) {
      BSON_APPEND_UTF8(p, "bsonType", names[0]);
      return;
   }
   BSON_APPEND_ARRAY_BEGIN(p, "bsonType", &arr);
   for (size_t i = 0; i < n; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_UTF8(&arr, k, names[i]);
   }
   bson_append_array_end(p, &arr);
}

/* Bounds a $jsonSchema can say without refusing what the form allows: numbers' minimum and
 * maximum; strings' maxLength (code points never outnumber bytes) and minLength 1 (a
 * non-empty string has a code point); documents' maxProperties. */
static void
append_bounds(bson_t *p, const outbox_contract_form_t *f)
{
   bool numbers =
      f->types & (OUTBOX_CONTRACT_TYPE(BSON_TYPE_INT32) | OUTBOX_CONTRACT_TYPE(BSON_TYPE_INT64));
   bool strings = f->types & OUTBOX_CONTRACT_TYPE(BSON_TYPE_UTF8);
   bool docs = f->types & OUTBOX_CONTRACT_TYPE(BSON_TYPE_DOCUMENT);

   if (numbers && f->min != OUTBOX_CONTRACT_UNBOUNDED) {
      BSON_APPEND_INT64(p, "minimum", f->min);
   }
   if (numbers && f->max != OUTBOX_CONTRACT_UNBOUNDED) {
      BSON_APPEND_INT64(p, "maximum", f->max);
   }
   if (strings && f->min == 1) {
      BSON_APPEND_INT64(p, "minLength", 1);
   }
   if (strings && f->max != OUTBOX_CONTRACT_UNBOUNDED) {
      BSON_APPEND_INT64(p, "maxLength", f->max);
   }
   if (docs && f->max != OUTBOX_CONTRACT_UNBOUNDED) {
      BSON_APPEND_INT64(p, "maxProperties", f->max);
   }
   if (strings && (f->text & OUTBOX_CONTRACT_TEXT_UUID)) {
      BSON_APPEND_UTF8(p, "pattern", _OUTBOX_UUID_V4_PATTERN);
   } else if (strings && (f->text & OUTBOX_CONTRACT_TEXT_EVENT_TYPE)) {
      BSON_APPEND_UTF8(p, "pattern", _OUTBOX_EVENT_TYPE_PATTERN);
   }
}

void
_outbox_schema_rule_prop(bson_t *props, const char *name, const outbox_contract_rule_t *rule,
                         bool archived, const char *what)
{
   /* Archived events are normalised to the written types (an int32 seq becomes Int64), with
    * the relay's bounds and text rules, which are what it publishes. */
   const outbox_contract_form_t *bounds = archived ? &rule->accepted : &rule->written;
   bson_t p, values;

   BSON_APPEND_DOCUMENT_BEGIN(props, name, &p);
   append_types(&p, rule->written.types);
   append_bounds(&p, bounds);
   if (!strcmp(rule->name, "headers") && rule->scope == OUTBOX_CONTRACT_EVENT) {
      const outbox_contract_rule_t *count = outbox_contract_find(OUTBOX_CONTRACT_HEADER, "count");
      const outbox_contract_rule_t *value = outbox_contract_find(OUTBOX_CONTRACT_HEADER, "value");
      append_bounds(&p, archived ? &count->accepted : &count->written);
      BSON_APPEND_DOCUMENT_BEGIN(&p, "additionalProperties", &values);
      append_types(&values, value->written.types);
      append_bounds(&values, archived ? &value->accepted : &value->written);
      bson_append_document_end(&p, &values);
   }
   BSON_APPEND_UTF8(&p, "description", what ? what : rule->description);
   bson_append_document_end(props, &p);
}
