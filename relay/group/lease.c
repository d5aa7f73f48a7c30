/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease thread: its loop, its queues and the gate. The lease table (tick.h: owned set,
 * epochs, handoffs asked) belongs to the lease thread alone, which runs the ticks and the
 * writes between them on it; the main thread sees it only through the events, the atomic
 * deadlines and the counters. The store is MongoDB's (lease-mongo.c), opened here and used by
 * the lease thread alone.
 */
#include "group/lease.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "group/lease-mongo.h"
#include "group/tick.h"
#include "util/error.h"
#include "util/log.h"
#include "util/util.h"

struct relay_drained_t {
   int part;
   int64_t epoch;
};

struct relay_lease_t {
   relay_tick_t tick; /* lease thread only, but for its atomics (tick.h) */
   relay_lease_mongo_t *store;
   char *me, *host, *settings;
   void (*wake)(void *);
   void *wake_ctx;

   /* Lease thread only. */
   int64_t *scratch_epochs; /* a copy of the main thread's epochs for a checkpoint */

   pthread_t thread;
   bool started;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   /* Under @lock: what the main thread asked for, and when the thread acts next. */
   bool stop, shutdown_asked, shutdown_done;
   bool eligible;
   bson_t *ckpt_token;
   relay_partset_t ckpt_valid;
   int64_t *ckpt_epochs;
   struct relay_drained_t *drained;
   size_t n_drained;
   int64_t next_tick_ns; /* CLOCK_MONOTONIC */
   int64_t last_ckpt_ns; /* CLOCK_MONOTONIC */
   /* Under @lock: events for the main thread. */
   relay_lease_event_t *head, *tail;
};

int64_t
relay_boot_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_BOOTTIME, &ts);
   return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t
mono_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The tick's events (lease thread): appended to the main thread's queue, which is woken. */
static void
post_events(void *ctx, relay_lease_event_t *first, relay_lease_event_t *last)
{
   relay_lease_t *l = ctx;
   pthread_mutex_lock(&l->lock);
   if (l->tail) {
      l->tail->next = first;
   } else {
      l->head = first;
   }
   l->tail = last;
   pthread_mutex_unlock(&l->lock);
   l->wake(l->wake_ctx);
}

relay_lease_event_t *
relay_lease_pop(relay_lease_t *l)
{
   relay_lease_event_t *ev;
   pthread_mutex_lock(&l->lock);
   ev = l->head;
   if (ev) {
      l->head = ev->next;
      if (!l->head) {
         l->tail = NULL;
      }
      ev->next = NULL;
   }
   pthread_mutex_unlock(&l->lock);
   return ev;
}

bool
relay_lease_may_publish(const relay_lease_t *l, int part)
{
   return relay_tick_may_publish(&l->tick, part, relay_boot_ns());
}

bool
relay_lease_healthy(const relay_lease_t *l)
{
   int64_t ok = atomic_load(&l->tick.last_ok_ns);
   return ok != 0 && relay_boot_ns() - ok < l->tick.cfg->lease_ttl_ms * 1000000LL;
}

bool
relay_lease_refused(const relay_lease_t *l)
{
   return atomic_load(&l->tick.refused);
}

void
relay_lease_checkpoint(relay_lease_t *l, const bson_t *token, const relay_partset_t *valid,
                       const int64_t *epochs)
{
   pthread_mutex_lock(&l->lock);
   bson_destroy(l->ckpt_token);
   l->ckpt_token = bson_copy(token);
   l->ckpt_valid = *valid;
   memcpy(l->ckpt_epochs, epochs, sizeof(int64_t) * (size_t)l->tick.cfg->partitions);
   pthread_cond_signal(&l->cond);
   pthread_mutex_unlock(&l->lock);
}

void
relay_lease_drained(relay_lease_t *l, int part, int64_t epoch)
{
   pthread_mutex_lock(&l->lock);
   l->drained[l->n_drained].part = part;
   l->drained[l->n_drained++].epoch = epoch;
   pthread_cond_signal(&l->cond);
   pthread_mutex_unlock(&l->lock);
}

