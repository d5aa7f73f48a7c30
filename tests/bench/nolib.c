/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Stand-ins while liboutbox has no implementation to link against (see meson.build): the
 * rest of the benchmark keeps building and running.
 */
#include <stdio.h>

#include "parts.h"

void
bench_steady_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                     bench_results_t *r)
{
   fprintf(stderr, "outbox-bench: built without liboutbox: steady state skipped\n");
}

void
bench_lib_run_all(const bench_opts_t *o, const bench_servers_t *s, bench_results_t *r)
{
   fprintf(stderr, "outbox-bench: built without liboutbox: library benchmark skipped\n");
}
