/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The TTL monitor thread: every --ttl-interval seconds it runs a TTL pass (data/ttl.c) under
 * the server lock; shutdown wakes it through ttl_cond. Its fields are the server's.
 */
#include <stdatomic.h>
#include <time.h>

#include "data/ttl.h"
#include "net/server.h"

static void *
ttl_main(void *arg)
{
   md_server_t *srv = arg;
   pthread_mutex_lock(&srv->data.lock);
   while (!atomic_load(&srv->stopping)) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += srv->opts.ttl_interval;
      pthread_cond_timedwait(&srv->ttl_cond, &srv->data.lock, &ts);
      if (!atomic_load(&srv->stopping)) {
         size_t n = md_ttl_pass(&srv->data);
         if (n) {
            md_log(srv, "TTL monitor deleted %zu document(s)", n);
         }
      }
   }
   pthread_mutex_unlock(&srv->data.lock);
   return NULL;
}

void
md_ttl_start(md_server_t *srv)
{
   if (srv->opts.ttl_interval > 0) {
      srv->ttl_running = pthread_create(&srv->ttl_thread, NULL, ttl_main, srv) == 0;
   }
}

void
md_ttl_stop(md_server_t *srv)
{
   if (srv->ttl_running) {
      pthread_mutex_lock(&srv->data.lock);
      pthread_cond_broadcast(&srv->ttl_cond);
      pthread_mutex_unlock(&srv->data.lock);
      pthread_join(srv->ttl_thread, NULL);
      srv->ttl_running = false;
   }
}
