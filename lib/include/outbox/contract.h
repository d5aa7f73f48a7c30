/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * THE EVENT CONTRACT, in one table: every field of a stored event and every part of a message
 * the relay makes, with the BSON types, limits and text rules it may hold and what happens to
 * a value that breaks them. liboutbox's checks (outbox_event_validate(),
 * outbox_event_set_header()), the $jsonSchema validators (outbox/schema.h, outbox/archive.h),
 * outbox-relay's acceptance of events written by any client, its archive and the README's
 * contract table are all made from this table; a new field is one new row.
 *
 * Each rule has two forms: `written`, what liboutbox writes (and the stored contract's
 * $jsonSchema requires), and `accepted`, what the relay publishes when another client wrote
 * it (writers in other languages store an int32 seq, leave out time ...). A value outside
 * `accepted` has the rule's `outcome`; a liboutbox caller's value outside `written` has
 * `at_write` (OUTBOX_CONTRACT_REFUSED_AT_WRITE for what a caller gives; fields liboutbox fills
 * itself have OUTBOX_CONTRACT_NOT_APPLICABLE).
 *
 * Tests and tools iterate it: outbox_contract_rules() gives the rows, each form gives its
 * types (outbox_contract_type_allowed()), its bounds and its text rules, and
 * outbox_contract_check() says which outcome a value has.
 *
 * THREADS. Everything here is constant data and pure functions: safe from any thread.
 */
#ifndef OUTBOX_CONTRACT_H
#define OUTBOX_CONTRACT_H

#include <bson/bson.h>

#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* What a rule is about. */
typedef enum {
   /* The entity an event belongs to: its document's _id (the relay renders it into topics
    * and the CloudEvents subject). */
   OUTBOX_CONTRACT_ENTITY = 1,
   /* A field of a stored event, an element of the document's events array. */
   OUTBOX_CONTRACT_EVENT = 2,
   /* One header of an event's headers document (name or value). */
   OUTBOX_CONTRACT_HEADER = 3,
   /* A part of the MQTT message the relay publishes for an event. */
   OUTBOX_CONTRACT_MESSAGE = 4,
} outbox_contract_scope_t;

/* What happens to a value that breaks a rule. */
typedef enum {
   /* liboutbox fills the field itself: a caller cannot break the rule. */
   OUTBOX_CONTRACT_NOT_APPLICABLE = 0,
   /* liboutbox returns false with OUTBOX_ERROR_INVALID_EVENT (or _INVALID_ARGUMENT) and a
    * clear message; nothing is stored. */
   OUTBOX_CONTRACT_REFUSED_AT_WRITE = 1,
   /* Published as it is (e.g. an event without a time: the message has no time). */
   OUTBOX_CONTRACT_PUBLISHED_AS_IS = 2,
   /* The event is published without this part (a header), which is counted in
    * outbox_relay_headers_dropped_total and logged with the rule's reason. */
   OUTBOX_CONTRACT_LEFT_OUT = 3,
   /* The event is moved to its document's dead letters with the rule's reason. */
   OUTBOX_CONTRACT_DEAD_LETTERED = 4,
} outbox_contract_outcome_t;

/* Text rules of a string (a mask). For a document (an event's data) they apply to every key
 * and every string inside it, at any depth. */
typedef enum {
   /* Valid UTF-8: shortest forms, no surrogates, nothing above U+10FFFF. */
   OUTBOX_CONTRACT_TEXT_UTF8 = 1 << 0,
   /* No U+0000. */
   OUTBOX_CONTRACT_TEXT_NO_NUL = 1 << 1,
   /* What MQTT 5 (section 1.5.4) lets a receiver refuse, refused: valid UTF-8 without U+0000,
    * no control character (U+0001..U+001F, U+007F..U+009F) and no non-character
    * (U+FDD0..U+FDEF and the last two code points of every plane: U+FFFE, U+FFFF, U+1FFFE
    * ... U+10FFFF). mosquitto closes the connection on such a string in a topic or a
    * property. */
   OUTBOX_CONTRACT_TEXT_MQTT = 1 << 2,
   /* 1..128 characters of [A-Za-z0-9._-] (an event type). */
   OUTBOX_CONTRACT_TEXT_EVENT_TYPE = 1 << 3,
   /* A lowercase UUID v4, 36 characters (the ids liboutbox makes). */
   OUTBOX_CONTRACT_TEXT_UUID = 1 << 4,
   /* No key (and no string) starting with '$', no empty key. */
   OUTBOX_CONTRACT_TEXT_NO_DOLLAR = 1 << 5,
   /* Not one of the reserved names (outbox_contract_name_is_reserved()). */
   OUTBOX_CONTRACT_TEXT_NOT_RESERVED = 1 << 6,
   /* W3C Trace Context, for the header named by the rule (traceparent, tracestate). */
   OUTBOX_CONTRACT_TEXT_TRACE_CONTEXT = 1 << 7,
} outbox_contract_text_t;

