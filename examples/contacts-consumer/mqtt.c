/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The consumer's MQTT subscription: paho MQTTAsync, MQTT 5, one message handed over at a time.
 */
#include "mqtt.h"

#include <MQTTAsync.h>
#include <bson/bson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SESSION_EXPIRY_SECONDS 3600
#define RETRY_PAUSE_US (500 * 1000)
#define CONNECT_RETRY_SECONDS 2

/* The hand-over slot between paho's thread and the main thread. */
typedef enum { SLOT_EMPTY, SLOT_FULL, SLOT_BUSY, SLOT_DONE } slot_state_t;

struct _mqtt_sub_t {
   MQTTAsync client;
   char *uri;
   char **topics; /* n_topics filters, all subscribed at once */
   int *qos_list;
   int n_topics;
   char *topic; /* the filters joined with ", ", for messages */
   int qos;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   slot_state_t state;
   mqtt_msg_t *slot;
   bool processed;
   bool stopping;
   int active; /* paho threads inside on_message(): stop waits for them */
   bool connect_failed;
   time_t failed_at;
   bool subscribed; /* the broker granted the subscription (guarded by lock) */
};

static void
msg_free(mqtt_msg_t *m)
{
   free(m->topic);
   free(m->payload);
   free(m->event_id);
   free(m->event_type);
   free(m->entity_id);
   free(m->seq);
   free(m->traceparent);
}

static char *
dup_len(const void *data, size_t len)
{
   char *s = malloc(len + 1);

   if (!s)
      abort();
   memcpy(s, data, len);
   s[len] = '\0';
   return s;
}

static void
copy_properties(const MQTTProperties *props, mqtt_msg_t *m)
{
   for (int i = 0; i < props->count; i++) {
      const MQTTProperty *p = &props->array[i];
      char **dst;

      if (p->identifier == MQTTPROPERTY_CODE_PAYLOAD_FORMAT_INDICATOR && p->value.byte == 0)
         m->bytes = true;
      if (p->identifier == MQTTPROPERTY_CODE_CONTENT_TYPE &&
          !(p->value.data.len >= 16 && !memcmp(p->value.data.data, "application/", 12) &&
            memmem(p->value.data.data, (size_t)p->value.data.len, "json", 4)))
         m->bytes = true;
      if (p->identifier != MQTTPROPERTY_CODE_USER_PROPERTY)
         continue;
#define NAME_IS(s) (p->value.data.len == strlen(s) && !memcmp(p->value.data.data, s, strlen(s)))
      dst = NAME_IS("event-id")      ? &m->event_id
            : NAME_IS("event-type")  ? &m->event_type
            : NAME_IS("entity-id")   ? &m->entity_id
            : NAME_IS("seq")         ? &m->seq
            : NAME_IS("traceparent") ? &m->traceparent
                                     : NULL;
#undef NAME_IS
      if (dst && !*dst)
         *dst = dup_len(p->value.value.data, (size_t)p->value.value.len);
   }
}

/* paho's thread: hand the message over, wait until it is processed, then acknowledge it by
 * returning 1. Returning 0 keeps it with paho, which offers it again. */
static int
on_message(void *ctx, char *topic, int topic_len, MQTTAsync_message *message)
{
   mqtt_sub_t *sub = ctx;
   mqtt_msg_t m = {0};
   bool processed = false;

   m.topic = topic_len > 0 ? dup_len(topic, (size_t)topic_len) : dup_len(topic, strlen(topic));
   m.payload = dup_len(message->payload, (size_t)message->payloadlen);
   m.len = (size_t)message->payloadlen;
   copy_properties(&message->properties, &m);
   pthread_mutex_lock(&sub->lock);
   sub->active++;
   while (sub->state != SLOT_EMPTY && !sub->stopping)
      pthread_cond_wait(&sub->cond, &sub->lock);
   if (!sub->stopping) {
      sub->slot = &m;
      sub->state = SLOT_FULL;
      pthread_cond_broadcast(&sub->cond);
      while (sub->state != SLOT_DONE && !sub->stopping)
         pthread_cond_wait(&sub->cond, &sub->lock);
      processed = sub->state == SLOT_DONE && sub->processed;
      sub->slot = NULL;
      sub->state = SLOT_EMPTY;
   }
   sub->active--;
   pthread_cond_broadcast(&sub->cond);
   pthread_mutex_unlock(&sub->lock);
   msg_free(&m);
   if (!processed) {
      usleep(RETRY_PAUSE_US); /* MongoDB trouble or shutdown: do not spin */
      return 0;
   }
   MQTTAsync_freeMessage(&message);
   MQTTAsync_free(topic);
   return 1;
}

