/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Event ids: random UUIDs (version 4) in their lowercase 36-character text form (uuid.c, whose
 * only state is per thread). Thread-safe.
 */
#ifndef OUTBOX_UUID_PRIVATE_H
#define OUTBOX_UUID_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#define _OUTBOX_UUID_LEN 36

/* Writes a new random UUID v4 and a terminating NUL into out (37 bytes). The bytes come from
 * getrandom(); aborts if the kernel cannot provide them, because a predictable or repeated
 * event id would silently break consumers' deduplication. Thread-safe. */
void _outbox_uuid_v4(char out[_OUTBOX_UUID_LEN + 1]);

/* True if s[0..len) is a UUID in lowercase canonical form (8-4-4-4-12 hex digits). Any UUID
 * version is accepted: producers in other languages may use other versions. */
bool _outbox_uuid_is_valid(const char *s, size_t len);

#endif /* OUTBOX_UUID_PRIVATE_H */
