/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The baseline: how fast paho MQTTAsync itself publishes QoS 1 messages to the same broker,
 * with the same window and messages of the same shape and size as the relay's (a CloudEvents
 * JSON envelope plus the four MQTT 5 user properties), and no MongoDB. It is the ceiling for
 * any relay built on one paho connection.
 */
#include <MQTTAsync.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "subscriber.h"

#define PAD_MAX (256 * 1024)

static char pad_buf[PAD_MAX + 1];
static pthread_once_t pad_once = PTHREAD_ONCE_INIT;

static void
pad_init(void)
{
   memset(pad_buf, 'x', PAD_MAX);
}

const char *
bench_pad(size_t len)
{
   pthread_once(&pad_once, pad_init);
   return len >= PAD_MAX ? pad_buf : pad_buf + (PAD_MAX - len);
}

typedef struct {
   MQTTAsync client;
   pthread_mutex_t mu;
   pthread_cond_t cond;
   int connected; /* 0 pending, 1 up, -1 failed */
   int receive_max; /* the broker's Receive Maximum from CONNACK, 0 if it sent none */
   int inflight;
   size_t acked, failed;
   int64_t last_ack_ns;
} pub_t;

static void
on_ack(void *ctx, MQTTAsync_successData5 *r)
{
   pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->inflight--;
   p->acked++;
   p->last_ack_ns = bench_now_ns();
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_nack(void *ctx, MQTTAsync_failureData5 *r)
{
   pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->inflight--;
   p->failed++;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_conn(void *ctx, MQTTAsync_successData5 *r)
{
   pub_t *p = ctx;
   int rm = r ? MQTTProperties_getNumericValue(&r->properties, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM)
              : -1;
   pthread_mutex_lock(&p->mu);
   p->receive_max = rm > 0 ? rm : 0;
   p->connected = 1;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_conn_failed(void *ctx, MQTTAsync_failureData5 *r)
{
   pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->connected = -1;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static bool
pub_connect(pub_t *p, const char *uri, int window)
{
   char id[64];
   snprintf(id, sizeof id, "outbox-bench-pub-%ld", (long) getpid());
   MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer5;
   /* Our own window bounds what is queued; the margin only keeps -12 from ever showing. */
   co.maxBufferedMessages = window + 16;
   if (MQTTAsync_createWithOptions(&p->client, uri, id, MQTTCLIENT_PERSISTENCE_NONE, NULL,
                                   &co) != MQTTASYNC_SUCCESS) {
      p->client = NULL;
      return false;
   }
   MQTTAsync_connectOptions cn = MQTTAsync_connectOptions_initializer5;
   cn.cleanstart = 1;
   cn.onSuccess5 = on_conn;
   cn.onFailure5 = on_conn_failed;
   cn.context = p;
   if (MQTTAsync_connect(p->client, &cn) != MQTTASYNC_SUCCESS) {
      return false;
   }
   int64_t deadline = bench_now_ns() + 10 * (int64_t) 1000000000;
   pthread_mutex_lock(&p->mu);
   while (!p->connected && bench_now_ns() < deadline) {
      pthread_mutex_unlock(&p->mu);
      usleep(2000);
      pthread_mutex_lock(&p->mu);
   }
   bool ok = p->connected == 1;
   pthread_mutex_unlock(&p->mu);
   return ok;
}

static void
pub_close(pub_t *p)
{
   if (p->client) {
      MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
      d.timeout = 1000;
      MQTTAsync_disconnect(p->client, &d);
      for (int i = 0; i < 100 && MQTTAsync_isConnected(p->client); i++) {
         usleep(10000);
      }
      MQTTAsync_destroy(&p->client);
   }
}

static void
add_prop(MQTTProperties *props, const char *key, const char *value)
{
   MQTTProperty pr = {.identifier = MQTTPROPERTY_CODE_USER_PROPERTY};
   pr.value.data.data = (char *) key;
   pr.value.data.len = (int) strlen(key);
   pr.value.value.data = (char *) value;
   pr.value.value.len = (int) strlen(value);
   MQTTProperties_add(props, &pr);
}

/* One message shaped like the relay's default output for event n. */
static int
format_message(char *buf, size_t size, size_t n, size_t payload, char *topic, size_t tsize,
               MQTTProperties *props)
{
   char id[64], entity[32], seq[24];
   snprintf(id, sizeof id, "%08zx-0000-4000-8000-%012zx", n, n);
   snprintf(entity, sizeof entity, "ent-%06zu", n % 1000);
   snprintf(seq, sizeof seq, "%zu", n / 1000 + 1);
   snprintf(topic, tsize, "bench/base/%s", entity);
   if (props) {
      add_prop(props, "event-id", id);
      add_prop(props, "event-type", "bench.event");
      add_prop(props, "entity-id", entity);
      add_prop(props, "seq", seq);
   }
   size_t pad = bench_pad_len(payload);
   return snprintf(buf, size,
                   "{\"specversion\":\"1.0\",\"id\":\"%s\",\"source\":\"/%s/base\","
                   "\"type\":\"bench.event\",\"subject\":\"%s\",\"time\":"
                   "\"2026-01-01T00:00:00.000Z\",\"datacontenttype\":\"application/json\","
                   "\"seq\":%s,\"data\":{ \"bench_n\" : %zu, \"pad\" : \"%.*s\" }}",
                   id, BENCH_DB_DEFAULT, entity, seq, n, (int) pad, bench_pad(pad));
}

static bool
publish_one(pub_t *p, size_t n, const bench_baseline_t *cfg, char *buf, size_t bufsize)
{
   char topic[64];
   MQTTProperties props = MQTTProperties_initializer;
   MQTTAsync_message m = MQTTAsync_message_initializer;
   m.payloadlen = format_message(buf, bufsize, n, cfg->payload, topic, sizeof topic,
                                 cfg->bare ? NULL : &props);
   m.payload = buf;
   m.qos = 1;
   m.properties = props;
   /* Response options must be passed: without them paho drops v5 properties silently. */
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   ro.onSuccess5 = on_ack;
   ro.onFailure5 = on_nack;
   ro.context = p;

   pthread_mutex_lock(&p->mu);
   while (p->inflight >= cfg->window) {
      pthread_cond_wait(&p->cond, &p->mu);
   }
   p->inflight++;
   pthread_mutex_unlock(&p->mu);
   int rc;
   while ((rc = MQTTAsync_sendMessage(p->client, topic, &m, &ro)) == MQTTASYNC_MAX_BUFFERED) {
      usleep(100);
   }
   MQTTProperties_free(&props);
   if (rc != MQTTASYNC_SUCCESS) {
      fprintf(stderr, "outbox-bench: baseline publish: %s\n", MQTTAsync_strerror(rc));
      return false;
   }
   return true;
}

bool
bench_baseline_run(const bench_opts_t *o, const bench_servers_t *s, struct bench_sub *sub,
                   size_t messages, size_t payload, int window, bool bare,
                   bench_baseline_t *out)
{
   memset(out, 0, sizeof *out);
   out->messages = messages;
   out->window = window;
   out->payload = payload;
   out->bare = bare;
   pub_t p = {.connected = 0};
   pthread_mutex_init(&p.mu, NULL);
   pthread_cond_init(&p.cond, NULL);
   size_t bufsize = bench_pad_len(payload) + 1024;
   char *buf = malloc(bufsize);
   bool ok = pub_connect(&p, s->mqtt_uri, window);
   if (!ok) {
      fprintf(stderr, "outbox-bench: baseline publisher cannot connect to %s\n", s->mqtt_uri);
   }
   /* paho 1.3.11 stalls its send thread for up to a second whenever more messages are in
    * flight than the broker's Receive Maximum (mosquitto: max_inflight_messages, default
    * 20), so the ceiling of a paho client is reached with the window capped to it. */
   if (ok && p.receive_max > 0 && p.receive_max < window) {
      out->window = window = p.receive_max;
   }
   out->broker_receive_max = p.receive_max;
   bench_sub_reset(sub, "bench/base/", 0, messages);
   int64_t t0 = bench_now_ns();
   for (size_t i = 0; ok && i < messages; i++) {
      ok = publish_one(&p, i, out, buf, bufsize);
   }
   int64_t deadline = bench_now_ns() + (int64_t) (o->timeout_s * 1e9);
   ok = ok && bench_sub_wait_all(sub, deadline);
   pthread_mutex_lock(&p.mu);
   while (p.inflight > 0 && bench_now_ns() < deadline) {
      pthread_mutex_unlock(&p.mu);
      usleep(1000);
      pthread_mutex_lock(&p.mu);
   }
   ok = ok && p.failed == 0 && p.acked == messages;
   int64_t last_ack = p.last_ack_ns;
   pthread_mutex_unlock(&p.mu);

   bench_sub_stats_t st;
   bench_sub_stats(sub, &st);
   out->ok = ok;
   if (st.distinct) {
      out->msgs_per_s = (double) st.distinct / bench_secs(t0, st.last_ns);
      out->avg_msg_bytes = (double) st.bytes / (double) st.total;
   }
   if (last_ack > t0) {
      out->acked_per_s = (double) p.acked / bench_secs(t0, last_ack);
   }
   pub_close(&p);
   free(buf);
   pthread_cond_destroy(&p.cond);
   pthread_mutex_destroy(&p.mu);
   return ok;
}