static void
on_subscribed(void *ctx, MQTTAsync_successData5 *resp)
{
   mqtt_sub_t *sub = ctx;
   bool refused = resp->reasonCode >= 0x80;

   /* Several filters: one reason code each. */
   for (int i = 0; sub->n_topics > 1 && i < resp->alt.sub.reasonCodeCount; i++)
      refused = refused || resp->alt.sub.reasonCodes[i] >= 0x80;
   if (refused)
      fprintf(stdout, "consumer: the broker refused the subscription to %s (reason %d)\n",
              sub->topic, (int)resp->reasonCode);
   else
      fprintf(stdout, "consumer: subscribed to %s (qos %d)\n", sub->topic, (int)resp->reasonCode);
   fflush(stdout);
   pthread_mutex_lock(&sub->lock);
   sub->subscribed = resp->reasonCode < 0x80;
   pthread_cond_broadcast(&sub->cond);
   pthread_mutex_unlock(&sub->lock);
}

static void
on_subscribe_failed(void *ctx, MQTTAsync_failureData5 *resp)
{
   mqtt_sub_t *sub = ctx;

   fprintf(stderr, "consumer: cannot subscribe to %s: %s (%d)\n", sub->topic,
           resp->message ? resp->message : "no reason given", resp->code);
}

/* Runs on every successful (re)connection: subscribing again is harmless with a kept session
 * and necessary without one. */
static void
on_connected(void *ctx, char *cause)
{
   mqtt_sub_t *sub = ctx;
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   int rc;

   fprintf(stderr, "consumer: connected to %s\n", sub->uri);
   ro.onSuccess5 = on_subscribed;
   ro.onFailure5 = on_subscribe_failed;
   ro.context = sub;
   rc = MQTTAsync_subscribeMany(sub->client, sub->n_topics, sub->topics, sub->qos_list, &ro);
   if (rc != MQTTASYNC_SUCCESS)
      fprintf(stderr, "consumer: cannot subscribe to %s: %s\n", sub->topic, MQTTAsync_strerror(rc));
}

static void
on_connection_lost(void *ctx, char *cause)
{
   fprintf(stderr, "consumer: connection to the broker lost (%s); reconnecting\n",
           cause ? cause : "no reason given");
}

static void
on_connect_failed(void *ctx, MQTTAsync_failureData5 *resp)
{
   mqtt_sub_t *sub = ctx;

   fprintf(stderr, "consumer: cannot connect to %s: %s; retrying\n", sub->uri,
           resp && resp->message ? resp->message : "connection refused");
   pthread_mutex_lock(&sub->lock);
   sub->connect_failed = true;
   sub->failed_at = time(NULL);
   pthread_cond_broadcast(&sub->cond);
   pthread_mutex_unlock(&sub->lock);
}

static int
connect_now(mqtt_sub_t *sub)
{
   MQTTAsync_connectOptions co = MQTTAsync_connectOptions_initializer5;
   MQTTProperties props = MQTTProperties_initializer;
   MQTTProperty expiry = {.identifier = MQTTPROPERTY_CODE_SESSION_EXPIRY_INTERVAL};
   int rc;

   expiry.value.integer4 = SESSION_EXPIRY_SECONDS;
   MQTTProperties_add(&props, &expiry);
   co.cleanstart = 0;
   co.automaticReconnect = 1;
   co.minRetryInterval = 1;
   co.maxRetryInterval = 8;
   co.connectProperties = &props;
   co.onFailure5 = on_connect_failed;
   co.context = sub;
   rc = MQTTAsync_connect(sub->client, &co);
   MQTTProperties_free(&props);
   return rc;
}

/* Keeps copies of the filters, a QoS for each and their list for messages. */
static void
set_topics(mqtt_sub_t *sub, char *const *topics, size_t n, int qos)
{
   bson_string_t *joined = bson_string_new(NULL);

   sub->topics = calloc(n, sizeof *sub->topics);
   sub->qos_list = calloc(n, sizeof *sub->qos_list);
   if (!sub->topics || !sub->qos_list)
      abort();
   for (size_t i = 0; i < n; i++) {
      sub->topics[i] = strdup(topics[i]);
      sub->qos_list[i] = qos;
      bson_string_append_printf(joined, "%s%s", i ? ", " : "", topics[i]);
   }
   sub->n_topics = (int)n;
   sub->topic = strdup(joined->str);
   bson_string_free(joined, true);
   sub->qos = qos;
}

