/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A paho MQTTAsync publisher that sends messages shaped like the relay's (the same topic
 * depth, the same CloudEvents JSON layout and size, the content type and, unless told
 * otherwise, the four MQTT 5 user properties) at QoS 1 within an in-flight window. It is the
 * ceiling any relay on one paho connection can reach. outbox-bench runs it in a process of
 * its own (outbox-bench-pub, pub-main.c) for the headline ceiling, and inside the benchmark
 * process for the secondary, in-process figure.
 *
 * One thread sends (bench_pub_send); paho's threads deliver the acknowledgements.
 */
#ifndef OUTBOX_BENCH_PUBLISHER_H
#define OUTBOX_BENCH_PUBLISHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct bench_pub bench_pub_t;

typedef struct {
   size_t acked, failed;
   int64_t last_ack_ns; /* CLOCK_MONOTONIC of the last acknowledgement, 0 if none */
} bench_pub_stats_t;

/* Lowers paho's internal trace level to ERROR, as the relay does (relay_log_sync_paho): above
 * it, paho 1.3.12 formats every protocol trace line and records every function entry even
 * when nothing is printed. Call after creating a client (creating the first one resets it). */
void bench_paho_quiet(void);

/* Connects to `uri` (MQTT 5, clean start) with room for `window` messages in flight and waits
 * up to 10 s for the CONNACK. Returns NULL (and says why on stderr) on failure. */
bench_pub_t *bench_pub_new(const char *uri, int window);

/* The broker's Receive Maximum from the CONNACK, 0 if it sent none. */
int bench_pub_receive_max(const bench_pub_t *p);

/* "jemalloc" when this process runs jemalloc's malloc (linked or preloaded), else "glibc". */
const char *bench_malloc_name(void);

/* Sends message number `n` of a run: topic `prefix` + "ent-NNNNNN" (n modulo 1000 entities),
 * data of about `payload` bytes holding {bench_n: n}; the four user properties unless `bare`.
 * Waits while `window` messages are in flight. False when paho refuses it. */
bool bench_pub_send(bench_pub_t *p, const char *prefix, size_t n, size_t payload, int window,
                    bool bare);

/* Waits until nothing is in flight or `deadline_ns` (CLOCK_MONOTONIC) passed. */
bool bench_pub_wait_idle(bench_pub_t *p, int64_t deadline_ns);

void bench_pub_stats(bench_pub_t *p, bench_pub_stats_t *out);

/* Disconnects and frees; NULL is allowed. */
void bench_pub_destroy(bench_pub_t *p);

#endif /* OUTBOX_BENCH_PUBLISHER_H */
