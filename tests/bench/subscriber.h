/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The benchmark's MQTT 5 subscriber (paho MQTTAsync): subscribes to "#" at QoS 1 and, for
 * every message under the current topic prefix, records when the event {bench_n: N} first
 * arrived and in which order. The arrays are sized per measurement by bench_sub_reset().
 */
#ifndef OUTBOX_BENCH_SUBSCRIBER_H
#define OUTBOX_BENCH_SUBSCRIBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_sub bench_sub_t;

typedef struct {
   size_t distinct;           /* events seen at least once */
   size_t total;              /* messages under the prefix, duplicates included */
   size_t stray;              /* under the prefix but without a bench_n in range */
   uint64_t bytes;            /* payload bytes of the counted messages */
   int64_t first_ns, last_ns; /* first message, last new event (CLOCK_MONOTONIC) */
} bench_sub_stats_t;

/* Connects to `uri` (MQTT 5, clean start) and subscribes. Returns NULL and prints why on
 * failure. Destroy with bench_sub_destroy(). */
bench_sub_t *bench_sub_new(const char *uri);

/* Disconnects and frees. NULL is allowed. */
void bench_sub_destroy(bench_sub_t *s);

/* Starts a new measurement: from now on only messages whose topic starts with `prefix` count,
 * and events base .. base+count-1 are expected. Earlier arrays are freed. */
void bench_sub_reset(bench_sub_t *s, const char *prefix, int64_t base, size_t count);

/* Waits until all expected events arrived or `deadline_ns` (CLOCK_MONOTONIC) passed.
 * Returns true when all arrived. */
bool bench_sub_wait_all(bench_sub_t *s, int64_t deadline_ns);

/* Waits until at least `n` distinct events arrived or the deadline passed. */
bool bench_sub_wait_n(bench_sub_t *s, size_t n, int64_t deadline_ns);

void bench_sub_stats(bench_sub_t *s, bench_sub_stats_t *out);

/* First-arrival time (0 = not yet) and arrival rank (0 = not yet, else 1, 2, ...) of event
 * base+i. Owned by the subscriber, valid until the next reset; read them only after a wait
 * returned true or once the publishers have stopped. */
const int64_t *bench_sub_recv_ns(bench_sub_t *s);
const uint32_t *bench_sub_rank(bench_sub_t *s);

#endif /* OUTBOX_BENCH_SUBSCRIBER_H */
