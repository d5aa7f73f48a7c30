/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The $jsonSchema property blocks that the stored contract (schema.c) and the archive
 * contract (archive-schema.c) share: one place says what an event's seq, type and headers
 * must be. Each appends one {name: {...}} to a "properties" document. No state.
 */
#ifndef OUTBOX_SCHEMA_PROPS_PRIVATE_H
#define OUTBOX_SCHEMA_PROPS_PRIVATE_H

#include <bson/bson.h>

#include "outbox/contract.h"

/* An event's type: what outbox_event_new() accepts (OUTBOX_CONTRACT_TEXT_EVENT_TYPE). */
#define _OUTBOX_EVENT_TYPE_PATTERN "^[A-Za-z0-9._-]{1,128}$"
/* A lowercase UUID v4 (OUTBOX_CONTRACT_TEXT_UUID). */
#define _OUTBOX_UUID_V4_PATTERN                                                                    \
   "^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"

/* {name: {bsonType: type, description: what}}; no description when @what is NULL. */
void _outbox_schema_prop(bson_t *props, const char *name, const char *type, const char *what);

/* {name: {bsonType: "long", minimum: minimum, description: what}}. */
void _outbox_schema_long_prop(bson_t *props, const char *name, int64_t minimum, const char *what);

/* {name: {bsonType: "string", pattern: pattern, description: what}}. */
void _outbox_schema_pattern_prop(bson_t *props, const char *name, const char *pattern,
                                 const char *what);

/* An event's type: a string matching _OUTBOX_EVENT_TYPE_PATTERN. */
void _outbox_schema_event_type_prop(bson_t *props, const char *name);

/* An event's headers: {name: {bsonType: "object", additionalProperties: {bsonType:
 * "string"}}}, a document of string values only. */
void _outbox_schema_headers_prop(bson_t *props, const char *name);

/* {name: {...}} for a rule of the event contract (outbox/contract.h): bsonType from the
 * written form's types, bounds and pattern from the written form (@archived: the accepted
 * form, what the relay publishes and archives), description @what (NULL: the rule's). The
 * EVENT "headers" rule also gets the HEADER "count" and "value" rules. */
void _outbox_schema_rule_prop(bson_t *props, const char *name, const outbox_contract_rule_t *rule,
                              bool archived, const char *what);

#endif /* OUTBOX_SCHEMA_PROPS_PRIVATE_H */
