/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Clear lanes (clear-lanes.h): the extra lanes' threads take the next group of the batch
 * under the lanes' lock until none is left; the clearer thread works the same queue as
 * lane 0 and waits for the last group to end.
 */
#include "store/clear-lanes.h"

#include <pthread.h>

#include "store/store.h"
#include "util/log.h"

typedef struct {
   relay_clear_lanes_t *ls;
   relay_clear_lane_t lane;
   pthread_t thread;
} extra_t;

struct relay_clear_lanes_t {
   relay_clear_group_fn fn;
   void *ctx;
   pthread_mutex_t lock;
   pthread_cond_t work, done;
   size_t next, n, left; /* the batch under way: groups handed out, in all, not ended */
   bool stop;
   extra_t *extra;
   int n_extra;
};

/* Takes and runs groups until none is left. Called with the lock held; returns with it. */
static void
work(relay_clear_lanes_t *ls, relay_clear_lane_t *lane)
{
   while (ls->next < ls->n) {
      size_t g = ls->next++;
      pthread_mutex_unlock(&ls->lock);
      ls->fn(ls->ctx, lane, g);
      pthread_mutex_lock(&ls->lock);
      if (--ls->left == 0) {
         pthread_cond_broadcast(&ls->done);
      }
   }
}

static void *
run(void *arg)
{
   extra_t *x = arg;
   relay_clear_lanes_t *ls = x->ls;
   pthread_mutex_lock(&ls->lock);
   while (!ls->stop) {
      if (ls->next < ls->n) {
         work(ls, &x->lane);
      } else {
         pthread_cond_wait(&ls->work, &ls->lock);
      }
   }
   pthread_mutex_unlock(&ls->lock);
   return NULL;
}

relay_clear_lanes_t *
relay_clear_lanes_new(const relay_config_t *cfg, int n_extra, relay_clear_group_fn fn, void *ctx)
{
   relay_clear_lanes_t *ls = bson_malloc0(sizeof *ls);
   ls->fn = fn;
   ls->ctx = ctx;
   pthread_mutex_init(&ls->lock, NULL);
   pthread_cond_init(&ls->work, NULL);
   pthread_cond_init(&ls->done, NULL);
   ls->extra = bson_malloc0((size_t)(n_extra > 0 ? n_extra : 1) * sizeof *ls->extra);
   for (int i = 0; i < n_extra; i++) {
      bson_error_t error;
      extra_t *x = &ls->extra[ls->n_extra];
      x->ls = ls;
      x->lane.client = relay_store_client_new(cfg, "outbox-relay-clear", &error);
      if (!x->lane.client) {
         break;
      }
      if (cfg->archive_collection) {
         x->lane.archive = mongoc_client_get_collection(x->lane.client, cfg->state_database,
                                                        cfg->archive_collection);
      }
      if (pthread_create(&x->thread, NULL, run, x) != 0) {
         relay_clear_lane_cleanup(&x->lane);
         break;
      }
      ls->n_extra++;
   }
   return ls;
}

void
relay_clear_lanes_run(relay_clear_lanes_t *ls, relay_clear_lane_t *lane0, size_t n)
{
   pthread_mutex_lock(&ls->lock);
   ls->next = 0;
   ls->n = ls->left = n;
   if (n > 1) {
      pthread_cond_broadcast(&ls->work);
   }
   work(ls, lane0);
   while (ls->left > 0) {
      pthread_cond_wait(&ls->done, &ls->lock);
   }
   ls->n = ls->next = 0;
   pthread_mutex_unlock(&ls->lock);
}

void
relay_clear_lane_cleanup(relay_clear_lane_t *lane)
{
   relay_ns_handles_clear(&lane->colls);
   mongoc_collection_destroy(lane->archive);
   mongoc_client_destroy(lane->client);
   lane->archive = NULL;
   lane->client = NULL;
}

void
relay_clear_lanes_destroy(relay_clear_lanes_t *ls)
{
   if (!ls) {
      return;
   }
   pthread_mutex_lock(&ls->lock);
   ls->stop = true;
   pthread_cond_broadcast(&ls->work);
   pthread_mutex_unlock(&ls->lock);
   for (int i = 0; i < ls->n_extra; i++) {
      pthread_join(ls->extra[i].thread, NULL);
      relay_clear_lane_cleanup(&ls->extra[i].lane);
   }
   bson_free(ls->extra);
   pthread_cond_destroy(&ls->work);
   pthread_cond_destroy(&ls->done);
   pthread_mutex_destroy(&ls->lock);
   bson_free(ls);
}
