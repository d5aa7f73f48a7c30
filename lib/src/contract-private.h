/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event contract's internal face (contract.c, contract-headers.c): rows by name for the
 * code that applies them (liboutbox's checks and schemas, the relay), and the header rules
 * that liboutbox's outbox_event_set_header(), the relay's publishing and its archive share.
 * Constant data and pure functions: thread-safe.
 */
#ifndef OUTBOX_CONTRACT_PRIVATE_H
#define OUTBOX_CONTRACT_PRIVATE_H

#include "outbox/contract.h"

/* The reason of everything that cannot be written as JSON (entity id, data). */
#define _OUTBOX_CONTRACT_JSON_REASON                                                               \
   "event cannot be written as JSON (invalid UTF-8 in the entity id or data)"

/* The rows of the table (contract.c fills rules[] with these designated indices), for the
 * code that applies one on every event without looking it up by name. A new rule is a new
 * value here and a new row there. */
typedef enum {
   _OUTBOX_RULE_ENTITY_ID,
   _OUTBOX_RULE_EVENT_ID,
   _OUTBOX_RULE_EVENT_SEQ,
   _OUTBOX_RULE_EVENT_TYPE,
   _OUTBOX_RULE_EVENT_TIME,
   _OUTBOX_RULE_EVENT_DATA,
   _OUTBOX_RULE_EVENT_CONTENT_TYPE,
   _OUTBOX_RULE_EVENT_HEADERS,
   _OUTBOX_RULE_EVENT_EXPIRES_AT,
   _OUTBOX_RULE_HEADER_NAME,
   _OUTBOX_RULE_HEADER_RESERVED,
   _OUTBOX_RULE_HEADER_VALUE,
   _OUTBOX_RULE_HEADER_TRACE,
   _OUTBOX_RULE_HEADER_DUPLICATE,
   _OUTBOX_RULE_HEADER_COUNT,
   _OUTBOX_RULE_HEADER_BYTES,
   _OUTBOX_RULE_MESSAGE_TOPIC,
   _OUTBOX_RULE_MESSAGE_USER_PROPERTY,
   _OUTBOX_RULE_MESSAGE_PAYLOAD,
   _OUTBOX_RULE_MESSAGE_SIZE,
   _OUTBOX_RULE_MESSAGE_REPLAY,
   _OUTBOX_RULE_COUNT_
} _outbox_rule_id_t;

/* The row @id, without a lookup. */
const outbox_contract_rule_t *_outbox_contract_row(_outbox_rule_id_t id);

/* The rule of @scope named @name; aborts if there is none (a misspelt name is a bug). */
const outbox_contract_rule_t *_outbox_contract_rule(outbox_contract_scope_t scope,
                                                    const char *name);

/* The header rules for one header (name @name of @name_len bytes, value @value) when
 * @count headers (@used bytes of names and values) are already kept: NULL if it may be
 * published (or, @strict, stored by liboutbox), else the reason of the first rule it breaks.
 * A repeated name is the caller's to find. */
const char *_outbox_contract_header_check(const char *name, size_t name_len,
                                          const bson_value_t *value, size_t count, size_t used,
                                          bool strict);

#endif /* OUTBOX_CONTRACT_PRIVATE_H */
