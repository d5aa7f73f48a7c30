/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "subscriber.h"

#include <MQTTAsync.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "publisher.h"

struct bench_sub {
   MQTTAsync client;
   pthread_mutex_t mu;
   pthread_cond_t cond;
   int ready; /* 0 pending, 1 subscribed, -1 failed */
   char prefix[256];
   size_t prefix_len;
   int64_t base;
   size_t count;
   int64_t *recv_ns;
   uint32_t *rank;
   bench_sub_stats_t st;
};

/* The key is searched for rather than parsed as JSON: the callback runs on paho's receive
 * thread for every message, and a full JSON parse would make the subscriber the bottleneck
 * of the measurement it is supposed to observe. */
static const char *
skip_chars(const char *q, const char *end, const char *set)
{
   while (q < end && strchr(set, *q)) {
      q++;
   }
   return q;
}

/* The key is searched for rather than parsed as JSON: the callback runs on paho's receive
 * thread for every message, and a full JSON parse would make the subscriber the bottleneck
 * of the measurement it is supposed to observe. Accepts relaxed (`"bench_n" : 5`) and
 * canonical extended JSON (`"bench_n" : { "$numberLong" : "5" }`). */
static bool
find_bench_n(const char *p, size_t len, int64_t *n)
{
   static const char key[] = "\"bench_n\"";
   const char *hit = memmem(p, len, key, sizeof key - 1);
   if (!hit) {
      return false;
   }
   const char *end = p + len;
   const char *q = skip_chars(hit + sizeof key - 1, end, " \t:");
   if (q < end && *q == '{') {
      q = skip_chars(q + 1, end, " \t");
      const char *colon = memchr(q, ':', (size_t)(end - q));
      q = colon ? skip_chars(colon + 1, end, " \t\"") : end;
   }
   int64_t v = 0;
   const char *digits = q;
   while (q < end && *q >= '0' && *q <= '9') {
      v = v * 10 + (*q - '0');
      q++;
   }
   *n = v;
   return q > digits;
}

static int
on_message(void *ctx, char *topic, int topic_len, MQTTAsync_message *m)
{
   bench_sub_t *s = ctx;
   int64_t now = bench_now_ns();
   size_t tlen = topic_len > 0 ? (size_t)topic_len : strlen(topic);
   int64_t n = 0;
   bool has_n = find_bench_n(m->payload, (size_t)m->payloadlen, &n);

   pthread_mutex_lock(&s->mu);
   if (s->prefix_len && tlen >= s->prefix_len && !memcmp(topic, s->prefix, s->prefix_len)) {
      s->st.total++;
      s->st.bytes += (uint64_t)m->payloadlen;
      if (!s->st.first_ns) {
         s->st.first_ns = now;
      }
      if (!has_n || n < s->base || (uint64_t)(n - s->base) >= s->count) {
         s->st.stray++;
      } else if (!s->recv_ns[n - s->base]) {
         s->recv_ns[n - s->base] = now;
         s->rank[n - s->base] = (uint32_t)++s->st.distinct;
         s->st.last_ns = now;
         if (s->st.distinct == s->count) {
            pthread_cond_broadcast(&s->cond);
         }
      }
   }
   pthread_mutex_unlock(&s->mu);
   MQTTAsync_freeMessage(&m);
   MQTTAsync_free(topic);
   return 1;
}

static void
set_ready(bench_sub_t *s, int v)
{
   pthread_mutex_lock(&s->mu);
   s->ready = v;
   pthread_cond_broadcast(&s->cond);
   pthread_mutex_unlock(&s->mu);
}

static void
on_subscribed(void *ctx, MQTTAsync_successData5 *r)
{
   bench_sub_t *s = ctx;
   /* A v5 SUBACK can succeed at the packet level and still refuse the subscription. */
   set_ready(s, r && r->reasonCode >= 0x80 ? -1 : 1);
}

static void
on_failed(void *ctx, MQTTAsync_failureData5 *r)
{
   bench_sub_t *s = ctx;
   fprintf(stderr, "outbox-bench: subscriber: %s (%d)\n", r && r->message ? r->message : "failed",
           r ? r->code : 0);
   set_ready(s, -1);
}

static void
on_connected(void *ctx, MQTTAsync_successData5 *r)
{
   bench_sub_t *s = ctx;
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   ro.onSuccess5 = on_subscribed;
   ro.onFailure5 = on_failed;
   ro.context = s;
   ro.subscribeOptions.noLocal = 0;
   int rc = MQTTAsync_subscribe(s->client, "#", 1, &ro);
   if (rc != MQTTASYNC_SUCCESS) {
      fprintf(stderr, "outbox-bench: subscribe: %s\n", MQTTAsync_strerror(rc));
      set_ready(s, -1);
   }
}