void
relay_lease_set_eligible(relay_lease_t *l, bool eligible)
{
   pthread_mutex_lock(&l->lock);
   if (l->eligible != eligible) {
      l->eligible = eligible;
      l->next_tick_ns = 0; /* act on it now */
      pthread_cond_signal(&l->cond);
   }
   pthread_mutex_unlock(&l->lock);
}

/* Takes the pending checkpoint if one is due (under the lock). */
static bson_t *
take_checkpoint(relay_lease_t *l, int64_t now, bool force, relay_partset_t *valid, int64_t *epochs)
{
   bson_t *token = NULL;
   if (l->ckpt_token &&
       (force || now - l->last_ckpt_ns >= l->tick.cfg->checkpoint_interval_ms * 1000000LL)) {
      token = l->ckpt_token;
      l->ckpt_token = NULL;
      *valid = l->ckpt_valid;
      memcpy(epochs, l->ckpt_epochs, sizeof(int64_t) * (size_t)l->tick.cfg->partitions);
      l->last_ckpt_ns = now;
   }
   return token;
}

/* Runs the pending checkpoint write, if due; called with the lock held, returns with it. */
static bool
maybe_checkpoint(relay_lease_t *l, bool force)
{
   relay_partset_t valid;
   bson_t *token = take_checkpoint(l, mono_ns(), force, &valid, l->scratch_epochs);
   if (!token) {
      return false;
   }
   pthread_mutex_unlock(&l->lock);
   relay_tick_write_checkpoint(&l->tick, token, &valid, l->scratch_epochs);
   bson_destroy(token);
   pthread_mutex_lock(&l->lock);
   return true;
}

/* Handoffs the main thread finished draining; called with the lock held, returns with it. */
static bool
maybe_release_drained(relay_lease_t *l)
{
   struct relay_drained_t batch[64];
   size_t n = 0;
   while (l->n_drained > 0 && n < 64) {
      batch[n++] = l->drained[--l->n_drained];
   }
   if (n == 0) {
      return false;
   }
   pthread_mutex_unlock(&l->lock);
   for (size_t i = 0; i < n; i++) {
      relay_tick_hand_over(&l->tick, batch[i].part, batch[i].epoch);
   }
   pthread_mutex_lock(&l->lock);
   return true;
}

static void
wait_until(relay_lease_t *l, int64_t when_ns)
{
   struct timespec ts;
   int64_t wait = when_ns - mono_ns();
   if (wait <= 0) {
      return;
   }
   if (l->ckpt_token) {
      int64_t due = l->last_ckpt_ns + l->tick.cfg->checkpoint_interval_ms * 1000000LL - mono_ns();
      wait = due < wait ? (due > 0 ? due : 0) : wait;
   }
   clock_gettime(CLOCK_MONOTONIC, &ts);
   ts.tv_sec += wait / 1000000000;
   ts.tv_nsec += wait % 1000000000;
   if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
   }
   pthread_cond_timedwait(&l->cond, &l->lock, &ts);
}

static void *
run(void *arg)
{
   relay_lease_t *l = arg;

   pthread_mutex_lock(&l->lock);
   while (!l->stop) {
      if (l->shutdown_asked) {
         maybe_checkpoint(l, true);
         pthread_mutex_unlock(&l->lock);
         relay_tick_leave(&l->tick);
         pthread_mutex_lock(&l->lock);
         l->shutdown_done = true;
         pthread_cond_broadcast(&l->cond);
         break;
      }
      if (maybe_release_drained(l) || maybe_checkpoint(l, false)) {
         continue;
      }
      if (mono_ns() >= l->next_tick_ns) {
         bool eligible = l->eligible;
         pthread_mutex_unlock(&l->lock);
         relay_tick_run(&l->tick, eligible);
         pthread_mutex_lock(&l->lock);
         if (l->next_tick_ns != 0 || l->eligible == eligible) {
            l->next_tick_ns = mono_ns() + l->tick.cfg->lease_renew_ms * 1000000LL;
         }
         continue;
      }
      wait_until(l, l->next_tick_ns);
   }
   pthread_mutex_unlock(&l->lock);
   return NULL;
}

