/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The replay measurement (replay.c): outbox-admin replay publishing an archive again.
 */
#ifndef OUTBOX_BENCH_REPLAY_H
#define OUTBOX_BENCH_REPLAY_H

#include <mongoc/mongoc.h>

#include "bench.h"
#include "subscriber.h"

/* outbox-admin replay's in-flight window (REPLAY_WINDOW in relay/admin/replay.c): its
 * ceiling is measured with the same. */
#define BENCH_REPLAY_WINDOW 64

/* Writes an archive of o->events entries, replays it with o->admin_path and fills @out
 * (not its baseline). Returns false (and says why on stderr, with outbox-admin's last log
 * lines) when not every event arrived in per-entity order. */
bool bench_replay_run(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                      bench_sub_t *sub, bench_replay_t *out);

#endif /* OUTBOX_BENCH_REPLAY_H */
