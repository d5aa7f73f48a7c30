/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The election thread and the wake-up of awaitable hellos (see election.h). The thread owns
 * no state: it runs md_topology_tick under the server lock and sleeps on election_cond.
 * Waking a connection writes to its eventfd under conns_lock (taken after the server lock,
 * the order every path uses).
 */
#include "net/election.h"
#include "topology/replication.h"

#include <errno.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

/* The topology's `changed` hook: every connection waiting in an awaitable hello answers. */
static void
wake_connections(void *ctx)
{
   md_server_t *srv = ctx;
   uint64_t one = 1;
   pthread_mutex_lock(&srv->conns_lock);
   for (md_conn_t *c = srv->conns; c; c = c->next) {
      if (c->wake_fd >= 0 && write(c->wake_fd, &one, sizeof one) < 0 && errno != EAGAIN) {
         md_log(srv, "conn%d: cannot wake: %s", (int)c->id, strerror(errno));
      }
   }
   pthread_mutex_unlock(&srv->conns_lock);
   pthread_cond_broadcast(&srv->election_cond);
}

static void *
election_main(void *arg)
{
   md_server_t *srv = arg;
   pthread_mutex_lock(&srv->data.lock);
   while (!atomic_load(&srv->stopping)) {
      int64_t now = md_wall_ms();
      md_repl_advance(&srv->topo, &srv->data.oplog, now, NULL); /* candidates' positions */
      int64_t next = md_topology_tick(&srv->topo, now);
      if (next == INT64_MAX) {
         pthread_cond_wait(&srv->election_cond, &srv->data.lock);
         continue;
      }
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      int64_t ms = next - now;
      ts.tv_sec += ms / 1000;
      ts.tv_nsec += (ms % 1000) * 1000000;
      if (ts.tv_nsec >= 1000000000) {
         ts.tv_sec++;
         ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&srv->election_cond, &srv->data.lock, &ts);
   }
   pthread_mutex_unlock(&srv->data.lock);
   return NULL;
}

void
md_election_start(md_server_t *srv)
{
   srv->topo.changed = wake_connections;
   srv->topo.changed_ctx = srv;
   /* One member too: after a forced stepdown it elects itself when its period ends. */
   srv->election_running = pthread_create(&srv->election_thread, NULL, election_main, srv) == 0;
}

void
md_election_wake(md_server_t *srv)
{
   pthread_cond_broadcast(&srv->election_cond);
}

void
md_election_stop(md_server_t *srv)
{
   if (srv->election_running) {
      pthread_mutex_lock(&srv->data.lock);
      pthread_cond_broadcast(&srv->election_cond);
      pthread_mutex_unlock(&srv->data.lock);
      pthread_join(srv->election_thread, NULL);
      srv->election_running = false;
   }
}
