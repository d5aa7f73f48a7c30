/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Small string helpers shared across the relay. At the bottom (base/): no state; any thread.
 */
#ifndef RELAY_BASE_STR_H
#define RELAY_BASE_STR_H

#include <stdbool.h>
#include <string.h>

/* Whether @a and @b are both set and equal: member ids, owners, reservations (an absent one
 * is the same as nobody, never as another absent one). */
static inline bool
relay_str_same(const char *a, const char *b)
{
   return a && b && !strcmp(a, b);
}

#endif /* RELAY_BASE_STR_H */