static char *
host_name(void)
{
   char buf[256];
   if (gethostname(buf, sizeof buf) != 0) {
      return bson_strdup("unknown");
   }
   buf[sizeof buf - 1] = '\0';
   return bson_strdup(buf);
}

relay_lease_t *
relay_lease_new(const relay_config_t *cfg, const char *instance_id, relay_metrics_t *metrics,
                void (*wake)(void *), void *wake_ctx, bson_error_t *error)
{
   relay_lease_t *l = bson_malloc0(sizeof *l);
   size_t n = (size_t)cfg->partitions;
   pthread_condattr_t attr;
   int pid = (int)getpid();

   l->me = bson_strdup(instance_id);
   l->host = host_name();
   l->settings = relay_tick_settings(cfg);
   l->wake = wake;
   l->wake_ctx = wake_ctx;
   l->eligible = true;
   l->ckpt_epochs = bson_malloc0(n * sizeof *l->ckpt_epochs);
   l->scratch_epochs = bson_malloc0(n * sizeof *l->scratch_epochs);
   l->drained = bson_malloc0(n * sizeof *l->drained);
   pthread_mutex_init(&l->lock, NULL);
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&l->cond, &attr);
   pthread_condattr_destroy(&attr);
   l->store = relay_lease_mongo_new(cfg, l->me, l->settings, error);
   relay_tick_init(&l->tick, cfg, metrics, l->me, l->host, l->settings, pid, &relay_lease_mongo_ops,
                   l->store, relay_boot_ns, post_events, l);
   l->tick.rotate = (uint32_t)bson_get_monotonic_time() ^ (uint32_t)pid;
   if (!l->store) {
      relay_lease_destroy(l);
      return NULL;
   }
   if (pthread_create(&l->thread, NULL, run, l) != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_THREAD,
                     "cannot start the lease thread");
      relay_lease_destroy(l);
      return NULL;
   }
   l->started = true;
   return l;
}

void
relay_lease_shutdown(relay_lease_t *l, int timeout_ms)
{
   struct timespec ts;
   if (!l || !l->started) {
      return;
   }
   clock_gettime(CLOCK_MONOTONIC, &ts);
   ts.tv_sec += timeout_ms / 1000;
   ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
   if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
   }
   pthread_mutex_lock(&l->lock);
   l->shutdown_asked = true;
   pthread_cond_broadcast(&l->cond);
   while (!l->shutdown_done) {
      if (pthread_cond_timedwait(&l->cond, &l->lock, &ts) == ETIMEDOUT) {
         relay_log(RELAY_LOG_WARNING, "group",
                   "releasing the leases took longer than %d ms: the others take them when "
                   "they expire",
                   timeout_ms);
         break;
      }
   }
   pthread_mutex_unlock(&l->lock);
}

void
relay_lease_destroy(relay_lease_t *l)
{
   if (!l) {
      return;
   }
   if (l->started) {
      relay_thread_stop(&l->lock, &l->cond, &l->stop, l->thread);
   }
   while (l->head) {
      relay_lease_event_t *ev = l->head;
      l->head = ev->next;
      relay_lease_event_free(ev);
   }
   relay_tick_cleanup(&l->tick);
   bson_destroy(l->ckpt_token);
   relay_lease_mongo_destroy(l->store);
   pthread_cond_destroy(&l->cond);
   pthread_mutex_destroy(&l->lock);
   bson_free(l->ckpt_epochs);
   bson_free(l->scratch_epochs);
   bson_free(l->drained);
   bson_free(l->me);
   bson_free(l->host);
   bson_free(l->settings);
   bson_free(l);
}

void
relay_lease_render_metrics(const relay_lease_t *l, bson_string_t *out)
{
   relay_tick_render_metrics(&l->tick, out);
}
