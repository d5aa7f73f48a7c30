/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The completion queue of the relay's MQTT client (mqtt-private.h): paho's threads push
 * completions onto it, the relay's main thread drains it with relay_mqtt_wait(), and any
 * thread may wake that wait (relay_mqtt_wake(): the loop's one wake-up). The queue and the
 * woken flag are touched only here, under relay_mqtt_t.lock.
 */
#include "mqtt/mqtt-private.h"

#include <errno.h>
#include <time.h>

void
relay_mqtt_push(relay_mqtt_t *m, relay_mqtt_kind_t kind, uint64_t tag, int code, int reason)
{
   pthread_mutex_lock(&m->lock);
   if (m->qlen == m->qcap) {
      /* Never drop a completion: an ACK lost here would stall its entity for good. */
      size_t ncap = m->qcap * 2;
      relay_mqtt_completion_t *q = bson_malloc(ncap * sizeof *q);
      for (size_t i = 0; i < m->qlen; i++) {
         q[i] = m->queue[(m->qhead + i) % m->qcap];
      }
      bson_free(m->queue);
      m->queue = q;
      m->qcap = ncap;
      m->qhead = 0;
   }
   m->queue[(m->qhead + m->qlen) % m->qcap] =
      (relay_mqtt_completion_t){.kind = kind, .tag = tag, .code = code, .reason = reason};
   m->qlen++;
   pthread_cond_signal(&m->cond);
   pthread_mutex_unlock(&m->lock);
}

size_t
relay_mqtt_wait(relay_mqtt_t *m, relay_mqtt_completion_t *out, size_t max, int wait_ms)
{
   size_t n = 0;

   pthread_mutex_lock(&m->lock);
   if (m->qlen == 0 && !m->woken && wait_ms > 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_sec += wait_ms / 1000;
      ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
      if (ts.tv_nsec >= 1000000000L) {
         ts.tv_sec++;
         ts.tv_nsec -= 1000000000L;
      }
      while (m->qlen == 0 && !m->woken) {
         if (pthread_cond_timedwait(&m->cond, &m->lock, &ts) == ETIMEDOUT) {
            break;
         }
      }
   }
   m->woken = false;
   while (n < max && m->qlen > 0) {
      out[n++] = m->queue[m->qhead];
      m->qhead = (m->qhead + 1) % m->qcap;
      m->qlen--;
   }
   pthread_mutex_unlock(&m->lock);
   return n;
}

void
relay_mqtt_wake(relay_mqtt_t *m)
{
   pthread_mutex_lock(&m->lock);
   m->woken = true;
   pthread_cond_signal(&m->cond);
   pthread_mutex_unlock(&m->lock);
}