static bool
wait_ready(bench_sub_t *s)
{
   struct timespec ts;
   clock_gettime(CLOCK_REALTIME, &ts);
   ts.tv_sec += 10;
   pthread_mutex_lock(&s->mu);
   while (!s->ready) {
      if (pthread_cond_timedwait(&s->cond, &s->mu, &ts)) {
         break;
      }
   }
   int ready = s->ready;
   pthread_mutex_unlock(&s->mu);
   return ready == 1;
}

bench_sub_t *
bench_sub_new(const char *uri)
{
   bench_sub_t *s = calloc(1, sizeof *s);
   pthread_mutex_init(&s->mu, NULL);
   pthread_cond_init(&s->cond, NULL);
   char id[64];
   snprintf(id, sizeof id, "outbox-bench-sub-%ld", (long)getpid());
   MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer5;
   int rc =
      MQTTAsync_createWithOptions(&s->client, uri, id, MQTTCLIENT_PERSISTENCE_NONE, NULL, &co);
   if (rc != MQTTASYNC_SUCCESS) {
      fprintf(stderr, "outbox-bench: subscriber create: %s\n", MQTTAsync_strerror(rc));
      s->client = NULL;
      bench_sub_destroy(s);
      return NULL;
   }
   bench_paho_quiet();
   MQTTAsync_setCallbacks(s->client, s, NULL, on_message, NULL);
   MQTTAsync_connectOptions cn = MQTTAsync_connectOptions_initializer5;
   cn.cleanstart = 1;
   cn.keepAliveInterval = 60;
   cn.onSuccess5 = on_connected;
   cn.onFailure5 = on_failed;
   cn.context = s;
   rc = MQTTAsync_connect(s->client, &cn);
   if (rc != MQTTASYNC_SUCCESS || !wait_ready(s)) {
      fprintf(stderr, "outbox-bench: subscriber could not connect to %s\n", uri);
      bench_sub_destroy(s);
      return NULL;
   }
   return s;
}

void
bench_sub_destroy(bench_sub_t *s)
{
   if (!s) {
      return;
   }
   if (s->client) {
      MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
      d.timeout = 1000;
      if (MQTTAsync_disconnect(s->client, &d) == MQTTASYNC_SUCCESS) {
         for (int i = 0; i < 100 && MQTTAsync_isConnected(s->client); i++) {
            nanosleep(&(struct timespec){0, 10000000}, NULL);
         }
      }
      MQTTAsync_destroy(&s->client);
   }
   free(s->recv_ns);
   free(s->rank);
   pthread_cond_destroy(&s->cond);
   pthread_mutex_destroy(&s->mu);
   free(s);
}

void
bench_sub_reset(bench_sub_t *s, const char *prefix, int64_t base, size_t count)
{
   int64_t *recv = calloc(count ? count : 1, sizeof *recv);
   uint32_t *rank = calloc(count ? count : 1, sizeof *rank);
   if (!recv || !rank) {
      abort(); /* like libbson: out of memory is not a condition a benchmark handles */
   }
   pthread_mutex_lock(&s->mu);
   free(s->recv_ns);
   free(s->rank);
   s->recv_ns = recv;
   s->rank = rank;
   snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
   s->prefix_len = strlen(s->prefix);
   s->base = base;
   s->count = count;
   memset(&s->st, 0, sizeof s->st);
   pthread_mutex_unlock(&s->mu);
}

bool
bench_sub_wait_n(bench_sub_t *s, size_t n, int64_t deadline_ns)
{
   pthread_mutex_lock(&s->mu);
   while (s->st.distinct < n && bench_now_ns() < deadline_ns) {
      /* The condition is only signalled when everything arrived, so poll for partial
       * counts; 5 ms is far below any duration this is used to measure. */
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ts.tv_nsec += 5000000;
      if (ts.tv_nsec >= 1000000000) {
         ts.tv_sec++;
         ts.tv_nsec -= 1000000000;
      }
      pthread_cond_timedwait(&s->cond, &s->mu, &ts);
   }
   bool ok = s->st.distinct >= n;
   pthread_mutex_unlock(&s->mu);
   return ok;
}

bool
bench_sub_wait_all(bench_sub_t *s, int64_t deadline_ns)
{
   pthread_mutex_lock(&s->mu);
   size_t n = s->count;
   pthread_mutex_unlock(&s->mu);
   return bench_sub_wait_n(s, n, deadline_ns);
}

void
bench_sub_stats(bench_sub_t *s, bench_sub_stats_t *out)
{
   pthread_mutex_lock(&s->mu);
   *out = s->st;
   pthread_mutex_unlock(&s->mu);
}

const int64_t *
bench_sub_recv_ns(bench_sub_t *s)
{
   return s->recv_ns;
}

const uint32_t *
bench_sub_rank(bench_sub_t *s)
{
   return s->rank;
}
