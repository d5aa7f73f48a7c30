/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Canonical byte encoding of BSON values for hash lookups: values MongoDB considers equal
 * ($eq, unique indexes) encode to the same bytes, e.g. 1, 1L and 1.0.
 */
#ifndef MD_KEYENC_H
#define MD_KEYENC_H

#include <bson/bson.h>

/* Appends the encoding of `value` (NULL means missing, encoded like null) to `out`. */
void md_keyenc_append(bson_string_t *out, const bson_value_t *value);
/* Appends the encoding of `doc`'s top-level `field` (an _id, a session's id); false (nothing
 * appended) when the field is missing. */
bool md_keyenc_field(bson_string_t *out, const bson_t *doc, const char *field);

#endif
