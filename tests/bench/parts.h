/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The measurements that go through liboutbox: steady state (writers -> relay -> subscriber)
 * and the library benchmark (liboutbox against a plain mongoc update of the same shape).
 */
#ifndef OUTBOX_BENCH_PARTS_H
#define OUTBOX_BENCH_PARTS_H

#include <mongoc/mongoc.h>

#include "bench.h"
#include "subscriber.h"

/* Fills r->saturation, r->max_sustainable_per_s and r->steady[0..2] (25, 50, 90%). */
void bench_steady_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                          bench_results_t *r);

/* Fills r->lib[] for 1, 2 and 8 threads with 1 and 10 events per commit. */
void bench_lib_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_results_t *r);

/* group.c: fills r->failover (two members, kill -9, first message of an orphaned partition)
 * and r->group[] (drain of 1, 2 and 4 members). Needs the relay's internal library. */
struct bench_sub;
void bench_group_failover(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                          bench_sub_t *sub, bench_results_t *r);
void bench_group_drain(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                       bench_sub_t *sub, bench_results_t *r);

#endif /* OUTBOX_BENCH_PARTS_H */
