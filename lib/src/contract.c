/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event contract (outbox/contract.h): the one table every check, schema and document is
 * made from, its lookups and the reserved names (contract-check.c applies a row). Constant
 * data and pure functions: no state, safe from any thread.
 *
 * Adding a field: a value in _outbox_rule_id_t (contract-private.h) and its row below. The
 * stored and archive $jsonSchema, _outbox_stored_event_validate(), the relay's acceptance
 * (stream/event.c) and its archive entries (store/archive.c) pick an EVENT row up by
 * themselves; what liboutbox writes (event.c) and what the relay renders (mqtt/message.c)
 * is code to add where the value is used. Then paste `build/tests/lib/contract-table`'s
 * output into README.md between its contract-table markers (lib-contract-readme fails until
 * then).
 */
#include "contract-private.h"

#include <string.h>
#include <strings.h>

#define T(t) OUTBOX_CONTRACT_TYPE(BSON_TYPE_##t)
#define NONE OUTBOX_CONTRACT_UNBOUNDED
#define MQTT_TEXT                                                                                  \
   (OUTBOX_CONTRACT_TEXT_UTF8 | OUTBOX_CONTRACT_TEXT_NO_NUL | OUTBOX_CONTRACT_TEXT_MQTT)

/* CloudEvents' time is RFC 3339, which has four-digit years: 0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999Z in milliseconds since the epoch. */
#define TIME_MIN INT64_C(-62135596800000)
#define TIME_MAX INT64_C(253402300799999)

static const outbox_contract_rule_t rules[_OUTBOX_RULE_COUNT_] = {
   [_OUTBOX_RULE_ENTITY_ID] =
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
   [_OUTBOX_RULE_EVENT_ID] =
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
   [_OUTBOX_RULE_EVENT_SEQ] =
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
   [_OUTBOX_RULE_EVENT_TYPE] =
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
   [_OUTBOX_RULE_EVENT_TIME] =
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
   [_OUTBOX_RULE_EVENT_DATA] =
      {
         .scope = OUTBOX_CONTRACT_EVENT,
         .name = "data",
         .written = {.required = true,
                     .types = T(DOCUMENT) | T(BINARY),
                     .min = NONE,
                     .max = NONE,
                     .text = OUTBOX_CONTRACT_TEXT_UTF8 | OUTBOX_CONTRACT_TEXT_NO_NUL |
                             OUTBOX_CONTRACT_TEXT_NO_DOLLAR},
         .accepted = {.required = true,
                      .types = T(DOCUMENT) | T(BINARY),
                      .min = NONE,
                      .max = NONE,
                      .text = OUTBOX_CONTRACT_TEXT_UTF8},
         .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
         .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
         .reason = "event data is neither a document of valid BSON and valid UTF-8 nor binary "
                   "data",
         .description = "the payload's data: a document as relaxed extended JSON (content type "
                        "application/json), or binary data as raw bytes (binary mode, payload "
                        "format indicator 0) or data_base64 (structured mode), with contentType",
      },
   [_OUTBOX_RULE_EVENT_CONTENT_TYPE] =
      {
         .scope = OUTBOX_CONTRACT_EVENT,
         .name = "contentType",
         .written = {.required = false, .types = T(UTF8), .min = 1, .max = 255, .text = MQTT_TEXT},
         .accepted = {.required = false, .types = T(UTF8), .min = 1, .max = 255, .text = MQTT_TEXT},
         .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
         .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
         .reason = "event contentType is not a string of 1..255 bytes of MQTT text",
         .description = "the media type of binary data (outbox_event_new_binary()): the MQTT 5 "
                        "content type and CloudEvents datacontenttype; "
                        "application/octet-stream when missing; unused with document data",
      },
   [_OUTBOX_RULE_EVENT_HEADERS] =
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
   [_OUTBOX_RULE_EVENT_EXPIRES_AT] =
      {
         .scope = OUTBOX_CONTRACT_EVENT,
         .name = "expiresAt",
         .written = {.required = false, .types = T(DATE_TIME), .min = TIME_MIN, .max = TIME_MAX},
         .accepted = {.required = false, .types = T(DATE_TIME), .min = NONE, .max = NONE},
         .at_write = OUTBOX_CONTRACT_REFUSED_AT_WRITE,
         .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
         .reason = "event expiresAt is not a date",
         .description = "when the event becomes worthless (outbox_event_set_expires_at()): the "
                        "time left is the MQTT 5 Message Expiry Interval; an event past it is "
                        "handled by outbox-relay --expired-events (dropped by default)",
      },
   [_OUTBOX_RULE_HEADER_NAME] =
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
   [_OUTBOX_RULE_HEADER_RESERVED] =
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
   [_OUTBOX_RULE_HEADER_VALUE] =
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
   [_OUTBOX_RULE_HEADER_TRACE] =
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
   [_OUTBOX_RULE_HEADER_DUPLICATE] =
      {
         .scope = OUTBOX_CONTRACT_HEADER,
         .name = "duplicate",
         .written = {.required = false, .types = 0, .min = NONE, .max = NONE},
         .accepted = {.required = false, .types = 0, .min = NONE, .max = NONE},
         .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
         .outcome = OUTBOX_CONTRACT_LEFT_OUT,
         .reason = "second header of the same name",
         .description = "a name given twice (another writer's BSON may repeat a key; "
                        "outbox_event_set_header() replaces the value): the first is published",
      },
   [_OUTBOX_RULE_HEADER_COUNT] =
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
   [_OUTBOX_RULE_HEADER_BYTES] =
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
   [_OUTBOX_RULE_MESSAGE_TOPIC] =
      {
         .scope = OUTBOX_CONTRACT_MESSAGE,
         .name = "topic",
         .written = {.required = true, .types = T(UTF8), .min = 1, .max = 65535, .text = MQTT_TEXT},
         .accepted =
            {.required = true, .types = T(UTF8), .min = 1, .max = 65535, .text = MQTT_TEXT},
         .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
         .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
         .reason = "topic longer than MQTT allows (65535 bytes)",
         .description = "--topic with every value percent-encoded: '/', '+', '#', '%', a leading "
                        "'$' and every character MQTT text may not hold",
      },
   [_OUTBOX_RULE_MESSAGE_USER_PROPERTY] =
      {
         .scope = OUTBOX_CONTRACT_MESSAGE,
         .name = "user property",
         .written =
            {.required = false, .types = T(UTF8), .min = 0, .max = 65535, .text = MQTT_TEXT},
         .accepted =
            {.required = false, .types = T(UTF8), .min = 0, .max = 65535, .text = MQTT_TEXT},
         .at_write = OUTBOX_CONTRACT_NOT_APPLICABLE,
         .outcome = OUTBOX_CONTRACT_DEAD_LETTERED,
         .reason = "user property longer than MQTT allows (65535 bytes)",
         .description = "each MQTT 5 user property name and value (the relay's own, CloudEvents "
                        "attributes in binary mode, headers)",
      },
   [_OUTBOX_RULE_MESSAGE_PAYLOAD] =
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
   [_OUTBOX_RULE_MESSAGE_SIZE] =
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
   [_OUTBOX_RULE_MESSAGE_REPLAY] =
      {
         .scope = OUTBOX_CONTRACT_MESSAGE,
         .name = OUTBOX_CONTRACT_REPLAY_MARKER,
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
   OUTBOX_CONTRACT_REPLAY_MARKER, NULL};

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
_outbox_contract_row(_outbox_rule_id_t id)
{
   return &rules[id];
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
