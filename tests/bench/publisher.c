/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The ceiling's publisher (see publisher.h). Its state is shared between the sending thread
 * and paho's callback threads under `mu`.
 */
#include "publisher.h"

#include <MQTTAsync.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

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

struct bench_pub {
   MQTTAsync client;
   pthread_mutex_t mu;
   pthread_cond_t cond;
   int connected; /* 0 pending, 1 up, -1 failed */
   int receive_max;
   int inflight;
   bench_pub_stats_t st;
   char *buf;
   size_t bufsize;
};

static void
on_ack(void *ctx, MQTTAsync_successData5 *r)
{
   bench_pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->inflight--;
   p->st.acked++;
   p->st.last_ack_ns = bench_now_ns();
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_nack(void *ctx, MQTTAsync_failureData5 *r)
{
   bench_pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->inflight--;
   p->st.failed++;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_conn(void *ctx, MQTTAsync_successData5 *r)
{
   bench_pub_t *p = ctx;
   int rm =
      r ? MQTTProperties_getNumericValue(&r->properties, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM) : -1;
   pthread_mutex_lock(&p->mu);
   p->receive_max = rm > 0 ? rm : 0;
   p->connected = 1;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static void
on_conn_failed(void *ctx, MQTTAsync_failureData5 *r)
{
   bench_pub_t *p = ctx;
   pthread_mutex_lock(&p->mu);
   p->connected = -1;
   pthread_cond_broadcast(&p->cond);
   pthread_mutex_unlock(&p->mu);
}

static bool
wait_connected(bench_pub_t *p)
{
   int64_t deadline = bench_now_ns() + 10 * (int64_t)1000000000;
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

void
bench_paho_quiet(void)
{
   MQTTAsync_setTraceLevel(MQTTASYNC_TRACE_ERROR);
}

bench_pub_t *
bench_pub_new(const char *uri, int window)
{
   static int counter;
   char id[64];
   bench_pub_t *p = calloc(1, sizeof *p);
   pthread_mutex_init(&p->mu, NULL);
   pthread_cond_init(&p->cond, NULL);
   snprintf(id, sizeof id, "outbox-bench-pub-%ld-%d", (long)getpid(), ++counter);
   MQTTAsync_createOptions co = MQTTAsync_createOptions_initializer5;
   /* Our own window bounds what is queued; the margin only keeps -12 from ever showing. */
   co.maxBufferedMessages = window + 16;
   if (MQTTAsync_createWithOptions(&p->client, uri, id, MQTTCLIENT_PERSISTENCE_NONE, NULL, &co) !=
       MQTTASYNC_SUCCESS) {
      p->client = NULL;
      bench_pub_destroy(p);
      return NULL;
   }
   bench_paho_quiet();
   MQTTAsync_connectOptions cn = MQTTAsync_connectOptions_initializer5;
   cn.cleanstart = 1;
   cn.onSuccess5 = on_conn;
   cn.onFailure5 = on_conn_failed;
   cn.context = p;
   if (MQTTAsync_connect(p->client, &cn) != MQTTASYNC_SUCCESS || !wait_connected(p)) {
      fprintf(stderr, "outbox-bench: publisher cannot connect to %s\n", uri);
      bench_pub_destroy(p);
      return NULL;
   }
   return p;
}

int
bench_pub_receive_max(const bench_pub_t *p)
{
   return p->receive_max;
}

/* Fills one property in place. paho copies the array in MQTTAsync_sendMessage (reading
 * count and array only), so, as in the relay, no MQTTProperties_add()/_free() per message:
 * the ceiling is what paho itself costs, not what a careless caller adds. */
static void
set_prop(MQTTProperties *props, enum MQTTPropertyCodes code, const char *key, const char *value)
{
   MQTTProperty *pr = &props->array[props->count++];
   memset(pr, 0, sizeof *pr);
   pr->identifier = code;
   if (code == MQTTPROPERTY_CODE_USER_PROPERTY) {
      pr->value.data.data = (char *)key;
      pr->value.data.len = (int)strlen(key);
      pr->value.value.data = (char *)value;
      pr->value.value.len = (int)strlen(value);
      props->length += 1 + 2 + pr->value.data.len + 2 + pr->value.value.len;
   } else {
      pr->value.data.data = (char *)value;
      pr->value.data.len = (int)strlen(value);
      props->length += 1 + 2 + pr->value.data.len;
   }
}

/* A small string builder: snprintf() was a tenth of the publisher's instructions. */
typedef struct {
   char *p;
   size_t len;
} out_t;

static void
put(out_t *o, const char *s, size_t n)
{
   memcpy(o->p + o->len, s, n);
   o->len += n;
}

#define PUT(o, lit) put((o), (lit), sizeof(lit) - 1)

/* @v in base @base, at least @width digits. */
static void
put_num(out_t *o, size_t v, unsigned base, int width)
{
   char tmp[24];
   int n = 0;
   do {
      tmp[n++] = "0123456789abcdef"[v % base];
      v /= base;
   } while (v || n < width);
   while (n) {
      o->p[o->len++] = tmp[--n];
   }
}

static void
put_str(out_t *o, const char *s)
{
   put(o, s, strlen(s));
}

/* The names of message n: event id, entity and seq, NUL-terminated. */
typedef struct {
   char id[64], entity[32], seq[24];
} names_t;

static void
terminate(out_t *o)
{
   o->p[o->len] = '\0';
}

static void
names_of(size_t n, names_t *nm)
{
   out_t o = {nm->id, 0};
   put_num(&o, n, 16, 8);
   PUT(&o, "-0000-4000-8000-");
   put_num(&o, n, 16, 12);
   terminate(&o);
   o = (out_t){nm->entity, 0};
   PUT(&o, "ent-");
   put_num(&o, n % 1000, 10, 6);
   terminate(&o);
   o = (out_t){nm->seq, 0};
   put_num(&o, n / 1000 + 1, 10, 1);
   terminate(&o);
}

/* Message n laid out as the relay writes it (structured mode, libbson's spacing), so the
 * size on the wire is the relay's for the same payload. */
static int
format_payload(bench_pub_t *p, const names_t *nm, size_t n, size_t payload)
{
   size_t pad = bench_pad_len(payload);
   out_t o = {p->buf, 0};
   PUT(&o, "{ \"specversion\" : \"1.0\", \"id\" : \"");
   put_str(&o, nm->id);
   PUT(&o, "\", \"source\" : \"/" BENCH_DB_DEFAULT "/ceiling-run\", \"type\" : \"bench.event\", "
           "\"subject\" : \"");
   put_str(&o, nm->entity);
   PUT(&o, "\", \"time\" : \"2026-01-01T00:00:00.000Z\", \"datacontenttype\" : "
           "\"application/json\", \"seq\" : ");
   put_str(&o, nm->seq);
   PUT(&o, ", \"data\" : { \"bench_n\" : ");
   put_num(&o, n, 10, 1);
   PUT(&o, ", \"pad\" : \"");
   put(&o, bench_pad(pad), pad);
   PUT(&o, "\" } }");
   return (int)o.len;
}

/* The relay's MQTT 5 properties: the content type always, the four user properties unless
 * bare. */
static void
set_props(MQTTProperties *props, const names_t *nm, bool bare)
{
   set_prop(props, MQTTPROPERTY_CODE_CONTENT_TYPE, NULL, "application/cloudevents+json");
   if (!bare) {
      set_prop(props, MQTTPROPERTY_CODE_USER_PROPERTY, "event-id", nm->id);
      set_prop(props, MQTTPROPERTY_CODE_USER_PROPERTY, "event-type", "bench.event");
      set_prop(props, MQTTPROPERTY_CODE_USER_PROPERTY, "entity-id", nm->entity);
      set_prop(props, MQTTPROPERTY_CODE_USER_PROPERTY, "seq", nm->seq);
   }
}

bool
bench_pub_send(bench_pub_t *p, const char *prefix, size_t n, size_t payload, int window, bool bare)
{
   char topic[128];
   size_t need = bench_pad_len(payload) + 1024;
   if (p->bufsize < need) {
      free(p->buf);
      p->buf = malloc(need);
      p->bufsize = need;
   }
   names_t nm;
   names_of(n, &nm);
   size_t plen = strnlen(prefix, sizeof topic - sizeof nm.entity);
   out_t t = {topic, 0};
   put(&t, prefix, plen);
   put_str(&t, nm.entity);
   terminate(&t);
   MQTTProperty array[5];
   MQTTProperties props = MQTTProperties_initializer;
   props.array = array;
   props.max_count = 5;
   set_props(&props, &nm, bare);
   MQTTAsync_message m = MQTTAsync_message_initializer;
   m.payloadlen = format_payload(p, &nm, n, payload);
   m.payload = p->buf;
   m.qos = 1;
   m.properties = props;
   /* Response options must be passed: without them paho drops v5 properties silently. */
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   ro.onSuccess5 = on_ack;
   ro.onFailure5 = on_nack;
   ro.context = p;

   pthread_mutex_lock(&p->mu);
   while (p->inflight >= window) {
      pthread_cond_wait(&p->cond, &p->mu);
   }
   p->inflight++;
   pthread_mutex_unlock(&p->mu);
   int rc;
   while ((rc = MQTTAsync_sendMessage(p->client, topic, &m, &ro)) == MQTTASYNC_MAX_BUFFERED) {
      usleep(100);
   }
   if (rc != MQTTASYNC_SUCCESS) {
      fprintf(stderr, "outbox-bench: publish: %s\n", MQTTAsync_strerror(rc));
      pthread_mutex_lock(&p->mu);
      p->inflight--;
      pthread_mutex_unlock(&p->mu);
      return false;
   }
   return true;
}

bool
bench_pub_wait_idle(bench_pub_t *p, int64_t deadline_ns)
{
   pthread_mutex_lock(&p->mu);
   while (p->inflight > 0 && bench_now_ns() < deadline_ns) {
      pthread_mutex_unlock(&p->mu);
      usleep(1000);
      pthread_mutex_lock(&p->mu);
   }
   bool idle = p->inflight == 0;
   pthread_mutex_unlock(&p->mu);
   return idle;
}

void
bench_pub_stats(bench_pub_t *p, bench_pub_stats_t *out)
{
   pthread_mutex_lock(&p->mu);
   *out = p->st;
   pthread_mutex_unlock(&p->mu);
}

void
bench_pub_destroy(bench_pub_t *p)
{
   if (!p) {
      return;
   }
   if (p->client) {
      MQTTAsync_disconnectOptions d = MQTTAsync_disconnectOptions_initializer5;
      d.timeout = 1000;
      MQTTAsync_disconnect(p->client, &d);
      for (int i = 0; i < 100 && MQTTAsync_isConnected(p->client); i++) {
         usleep(10000);
      }
      MQTTAsync_destroy(&p->client);
   }
   free(p->buf);
   pthread_cond_destroy(&p->cond);
   pthread_mutex_destroy(&p->mu);
   free(p);
}

const char *
bench_malloc_name(void)
{
   /* jemalloc's own entry point: present whenever its malloc is the one that runs. */
   return dlsym(RTLD_DEFAULT, "mallctl") ? "jemalloc" : "glibc";
}
