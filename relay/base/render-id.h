/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Entity ids as text, for topics, "subject" and log lines alike. At the bottom (base/) because
 * the table names its entities with it and the sender (mqtt/publish.c) and the writer's logs
 * read that name. Pure functions: any thread.
 */
#ifndef RELAY_BASE_RENDER_ID_H
#define RELAY_BASE_RENDER_ID_H

#include <stddef.h>

#include <bson/bson.h>

/* Renders an entity id the way topics and "subject" show it, never empty: a string as
 * itself, an ObjectId as 24 lowercase hex digits, anything else (numbers too) as canonical
 * extended JSON. A string that would read as another rendering (empty, starting with '"',
 * '{' or '[', or exactly null, true or false) is shown in double quotes with '"' and '\\'
 * escaped. Distinct ids render differently, except an ObjectId and the string of its 24 hex
 * digits, kept alike on purpose (writers store hex strings as ids, consumers read them as
 * ObjectIds). Returns a bson_malloc'ed string (NUL-terminated; *@len excludes the terminator
 * and counts any NUL bytes inside a string id). */
char *relay_render_id(const bson_value_t *id, size_t *len);

#endif /* RELAY_BASE_RENDER_ID_H */
