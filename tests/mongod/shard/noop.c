/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The shards' periodic no-op writer: a thread of the router that moves an idle shard's
 * clock every --periodic-noop-ms. It takes the router's lock only to wait and each shard's
 * lock for its tick; md_noop_start/md_noop_stop are called by md_router_attach/detach.
 */
#include <time.h>

#include "shard/router-private.h"

/* As 6.0's periodic no-op writer (src/mongo/db/repl/noop_writer.cpp) writes to an idle
 * primary's oplog every periodicNoopIntervalSecs, an idle shard's cluster time moves on:
 * here its clock ticks without an entry (change streams skip no-ops anyway), which is what
 * lets a merged change stream through mongos pass that shard's time. */
static void
noop_tick(md_server_t *shard, md_ts_t *seen)
{
   pthread_mutex_lock(&shard->data.lock);
   md_oplog_t *log = &shard->data.oplog;
   if (md_ts_cmp(log->last, *seen) == 0) {
      uint32_t secs = (uint32_t)time(NULL);
      if (secs > log->last.t) {
         log->last.t = secs;
         log->last.i = 1;
      } else {
         log->last.i++;
      }
      pthread_cond_broadcast(&log->cond);
   }
   *seen = log->last;
   pthread_mutex_unlock(&shard->data.lock);
}

static void *
noop_main(void *arg)
{
   md_router_t *r = arg;
   md_ts_t seen[MD_MAX_SHARDS] = {{0, 0}};
   pthread_mutex_lock(&r->lock);
   while (r->noop_running) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      int64_t ns = until.tv_nsec + (int64_t)r->front->opts.periodic_noop_ms * 1000000;
      until.tv_sec += (time_t)(ns / 1000000000);
      until.tv_nsec = (long)(ns % 1000000000);
      pthread_cond_timedwait(&r->noop_cond, &r->lock, &until);
      if (!r->noop_running) {
         break;
      }
      pthread_mutex_unlock(&r->lock);
      for (int s = 0; s < r->n_shards; s++) {
         noop_tick(r->shards[s], &seen[s]);
      }
      pthread_mutex_lock(&r->lock);
   }
   pthread_mutex_unlock(&r->lock);
   return NULL;
}

void
md_noop_start(md_router_t *r)
{
   r->noop_running = true;
   pthread_create(&r->noop_thread, NULL, noop_main, r);
}

void
md_noop_stop(md_router_t *r)
{
   pthread_mutex_lock(&r->lock);
   r->noop_running = false;
   pthread_cond_signal(&r->noop_cond);
   pthread_mutex_unlock(&r->lock);
   pthread_join(r->noop_thread, NULL);
}
