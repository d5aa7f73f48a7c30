/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event contract (outbox/contract.h): the one table every check, schema and document is
 * made from, and the checks that apply a row. Constant data and pure functions: no state,
 * safe from any thread. A new field is a new row here (and, where it is published, a line in
 * the relay's renderer).
 */
#include "contract-private.h"

#include <string.h>
#include <strings.h>

#include "bson-walk-private.h"
#include "outbox/trace.h"
#include "utf8-private.h"
#include "uuid-private.h"

#define T(t) OUTBOX_CONTRACT_TYPE(BSON_TYPE_##t)
#define NONE OUTBOX_CONTRACT_UNBOUNDED
#define MQTT_TEXT                                                                                  \
   (OUTBOX_CONTRACT_TEXT_UTF8 | OUTBOX_CONTRACT_TEXT_NO_NUL | OUTBOX_CONTRACT_TEXT_MQTT)

/* CloudEvents' time is RFC 3339, which has four-digit years: 0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999Z in milliseconds since the epoch. */
#define TIME_MIN INT64_C(-62135596800000)
#define TIME_MAX INT64_C(253402300799999)

static const outbox_contract_rule_t rules[] = {
   {
      .scope = OUTBOX_CONTRACT_ENTITY,
      .name = "_id",
      .written = {.required = true,
                  .types = T(OID) | T(UTF8) | T(INT32) | T(INT64) | T(BINARY),
                  .min = NONE,
                  .max = NONE,
                  .text = OUTBOX_CONTRACT_TEXT_UTF8 | OUTBOX_CONTRACT_TEXT_NO_NUL},
      .accepted = {.required = true,
                   .types = OUTBOX_CONTRACT_ANY_TYPE,
                   .min = NONE,
                   .max = NONE,
                   .text = OUTBOX_CONTRACT_TEXT_UTF8},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = _OUTBOX_CONTRACT_JSON_REASON,
      .description = "the entity's id: rendered into topics (each character MQTT may refuse "
                     "percent-encoded) and the CloudEvents subject",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "id",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = 36,
                  .max = 36,
                  .text = MQTT_TEXT | OUTBOX_CONTRACT_TEXT_UUID},
      .accepted = {.required = true, .types = T(UTF8), .min = 1, .max = 256, .text = MQTT_TEXT},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "event id is not a string of 1..256 bytes of MQTT text (valid UTF-8 without "
                "NUL, control characters or non-characters)",
      .description = "the event id (a UUID v4 from liboutbox); consumers de-duplicate on it",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "seq",
      .written = {.required = true, .types = T(INT64), .min = 1, .max = NONE},
      .accepted = {.required = true, .types = T(INT32) | T(INT64), .min = 1, .max = NONE},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "event seq is not an integer >= 1",
      .description = "the per-entity sequence number, 1, 2, 3 ... (archived as Int64)",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "type",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = 1,
                  .max = 128,
                  .text = OUTBOX_CONTRACT_TEXT_EVENT_TYPE},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = 1,
                   .max = 128,
                   .text = OUTBOX_CONTRACT_TEXT_EVENT_TYPE},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "event type is not 1..128 characters of [A-Za-z0-9._-]",
      .description = "the event type",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "time",
      .written = {.required = true, .types = T(DATE_TIME), .min = TIME_MIN, .max = TIME_MAX},
      .accepted = {.required = false, .types = T(DATE_TIME), .min = TIME_MIN, .max = TIME_MAX},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "event time is not a date in years 0001-9999 (RFC 3339)",
      .description = "when the change was committed; an event without one is published "
                     "without time and archived without it",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "data",
      .written = {.required = true,
                  .types = T(DOCUMENT),
                  .min = NONE,
                  .max = NONE,
                  .text = OUTBOX_CONTRACT_TEXT_UTF8 | OUTBOX_CONTRACT_TEXT_NO_NUL |
                          OUTBOX_CONTRACT_TEXT_NO_DOLLAR},
      .accepted = {.required = true,
                   .types = T(DOCUMENT),
                   .min = NONE,
                   .max = NONE,
                   .text = OUTBOX_CONTRACT_TEXT_UTF8},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "event data is not a document of valid BSON and valid UTF-8",
      .description = "the payload's data, as relaxed extended JSON",
   },
   {
      .scope = OUTBOX_CONTRACT_EVENT,
      .name = "headers",
      .written = {.required = false, .types = T(DOCUMENT), .min = NONE, .max = NONE},
      .accepted = {.required = false, .types = T(DOCUMENT), .min = NONE, .max = NONE},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "headers is not a document",
      .description = "the producer's headers (outbox_event_set_header()): MQTT 5 user "
                     "properties, some also CloudEvents attributes; archived as published",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "name",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = 1,
                  .max = OUTBOX_CONTRACT_HEADER_NAME_MAX,
                  .text = MQTT_TEXT | OUTBOX_CONTRACT_TEXT_NO_DOLLAR},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = 1,
                   .max = OUTBOX_CONTRACT_HEADER_NAME_MAX,
                   .text = MQTT_TEXT},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "header name is empty, longer than 128 bytes, or not MQTT text (invalid "
                "UTF-8, NUL, a control character or a non-character)",
      .description = "a header's name (liboutbox also refuses a leading '$')",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "reserved name",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = NONE,
                  .max = NONE,
                  .text = OUTBOX_CONTRACT_TEXT_NOT_RESERVED},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = NONE,
                   .max = NONE,
                   .text = OUTBOX_CONTRACT_TEXT_NOT_RESERVED},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "header name is reserved by the relay (its own user properties, CloudEvents "
                "context attributes, the replay marker)",
      .description = "no header takes a reserved name, compared without case",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "value",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = 0,
                  .max = OUTBOX_CONTRACT_HEADER_VALUE_MAX,
                  .text = MQTT_TEXT},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = 0,
                   .max = OUTBOX_CONTRACT_HEADER_VALUE_MAX,
                   .text = MQTT_TEXT},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "header value is not a string of at most 4096 bytes of MQTT text (valid "
                "UTF-8 without NUL, a control character or a non-character)",
      .description = "a header's value",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "trace context",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = NONE,
                  .max = NONE,
                  .text = OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = NONE,
                   .max = NONE,
                   .text = OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "traceparent or tracestate header is not W3C Trace Context",
      .description = "the values of traceparent and tracestate",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "count",
      .written =
         {.required = false, .types = T(DOCUMENT), .min = 0, .max = OUTBOX_CONTRACT_HEADERS_MAX},
      .accepted =
         {.required = false, .types = T(DOCUMENT), .min = 0, .max = OUTBOX_CONTRACT_HEADERS_MAX},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "more than 16 headers",
      .description = "headers per event (the 17th and later are left out; a repeated name too)",
   },
   {
      .scope = OUTBOX_CONTRACT_HEADER,
      .name = "bytes",
      .written = {.required = false,
                  .types = T(DOCUMENT),
                  .min = 0,
                  .max = OUTBOX_CONTRACT_HEADERS_BYTES_MAX},
      .accepted = {.required = false,
                   .types = T(DOCUMENT),
                   .min = 0,
                   .max = OUTBOX_CONTRACT_HEADERS_BYTES_MAX},
      .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
      .outcome = OUTBOX_CONTRACT_LEFT_OUT,
      .reason = "headers larger than 8192 bytes in all",
      .description = "bytes of all header names and values of an event",
   },
   {
      .scope = OUTBOX_CONTRACT_MESSAGE,
      .name = "topic",
      .written = {.required = true, .types = T(UTF8), .min = 1, .max = 65535, .text = MQTT_TEXT},
      .accepted = {.required = true, .types = T(UTF8), .min = 1, .max = 65535, .text = MQTT_TEXT},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "topic longer than MQTT allows (65535 bytes)",
      .description = "--topic with every value percent-encoded: '/', '+', '#', '%', a leading "
                     "'$' and every character MQTT text may not hold",
   },
   {
      .scope = OUTBOX_CONTRACT_MESSAGE,
      .name = "user property",
      .written = {.required = false, .types = T(UTF8), .min = 0, .max = 65535, .text = MQTT_TEXT},
      .accepted = {.required = false, .types = T(UTF8), .min = 0, .max = 65535, .text = MQTT_TEXT},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "user property longer than MQTT allows (65535 bytes)",
      .description = "each MQTT 5 user property name and value (the relay's own, CloudEvents "
                     "attributes in binary mode, headers)",
   },
   {
      .scope = OUTBOX_CONTRACT_MESSAGE,
      .name = "payload",
      .written = {.required = true,
                  .types = T(UTF8),
                  .min = NONE,
                  .max = NONE,
                  .text = OUTBOX_CONTRACT_TEXT_UTF8},
      .accepted = {.required = true,
                   .types = T(UTF8),
                   .min = NONE,
                   .max = NONE,
                   .text = OUTBOX_CONTRACT_TEXT_UTF8},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = _OUTBOX_CONTRACT_JSON_REASON,
      .description = "CloudEvents 1.0 JSON (structured) or the data's JSON (binary)",
   },
   {
      .scope = OUTBOX_CONTRACT_MESSAGE,
      .name = "size",
      .written = {.required = true, .types = 0, .min = 0, .max = NONE},
      .accepted = {.required = true, .types = 0, .min = 0, .max = NONE},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
      .reason = "message larger than max-message-bytes",
      .description = "topic and payload within --max-message-bytes, the whole packet within the "
                     "broker's Maximum Packet Size",
   },
   {
      .scope = OUTBOX_CONTRACT_MESSAGE,
      .name = "replay",
      .written = {.required = false, .types = T(BOOL), .min = NONE, .max = NONE},
      .accepted = {.required = false, .types = T(BOOL), .min = NONE, .max = NONE},
      .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .outcome = OUTBOX_CONTRACT_NOT_APPLICABLE,
      .reason = "only outbox-admin replay sets the replay marker",
      .description = "the replay marker: attribute \"replay\": true and, with MQTT 5, user "
                     "property replay=true; only on replayed messages, which otherwise equal "
                     "the live ones byte for byte",
   },
};

