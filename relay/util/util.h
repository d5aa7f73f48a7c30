/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Small helpers shared by the relay's modules: clocks, reconnect backoff, stopping worker
 * threads. Thread-safe.
 */
#ifndef RELAY_UTIL_H
#define RELAY_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Monotonic milliseconds (for timers). */
int64_t relay_now_ms(void);

/* Wall-clock milliseconds since the epoch (for ages and lag). */
int64_t relay_wall_ms(void);

/* The next delay of an exponential backoff kept in *@backoff_ms (0 = fresh): the first call
 * gives @min_ms (at least 1), each next one doubles up to @max_ms (callers pass the config's
 * reconnect_min_ms and reconnect_max_ms; util/ knows no config). */
int relay_backoff_next(int min_ms, int max_ms, int *backoff_ms);

/* Stops a worker thread that waits on @cond under @lock and leaves when it sees *@stop: sets
 * it under the lock, wakes every waiter, and joins @thread. Call from the owning thread. */
void relay_thread_stop(pthread_mutex_t *lock, pthread_cond_t *cond, bool *stop, pthread_t thread);

#endif /* RELAY_UTIL_H */
