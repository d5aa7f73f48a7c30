/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The lease thread's loop, its queues and the gate. The lease table (owned set, epochs,
 * handoffs asked) belongs to the lease thread alone; the main thread sees it only through
 * the events, the atomic deadlines and the counters. One tick (tick.c) does the group I/O.
 */
#include "group/lease-private.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"
#include "util/log.h"
#include "util/error.h"
#include "util/util.h"

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

/* Appends @ev to the main thread's queue (or to the held events) and wakes it. */
static void
enqueue(relay_lease_t *l, relay_lease_event_t *ev)
{
   if (l->holding) {
      if (l->held_tail) {
         l->held_tail->next = ev;
      } else {
         l->held_head = ev;
      }
      l->held_tail = ev;
      return;
   }
   pthread_mutex_lock(&l->lock);
   if (l->tail) {
      l->tail->next = ev;
   } else {
      l->head = ev;
   }
   l->tail = ev;
   pthread_mutex_unlock(&l->lock);
   l->wake(l->wake_ctx);
}

static relay_lease_event_t *
event_new(relay_lease_event_kind_t kind, int part, int64_t epoch, bson_t *token,
          const char *message)
{
   relay_lease_event_t *ev = bson_malloc0(sizeof *ev);
   ev->kind = kind;
   ev->part = part;
   ev->epoch = epoch;
   ev->token = token;
   ev->message = message ? bson_strdup(message) : NULL;
   return ev;
}

void
_relay_lease_post(relay_lease_t *l, relay_lease_event_kind_t kind, int part, int64_t epoch,
                  bson_t *token, const char *message)
{
   enqueue(l, event_new(kind, part, epoch, token, message));
}

void
_relay_lease_post_fatal(relay_lease_t *l, int code, const char *message)
{
   relay_lease_event_t *ev = event_new(RELAY_LEASE_FATAL, -1, 0, NULL, message);
   ev->code = code;
   enqueue(l, ev);
}

void
_relay_lease_hold(relay_lease_t *l)
{
   l->holding = true;
}

