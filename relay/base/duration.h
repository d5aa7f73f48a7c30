/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Durations as operators write them, one grammar for the relay's options (--archive-ttl,
 * --message-expiry) and outbox-admin's (--older-than, --max-age): digits with at most one
 * '.', then a unit (ms, s, m, h, d, w; none: seconds), such as 30d, 1.5h or 250ms. Pure; any
 * thread.
 */
#ifndef RELAY_BASE_DURATION_H
#define RELAY_BASE_DURATION_H

#include <stdbool.h>
#include <stdint.h>

/* @text as whole milliseconds into @ms. False (and @ms untouched) for anything else: a sign,
 * spaces, an exponent, "nan", hex, a fraction finer than a millisecond, or more than
 * @max_ms. */
bool relay_duration_parse(const char *text, int64_t max_ms, int64_t *ms);

#endif /* RELAY_BASE_DURATION_H */