mqtt_sub_t *
mqtt_sub_start(const char *uri, const char *client_id, char *const *topics, size_t n, int qos,
               char *err, size_t errlen)
{
   MQTTAsync_createOptions opts = MQTTAsync_createOptions_initializer5;
   mqtt_sub_t *sub = calloc(1, sizeof *sub);
   int rc;

   if (!sub)
      abort();
   sub->uri = strdup(uri);
   set_topics(sub, topics, n, qos);
   pthread_mutex_init(&sub->lock, NULL);
   pthread_cond_init(&sub->cond, NULL);
   rc = MQTTAsync_createWithOptions(&sub->client, uri, client_id, MQTTCLIENT_PERSISTENCE_NONE, NULL,
                                    &opts);
   if (rc != MQTTASYNC_SUCCESS) {
      snprintf(err, errlen, "cannot use MQTT URI '%s': %s", uri, MQTTAsync_strerror(rc));
      sub->client = NULL;
      mqtt_sub_stop(sub);
      return NULL;
   }
   MQTTAsync_setCallbacks(sub->client, sub, on_connection_lost, on_message, NULL);
   MQTTAsync_setConnected(sub->client, sub, on_connected);
   if ((rc = connect_now(sub)) != MQTTASYNC_SUCCESS) {
      snprintf(err, errlen, "cannot connect to '%s': %s", uri, MQTTAsync_strerror(rc));
      mqtt_sub_stop(sub);
      return NULL;
   }
   return sub;
}

static void
deadline_in(struct timespec *ts, int ms)
{
   clock_gettime(CLOCK_REALTIME, ts);
   ts->tv_sec += ms / 1000;
   ts->tv_nsec += (long)(ms % 1000) * 1000000L;
   if (ts->tv_nsec >= 1000000000L) {
      ts->tv_sec++;
      ts->tv_nsec -= 1000000000L;
   }
}

bool
mqtt_sub_wait_subscribed(mqtt_sub_t *sub, int timeout_ms)
{
   struct timespec deadline;
   bool subscribed;

   deadline_in(&deadline, timeout_ms);
   pthread_mutex_lock(&sub->lock);
   while (!sub->subscribed && pthread_cond_timedwait(&sub->cond, &sub->lock, &deadline) == 0)
      ;
   subscribed = sub->subscribed;
   pthread_mutex_unlock(&sub->lock);
   return subscribed;
}

bool
mqtt_sub_next(mqtt_sub_t *sub, int timeout_ms, mqtt_msg_t **msg)
{
   struct timespec deadline;
   bool got = false, retry = false;

   deadline_in(&deadline, timeout_ms);
   pthread_mutex_lock(&sub->lock);
   while (sub->state != SLOT_FULL && pthread_cond_timedwait(&sub->cond, &sub->lock, &deadline) == 0)
      ;
   if (sub->state == SLOT_FULL) {
      sub->state = SLOT_BUSY;
      *msg = sub->slot;
      got = true;
   }
   /* paho reconnects by itself only after a first success; before that, we retry. */
   if (sub->connect_failed && time(NULL) - sub->failed_at >= CONNECT_RETRY_SECONDS) {
      sub->connect_failed = false;
      retry = true;
   }
   pthread_mutex_unlock(&sub->lock);
   if (retry)
      connect_now(sub);
   return got;
}

void
mqtt_sub_done(mqtt_sub_t *sub, bool processed)
{
   pthread_mutex_lock(&sub->lock);
   sub->processed = processed;
   sub->state = SLOT_DONE;
   pthread_cond_broadcast(&sub->cond);
   pthread_mutex_unlock(&sub->lock);
}

void
mqtt_sub_stop(mqtt_sub_t *sub)
{
   MQTTAsync_disconnectOptions dc = MQTTAsync_disconnectOptions_initializer5;

   if (!sub)
      return;
   pthread_mutex_lock(&sub->lock);
   sub->stopping = true; /* releases a paho thread waiting in on_message() */
   pthread_cond_broadcast(&sub->cond);
   while (sub->active > 0)
      pthread_cond_wait(&sub->cond, &sub->lock);
   pthread_mutex_unlock(&sub->lock);
   if (sub->client) {
      dc.timeout = 1000;
      if (MQTTAsync_isConnected(sub->client))
         MQTTAsync_disconnect(sub->client, &dc);
      for (int i = 0; i < 20 && MQTTAsync_isConnected(sub->client); i++)
         usleep(50 * 1000);
      MQTTAsync_destroy(&sub->client);
   }
   pthread_cond_destroy(&sub->cond);
   pthread_mutex_destroy(&sub->lock);
   free(sub->uri);
   for (int i = 0; i < sub->n_topics; i++)
      free(sub->topics[i]);
   free(sub->topics);
   free(sub->qos_list);
   free(sub->topic);
   free(sub);
}
