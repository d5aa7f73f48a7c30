/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Small helpers shared by the relay's modules (util.h): clocks, reconnect backoff, stopping
 * worker threads. No state of its own: each call works on what it is given; thread-safe.
 */
#include "util/util.h"

#include <time.h>

int64_t
relay_now_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
relay_wall_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
relay_backoff_next(int min_ms, int max_ms, int *backoff_ms)
{
   int min = min_ms > 0 ? min_ms : 1;
   int max = max_ms > min ? max_ms : min;

   if (*backoff_ms <= 0) {
      *backoff_ms = min;
   } else {
      *backoff_ms = *backoff_ms > max / 2 ? max : *backoff_ms * 2;
   }
   return *backoff_ms;
}

void
relay_thread_stop(pthread_mutex_t *lock, pthread_cond_t *cond, bool *stop, pthread_t thread)
{
   pthread_mutex_lock(lock);
   *stop = true;
   pthread_cond_broadcast(cond);
   pthread_mutex_unlock(lock);
   pthread_join(thread, NULL);
}
