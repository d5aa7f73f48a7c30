/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The one-pass structural and UTF-8 walk over raw BSON (bson-walk.c), below the input checks
 * of check.c and used by the relay for the events it publishes. Stateless and thread-safe.
 */
#ifndef OUTBOX_BSON_WALK_PRIVATE_H
#define OUTBOX_BSON_WALK_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Flags of _outbox_bson_walk(). */
enum {
   _OUTBOX_WALK_NO_DOLLAR_KEYS = 1, /* no key starts with '$', at any depth */
   _OUTBOX_WALK_NO_EMPTY_KEYS = 2,  /* no empty key, at any depth */
   _OUTBOX_WALK_JSON_STRINGS = 4,   /* string values may hold NUL (JSON writes \u0000); symbol
                                     * and code values are checked as strings too; nesting
                                     * past 100 is not looked into */
};

/* True if the @len bytes at @data are one well-formed BSON document (bson-walk.c says
 * exactly what that means: libbson's structure rules, applied to every nested document)
 * whose keys and string values, at any depth, are valid UTF-8 without NUL (with
 * JSON_STRINGS: NUL allowed in values), obeying @flags. Nesting deeper than 100 fails
 * (with JSON_STRINGS it is not looked into). Reads nothing outside @data; thread-safe. */
bool _outbox_bson_walk(const uint8_t *data, size_t len, int flags);

#endif /* OUTBOX_BSON_WALK_PRIVATE_H */
