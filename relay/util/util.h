/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Small helpers shared by the relay's modules: clocks and reconnect backoff. Thread-safe.
 */
#ifndef RELAY_UTIL_H
#define RELAY_UTIL_H

#include <stdint.h>

#include "config/config.h"

/* Monotonic milliseconds (for timers). */
int64_t relay_now_ms(void);

/* Wall-clock milliseconds since the epoch (for ages and lag). */
int64_t relay_wall_ms(void);

/* The next delay of an exponential backoff kept in *@backoff_ms (0 = fresh): the first call
 * gives cfg->reconnect_min_ms, each next one doubles up to cfg->reconnect_max_ms. */
int relay_backoff_next(const relay_config_t *cfg, int *backoff_ms);

#endif /* RELAY_UTIL_H */
