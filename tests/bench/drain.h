/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#ifndef OUTBOX_BENCH_DRAIN_H
#define OUTBOX_BENCH_DRAIN_H

#include <mongoc/mongoc.h>

#include "backlog.h"
#include "bench.h"
#include "subscriber.h"

typedef struct {
   const bench_opts_t *opts;
   size_t events, entities, payload;
   int window, per_commit;
   bool stream; /* false: backlog before the relay starts (sweep); true: written live */
   const char *const *extra_args; /* more relay arguments (NULL-terminated), or NULL */
} bench_drain_run_t;

/* Runs one drain on a fresh collection and fills `out`. Returns false (and says why on
 * stderr, with the relay's last log lines) when not every event arrived and was cleared. */
bool bench_drain_run(const bench_drain_run_t *run, const bench_servers_t *s, mongoc_client_t *c,
                     bench_sub_t *sub, bench_drain_t *out);

/* Waits until `n` distinct events arrived, the deadline passed, or the relay exited; in
 * the last case *relay is set to 0 (the process was reaped and must not be signalled). */
bool bench_relay_wait(bench_sub_t *sub, size_t n, pid_t *relay, int64_t deadline, const char **why);

/* Per entity, events must arrive (first time) in seq order, which is ascending n: how many
 * did not (@rank: bench_sub_rank()). */
size_t bench_order_violations(const bench_layout_t *l, const uint32_t *rank);

/* Prints the last lines of a relay log in the work directory to stderr. */
void bench_relay_log_tail(const bench_servers_t *s, const char *log_name);

#endif /* OUTBOX_BENCH_DRAIN_H */
