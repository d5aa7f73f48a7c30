/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A cluster time (BSON Timestamp) as the relay passes it between the stream, the store and
 * the partition owner. A value type at the bottom of the relay (base/ includes nothing of the
 * relay's): no state; any thread.
 */
#ifndef RELAY_BASE_TS_H
#define RELAY_BASE_TS_H

#include <stdbool.h>
#include <stdint.h>

/* A cluster time (BSON Timestamp). */
typedef struct {
   uint32_t t, i;
} relay_ts_t;

/* -1, 0, 1 as @a is before, equal to, after @b. */
int relay_ts_cmp(relay_ts_t a, relay_ts_t b);

/* The cluster time a change stream resume token's `_data` string begins with, into @ts;
 * false (and @ts untouched) when @data does not begin with one (a token of another form). */
bool relay_ts_from_token_data(const char *data, relay_ts_t *ts);

#endif /* RELAY_BASE_TS_H */