static const char *const reserved[] = {
   /* The relay's own user properties. */
   "event-id", "event-type", "entity-id", "seq",
   /* CloudEvents 1.0 context attributes. */
   "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema",
   "data", "data_base64",
   /* outbox-admin replay's marker. */
   "replay", NULL};

size_t
outbox_contract_rules(const outbox_contract_rule_t **out)
{
   *out = rules;
   return sizeof rules / sizeof rules[0];
}

const outbox_contract_rule_t *
outbox_contract_find(outbox_contract_scope_t scope, const char *name)
{
   for (size_t i = 0; name && i < sizeof rules / sizeof rules[0]; i++) {
      if (rules[i].scope == scope && !strcmp(rules[i].name, name)) {
         return &rules[i];
      }
   }
   return NULL;
}

const outbox_contract_rule_t *
_outbox_contract_rule(outbox_contract_scope_t scope, const char *name)
{
   const outbox_contract_rule_t *rule = outbox_contract_find(scope, name);
   BSON_ASSERT(rule); /* a misspelt name is a bug, found by the first test that runs it */
   return rule;
}

size_t
outbox_contract_reserved_names(const char *const **names)
{
   *names = reserved;
   return sizeof reserved / sizeof reserved[0] - 1;
}

bool
outbox_contract_name_is_reserved(const char *name)
{
   for (size_t i = 0; name && reserved[i]; i++) {
      if (!strcasecmp(name, reserved[i])) {
         return true;
      }
   }
   return false;
}

