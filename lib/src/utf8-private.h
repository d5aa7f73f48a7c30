/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The UTF-8 check (utf8.c): the lowest of liboutbox's validation layers, used by the BSON walk
 * (bson-walk.c), the input checks (check.c) and the relay. Stateless and thread-safe.
 */
#ifndef OUTBOX_UTF8_PRIVATE_H
#define OUTBOX_UTF8_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

/* bson_utf8_validate(s, len, allow_nul), with a fast path for ASCII (also used by the
 * relay, whose events carry the same data). */
bool _outbox_utf8_valid(const char *s, size_t len, bool allow_nul);

#endif /* OUTBOX_UTF8_PRIVATE_H */