/* The bit of BSON type `t` in a form's `types`. */
#define OUTBOX_CONTRACT_TYPE(t)                                                                    \
   ((uint32_t)1 << ((t) == BSON_TYPE_MAXKEY ? 30 : (t) == BSON_TYPE_MINKEY ? 31 : (t)&31))
#define OUTBOX_CONTRACT_ANY_TYPE UINT32_MAX

/* Limits of the table that code must know at compile time (arrays are sized by them); the
 * table's rows use these. */
#define OUTBOX_CONTRACT_HEADERS_MAX 16         /* headers per event */
#define OUTBOX_CONTRACT_HEADER_NAME_MAX 128    /* bytes */
#define OUTBOX_CONTRACT_HEADER_VALUE_MAX 4096  /* bytes */
#define OUTBOX_CONTRACT_HEADERS_BYTES_MAX 8192 /* names and values of all headers */

/* The replay marker's name: the CloudEvents extension attribute and MQTT 5 user property that
 * outbox-admin replay sets on replayed messages, and therefore a reserved header name. */
#define OUTBOX_CONTRACT_REPLAY_MARKER "replay"

/* No bound (a form's min or max). */
#define OUTBOX_CONTRACT_UNBOUNDED INT64_MIN

/* One form of a rule. */
typedef struct {
   bool required;  /* the field must be there */
   uint32_t types; /* BSON types allowed: OUTBOX_CONTRACT_TYPE() bits */
   /* Bounds, OUTBOX_CONTRACT_UNBOUNDED when none: for integers the value, for dates
    * milliseconds since the epoch, for strings their length in bytes, for documents their
    * number of keys. */
   int64_t min, max;
   unsigned text; /* outbox_contract_text_t for string values (and header names) */
} outbox_contract_form_t;

/* One rule of the contract. */
typedef struct {
   outbox_contract_scope_t scope;
   /* The field ("id", "seq" ...), "name"/"value"/"count"/"bytes" for headers, the message
    * part ("topic", "user property" ...), "_id" for the entity. */
   const char *name;
   outbox_contract_form_t written;     /* what liboutbox writes; the stored $jsonSchema */
   outbox_contract_form_t accepted;    /* what the relay publishes from any writer */
   outbox_contract_outcome_t at_write; /* a liboutbox caller's value outside `written` */
   outbox_contract_outcome_t outcome;  /* any writer's value outside `accepted` */
   /* The reason logged, counted or recorded in the dead letter (a static sentence). */
   const char *reason;
   const char *description; /* one line, for the README's table */
} outbox_contract_rule_t;

/* Sets *rules to the table and returns its length. The table is static; never NULL. */
OUTBOX_API size_t outbox_contract_rules(const outbox_contract_rule_t **rules);

/* The rule of `scope` named `name`, or NULL. */
OUTBOX_API const outbox_contract_rule_t *outbox_contract_find(outbox_contract_scope_t scope,
                                                              const char *name);

/* True if `form` allows BSON type `type`. */
OUTBOX_API bool outbox_contract_type_allowed(const outbox_contract_form_t *form, bson_type_t type);

/* Checks `value` (NULL: the field is missing) against one form of `rule` (`written` when
 * `strict`, else `accepted`): required, type, bounds and text rules. Returns NULL when it
 * holds, else the rule's reason. `header_name` is the header's name for a HEADER "value"
 * rule (trace context is checked by name), else NULL. */
OUTBOX_API const char *outbox_contract_check(const outbox_contract_rule_t *rule,
                                             const bson_value_t *value, bool strict,
                                             const char *header_name);

/* True if s[0..len) follows every text rule in `text` (outbox_contract_text_t). */
OUTBOX_API bool outbox_contract_text_valid(const char *s, size_t len, unsigned text);

/* The names no header may take, compared without case: the relay's own user properties
 * (event-id, event-type, entity-id, seq), the CloudEvents context attributes (specversion,
 * id, source, type, subject, time, datacontenttype, dataschema, data, data_base64) and the
 * replay marker (replay). Sets *names to the static, NULL-terminated list; returns its
 * length. */
OUTBOX_API size_t outbox_contract_reserved_names(const char *const **names);

/* True if `name` is reserved (outbox_contract_reserved_names()), compared without case. */
OUTBOX_API bool outbox_contract_name_is_reserved(const char *name);

/* The name of `outcome` as the README's table writes it ("refused at write", "published as
 * is", "left out", "dead-lettered", "n/a"). */
OUTBOX_API const char *outbox_contract_outcome_name(outbox_contract_outcome_t outcome);

OUTBOX_END_DECLS

#endif /* OUTBOX_CONTRACT_H */