bool
outbox_contract_type_allowed(const outbox_contract_form_t *form, bson_type_t type)
{
   return form && (form->types & OUTBOX_CONTRACT_TYPE(type)) != 0;
}

const char *
outbox_contract_outcome_name(outbox_contract_outcome_t outcome)
{
   switch (outcome) {
   case OUTBOX_CONTRACT_REFUSED_AT_WRITE:
      return "refused at write";
   case OUTBOX_CONTRACT_PUBLISHED_AS_IS:
      return "published as is";
   case OUTBOX_CONTRACT_LEFT_OUT:
      return "left out";
   case OUTBOX_CONTRACT_DEAD_LETTERED:
      return "dead-lettered";
   default:
      return "n/a";
   }
}

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
   if ((text & OUTBOX_CONTRACT_TEXT_MQTT) && !_outbox_utf8_mqtt_valid(s, len)) {
      return false;
   }
   if ((text & OUTBOX_CONTRACT_TEXT_UTF8) &&
       !_outbox_utf8_valid(s, len, !(text & OUTBOX_CONTRACT_TEXT_NO_NUL))) {
      return false;
   }
   if ((text & OUTBOX_CONTRACT_TEXT_NO_NUL) && memchr(s, 0, len)) {
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
      return in_bounds(f, bson_count_keys(&doc)) && document_text_valid(v, f->text);
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
   static const char *const per_header[] = {"name", "reserved name", "value", "trace context"};
   bson_value_t name_value = {.value_type = BSON_TYPE_UTF8};
   const outbox_contract_rule_t *r;
   const char *why;

   name_value.value.v_utf8.str = (char *)name;
   name_value.value.v_utf8.len = (uint32_t)name_len;
   for (size_t i = 0; i < sizeof per_header / sizeof per_header[0]; i++) {
      r = _outbox_contract_rule(OUTBOX_CONTRACT_HEADER, per_header[i]);
      why = outbox_contract_check(r, i < 2 ? &name_value : value, strict, name);
      if (why) {
         return why;
      }
   }
   r = _outbox_contract_rule(OUTBOX_CONTRACT_HEADER, "count");
   if ((int64_t)count + 1 > (strict ? r->written.max : r->accepted.max)) {
      return r->reason;
   }
   r = _outbox_contract_rule(OUTBOX_CONTRACT_HEADER, "bytes");
   if ((int64_t)(used + name_len + value->value.v_utf8.len) >
       (strict ? r->written.max : r->accepted.max)) {
      return r->reason;
   }
   return NULL;
}
