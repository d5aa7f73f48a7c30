/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Applying the event contract's rows (outbox/contract.h; the table is contract.c): a value
 * against one form of a rule, the text rules, and one header against every header rule.
 * Pure functions over the caller's values: no state, safe from any thread.
 */
#include "contract-private.h"

#include <string.h>

#include "bson-walk-private.h"
#include "outbox/trace.h"
#include "utf8-private.h"
#include "uuid-private.h"

#define NONE OUTBOX_CONTRACT_UNBOUNDED

static bool
event_type_chars(const char *s, size_t len)
{
   for (size_t i = 0; i < len; i++) {
      char c = s[i];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '.' || c == '_' || c == '-')) {
         return false;
      }
   }
   return true;
}

bool
outbox_contract_text_valid(const char *s, size_t len, unsigned text)
{
   if (!s) {
      return false;
   }
   /* MQTT text is valid UTF-8 without NUL: one pass for all three. */
   if (text & OUTBOX_CONTRACT_TEXT_MQTT) {
      if (!_outbox_utf8_mqtt_valid(s, len)) {
         return false;
      }
   } else if ((text & OUTBOX_CONTRACT_TEXT_UTF8) &&
              !_outbox_utf8_valid(s, len, !(text & OUTBOX_CONTRACT_TEXT_NO_NUL))) {
      return false;
   } else if ((text & OUTBOX_CONTRACT_TEXT_NO_NUL) && memchr(s, 0, len)) {
      return false;
   }
   if ((text & OUTBOX_CONTRACT_TEXT_EVENT_TYPE) && !event_type_chars(s, len)) {
      return false;
   }
   if ((text & OUTBOX_CONTRACT_TEXT_UUID) && !_outbox_uuid_is_valid(s, len)) {
      return false;
   }
   if ((text & OUTBOX_CONTRACT_TEXT_NO_DOLLAR) && len > 0 && s[0] == '$') {
      return false;
   }
   /* The two rules below read s as a C string: one with a NUL inside is not a name. */
   if ((text & OUTBOX_CONTRACT_TEXT_NOT_RESERVED) &&
       (strlen(s) != len || outbox_contract_name_is_reserved(s))) {
      return false;
   }
   return true;
}

/* The walk flags of a document's text rules. */
static bool
document_text_valid(const bson_value_t *v, unsigned text)
{
   int flags = 0;
   if (!text) {
      return true;
   }
   if (!(text & OUTBOX_CONTRACT_TEXT_NO_NUL)) {
      flags |= _OUTBOX_WALK_JSON_STRINGS;
   }
   if (text & OUTBOX_CONTRACT_TEXT_NO_DOLLAR) {
      flags |= _OUTBOX_WALK_NO_DOLLAR_KEYS | _OUTBOX_WALK_NO_EMPTY_KEYS;
   }
   return _outbox_bson_walk(v->value.v_doc.data, v->value.v_doc.data_len, flags);
}

static bool
in_bounds(const outbox_contract_form_t *f, int64_t n)
{
   return (f->min == NONE || n >= f->min) && (f->max == NONE || n <= f->max);
}

static bool
trace_context_valid(const char *name, const char *value, size_t len)
{
   if (strlen(value) != len) {
      return false;
   }
   if (name && !strcmp(name, "traceparent")) {
      return outbox_traceparent_is_valid(value);
   }
   if (name && !strcmp(name, "tracestate")) {
      return outbox_tracestate_is_valid(value);
   }
   return true;
}

/* Bounds and text of a value whose type the form allows. */
static bool
value_valid(const outbox_contract_form_t *f, const bson_value_t *v, const char *header_name)
{
   switch (v->value_type) {
   case BSON_TYPE_INT32:
      return in_bounds(f, v->value.v_int32);
   case BSON_TYPE_INT64:
      return in_bounds(f, v->value.v_int64);
   case BSON_TYPE_DATE_TIME:
      return in_bounds(f, v->value.v_datetime);
   case BSON_TYPE_UTF8: {
      const char *s = v->value.v_utf8.str;
      size_t len = v->value.v_utf8.len;
      unsigned text = f->text & ~(unsigned)OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT;
      return in_bounds(f, (int64_t)len) && outbox_contract_text_valid(s, len, text) &&
             (!(f->text & OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT) ||
              trace_context_valid(header_name, s, len));
   }
   case BSON_TYPE_DOCUMENT: {
      bson_t doc;
      if (!bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len)) {
         return false;
      }
      /* Counting keys walks the document: only when the form bounds them. */
      return (f->min == NONE && f->max == NONE ? true : in_bounds(f, bson_count_keys(&doc))) &&
             document_text_valid(v, f->text);
   }
   default:
      return true;
   }
}

const char *
outbox_contract_check(const outbox_contract_rule_t *rule, const bson_value_t *value, bool strict,
                      const char *header_name)
{
   const outbox_contract_form_t *f;

   if (!rule) {
      return "no such rule";
   }
   f = strict ? &rule->written : &rule->accepted;
   if (!value || value->value_type == BSON_TYPE_EOD) {
      return f->required ? rule->reason : NULL;
   }
   if (!outbox_contract_type_allowed(f, value->value_type) || !value_valid(f, value, header_name)) {
      return rule->reason;
   }
   return NULL;
}

const char *
_outbox_contract_header_check(const char *name, size_t name_len, const bson_value_t *value,
                              size_t count, size_t used, bool strict)
{
   static const _outbox_rule_id_t per_header[] = {
      _OUTBOX_RULE_HEADER_NAME, _OUTBOX_RULE_HEADER_RESERVED, _OUTBOX_RULE_HEADER_VALUE,
      _OUTBOX_RULE_HEADER_TRACE};
   bson_value_t name_value = {.value_type = BSON_TYPE_UTF8};
   const outbox_contract_rule_t *r;
   const char *why;

   name_value.value.v_utf8.str = (char *)name;
   name_value.value.v_utf8.len = (uint32_t)name_len;
   for (size_t i = 0; i < sizeof per_header / sizeof per_header[0]; i++) {
      r = _outbox_contract_row(per_header[i]);
      why = outbox_contract_check(r, i < 2 ? &name_value : value, strict, name);
      if (why) {
         return why;
      }
   }
   r = _outbox_contract_row(_OUTBOX_RULE_HEADER_COUNT);
   if ((int64_t)count + 1 > (strict ? r->written.max : r->accepted.max)) {
      return r->reason;
   }
   r = _outbox_contract_row(_OUTBOX_RULE_HEADER_BYTES);
   if ((int64_t)(used + name_len + value->value.v_utf8.len) >
       (strict ? r->written.max : r->accepted.max)) {
      return r->reason;
   }
   return NULL;
}