void
_relay_lease_flush(relay_lease_t *l)
{
   l->holding = false;
   if (!l->held_head) {
      return;
   }
   pthread_mutex_lock(&l->lock);
   if (l->tail) {
      l->tail->next = l->held_head;
   } else {
      l->head = l->held_head;
   }
   l->tail = l->held_tail;
   pthread_mutex_unlock(&l->lock);
   l->held_head = l->held_tail = NULL;
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

void
relay_lease_event_free(relay_lease_event_t *ev)
{
   if (ev) {
      bson_destroy(ev->token);
      bson_free(ev->message);
      bson_free(ev);
   }
}

bool
relay_lease_may_publish(const relay_lease_t *l, int part)
{
   int64_t deadline = atomic_load_explicit(&l->deadline[part], memory_order_acquire);
   return deadline != 0 && relay_boot_ns() < deadline;
}

bool
relay_lease_healthy(const relay_lease_t *l)
{
   int64_t ok = atomic_load(&l->last_ok_ns);
   return ok != 0 && relay_boot_ns() - ok < l->cfg->lease_ttl_ms * 1000000LL;
}

bool
relay_lease_refused(const relay_lease_t *l)
{
   return atomic_load(&l->refused);
}

void
relay_lease_checkpoint(relay_lease_t *l, const bson_t *token, const relay_partset_t *valid,
                       const int64_t *epochs)
{
   pthread_mutex_lock(&l->lock);
   bson_destroy(l->ckpt_token);
   l->ckpt_token = bson_copy(token);
   l->ckpt_valid = *valid;
   memcpy(l->ckpt_epochs, epochs, sizeof(int64_t) * (size_t)l->cfg->partitions);
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
       (force || now - l->last_ckpt_ns >= l->cfg->checkpoint_interval_ms * 1000000LL)) {
      token = l->ckpt_token;
      l->ckpt_token = NULL;
      *valid = l->ckpt_valid;
      memcpy(epochs, l->ckpt_epochs, sizeof(int64_t) * (size_t)l->cfg->partitions);
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
   _relay_lease_write_checkpoint(l, token, &valid, l->scratch_epochs);
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
      _relay_lease_hand_over(l, batch[i].part, batch[i].epoch);
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
      int64_t due = l->last_ckpt_ns + l->cfg->checkpoint_interval_ms * 1000000LL - mono_ns();
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
         _relay_lease_leave(l);
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
         _relay_lease_tick(l, eligible);
         pthread_mutex_lock(&l->lock);
         if (l->next_tick_ns != 0 || l->eligible == eligible) {
            l->next_tick_ns = mono_ns() + l->cfg->lease_renew_ms * 1000000LL;
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

static bool
open_store(relay_lease_t *l, bson_error_t *error)
{
   const relay_config_t *cfg = l->cfg;
   l->client = relay_store_client_new_for(cfg, "outbox-relay-lease", RELAY_CONCERNS_LEASES, error);
   if (!l->client) {
      return false;
   }
   l->state_coll = mongoc_client_get_collection(l->client, cfg->database, cfg->state_collection);
   l->lease_coll = mongoc_client_get_collection(l->client, cfg->database,
                                                cfg->lease_collection ? cfg->lease_collection
                                                                      : cfg->state_collection);
   l->db = mongoc_client_get_database(l->client, cfg->database);
   l->settings = _relay_lease_settings(cfg);
   l->st = (relay_lease_store_t){.state = l->state_coll,
                                 .leases = l->lease_coll,
                                 .db = l->db,
                                 .name = cfg->name,
                                 .me = l->me,
                                 .partitions = cfg->partitions,
                                 .ttl_ms = cfg->lease_ttl_ms,
                                 .settings = l->settings};
   return true;
}

relay_lease_t *
relay_lease_new(const relay_config_t *cfg, const char *instance_id, relay_metrics_t *metrics,
                void (*wake)(void *), void *wake_ctx, bson_error_t *error)
{
   relay_lease_t *l = bson_malloc0(sizeof *l);
   size_t n = (size_t)cfg->partitions;
   pthread_condattr_t attr;

   l->cfg = cfg;
   l->metrics = metrics;
   l->me = bson_strdup(instance_id);
   l->host = host_name();
   l->pid = (int)getpid();
   l->wake = wake;
   l->wake_ctx = wake_ctx;
   l->eligible = true;
   l->deadline = bson_malloc0(n * sizeof *l->deadline);
   l->epoch_pub = bson_malloc0(n * sizeof *l->epoch_pub);
   l->epochs = bson_malloc0(n * sizeof *l->epochs);
   l->ckpt_epochs = bson_malloc0(n * sizeof *l->ckpt_epochs);
   l->scratch_epochs = bson_malloc0(n * sizeof *l->scratch_epochs);
   l->handoff_posted = bson_malloc0(n * sizeof *l->handoff_posted);
   l->malformed_seen = bson_malloc0(n * sizeof *l->malformed_seen);
   l->handoff_to = bson_malloc0(n * sizeof *l->handoff_to);
   l->drained = bson_malloc0(n * sizeof *l->drained);
   l->snap = bson_malloc0(sizeof *l->snap);
   for (size_t i = 0; i < n; i++) {
      atomic_init(&l->deadline[i], 0);
      atomic_init(&l->epoch_pub[i], 0);
   }
   for (size_t i = 0; i < RELAY_RENEW_BUCKETS + 1; i++) {
      atomic_init(&l->renew_buckets[i], 0);
   }
   relay_skew_init(&l->skew, cfg->lease_margin_ms);
   l->rotate = (uint32_t)bson_get_monotonic_time() ^ (uint32_t)l->pid;
   pthread_mutex_init(&l->lock, NULL);
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&l->cond, &attr);
   pthread_condattr_destroy(&attr);
   if (!open_store(l, error)) {
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
   if (l->snap) {
      relay_group_snapshot_cleanup(l->snap);
   }
   for (int p = 0; p < l->cfg->partitions; p++) {
      bson_free(l->handoff_to[p]);
   }
   bson_destroy(l->ckpt_token);
   mongoc_collection_destroy(l->state_coll);
   mongoc_database_destroy(l->db);
   mongoc_collection_destroy(l->lease_coll);
   mongoc_client_destroy(l->client);
   pthread_cond_destroy(&l->cond);
   pthread_mutex_destroy(&l->lock);
   bson_free(l->deadline);
   bson_free(l->epoch_pub);
   bson_free(l->epochs);
   bson_free(l->ckpt_epochs);
   bson_free(l->scratch_epochs);
   bson_free(l->handoff_posted);
   bson_free(l->malformed_seen);
   bson_free(l->handoff_to);
   bson_free(l->drained);
   bson_free(l->snap);
   bson_free(l->me);
   bson_free(l->host);
   bson_free(l->settings);
   relay_skew_cleanup(&l->skew);
   bson_free(l);
}

void
relay_lease_render_metrics(const relay_lease_t *l, bson_string_t *out)
{
   static const char *const les[RELAY_RENEW_BUCKETS] = {
      "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5"};
   uint64_t cumulative = 0;

   bson_string_append(out, "# HELP outbox_relay_lease_epoch Epoch (the fencing token) of each "
                           "partition lease this member holds.\n"
                           "# TYPE outbox_relay_lease_epoch gauge\n");
   for (int p = 0; p < l->cfg->partitions; p++) {
      int64_t e = atomic_load_explicit((_Atomic int64_t *)&l->epoch_pub[p], memory_order_relaxed);
      if (e != 0) {
         bson_string_append_printf(out, "outbox_relay_lease_epoch{partition=\"%d\"} %" PRId64 "\n",
                                   p, e);
      }
   }
   bson_string_append(out, "# HELP outbox_relay_lease_renew_seconds Time one renewal of this "
                           "member's leases took (one round-trip for all of them).\n"
                           "# TYPE outbox_relay_lease_renew_seconds histogram\n");
   for (int b = 0; b <= RELAY_RENEW_BUCKETS; b++) {
      cumulative += atomic_load((_Atomic uint64_t *)&l->renew_buckets[b]);
      bson_string_append_printf(out,
                                "outbox_relay_lease_renew_seconds_bucket{le=\"%s\"} %" PRIu64 "\n",
                                b < RELAY_RENEW_BUCKETS ? les[b] : "+Inf", cumulative);
   }
   bson_string_append_printf(
      out,
      "outbox_relay_lease_renew_seconds_sum %.6f\noutbox_relay_lease_renew_seconds_count %" PRIu64
      "\n",
      (double)atomic_load((_Atomic uint64_t *)&l->renew_sum_us) / 1e6,
      atomic_load((_Atomic uint64_t *)&l->renew_count));
   relay_skew_render(&l->skew, out);
}
