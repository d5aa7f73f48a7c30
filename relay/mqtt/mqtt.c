/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's MQTT client over paho MQTTAsync: connect, publish, and the news from paho's
 * threads (acknowledgements, connects, losses and why) as a queue of completions. paho's
 * callbacks only push onto that queue under the lock (and set atomics); the main thread owns
 * everything else and drains the queue with relay_mqtt_wait().
 */
#include "mqtt/mqtt.h"
#include "util/error.h"

#include <errno.h>
#include <stdatomic.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <MQTTAsync.h>

#include "mqtt/tls.h"
#include "util/log.h"

_Static_assert(RELAY_MQTT_CODE_INCOMPLETE == MQTTASYNC_OPERATION_INCOMPLETE,
               "mqtt.h names paho's code");

/* Per-publish callback context. paho hands back one pointer; it has to lead to both the
 * client (for the queue) and the tag. Contexts are linked so the ones whose callback never
 * came (client destroyed first) are freed at the end. */
typedef struct pub_ctx_t {
   relay_mqtt_t *m;
   uint64_t tag;
   struct pub_ctx_t *prev, *next;
} pub_ctx_t;

struct relay_mqtt_t {
   const relay_config_t *cfg;
   MQTTAsync client;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   relay_mqtt_completion_t *queue; /* ring */
   size_t qcap, qhead, qlen;
   bool woken;
   pub_ctx_t *ctxs;
   atomic_int receive_max; /* the broker's Receive Maximum (MQTT 5), 0 if not told */
   atomic_uint max_packet; /* the broker's Maximum Packet Size (MQTT 5), 0 if not told */
   /* Dead-letter reasons made from what the broker said (a Maximum Packet Size, a DISCONNECT
    * reason), one per text; items in the table point at them, so they live as long as the
    * client. Guarded by lock. */
   char **limit_reasons;
   size_t n_limit_reasons;
   char *client_id; /* as given to paho: what the broker knows this relay as */
   bool clean_next; /* connect with a clean session (after relay_mqtt_clean_session()) */
   /* The reason code of the broker's DISCONNECT (MQTT 5) for the connection being lost, -1
    * if none came; paho's connection-lost callback does not carry it. */
   atomic_int last_disconnect_reason;
   atomic_bool lost_reported; /* LOST queued for the current connection */
};

static void
push(relay_mqtt_t *m, relay_mqtt_kind_t kind, uint64_t tag, int code, int reason)
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

/* Unlinks and frees @c; returns its tag. */
static uint64_t
ctx_release(pub_ctx_t *c)
{
   relay_mqtt_t *m = c->m;
   uint64_t tag = c->tag;
   pthread_mutex_lock(&m->lock);
   if (c->prev) {
      c->prev->next = c->next;
   } else {
      m->ctxs = c->next;
   }
   if (c->next) {
      c->next->prev = c->prev;
   }
   pthread_mutex_unlock(&m->lock);
   bson_free(c);
   return tag;
}

static void
on_pub_success5(void *context, MQTTAsync_successData5 *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   int reason = resp ? (int)resp->reasonCode : 0;
   uint64_t tag = ctx_release(c);
   /* A PUBACK reason >= 0x80 is a refusal even if paho calls it success. */
   push(m, reason >= 0x80 ? RELAY_MQTT_FAIL : RELAY_MQTT_ACK, tag, 0, reason);
}

static void
on_pub_failure5(void *context, MQTTAsync_failureData5 *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   push(m, RELAY_MQTT_FAIL, tag, resp ? resp->code : -1, resp ? (int)resp->reasonCode : 0);
}

static void
on_pub_success(void *context, MQTTAsync_successData *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   push(m, RELAY_MQTT_ACK, tag, 0, 0);
}

static void
on_pub_failure(void *context, MQTTAsync_failureData *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   push(m, RELAY_MQTT_FAIL, tag, resp ? resp->code : -1, 0);
}

static void
on_connected(void *context, char *cause)
{
   relay_mqtt_t *m = context;
   if (relay_tls_uri(m->cfg->mqtt_uri)) {
      relay_tls_watch(false);
   }
   atomic_store(&m->lost_reported, false);
   push(context, RELAY_MQTT_CONNECTED, 0, 0, 0);
}

/* The connection is gone: said once per connection (see on_disconnect_packet()). */
static void
report_lost(relay_mqtt_t *m)
{
   if (atomic_exchange(&m->lost_reported, true)) {
      return;
   }
   if (relay_tls_uri(m->cfg->mqtt_uri)) {
      relay_tls_watch(true); /* paho reconnects by itself: explain its failures */
   }
   push(m, RELAY_MQTT_LOST, 0, 0, 0);
}

/* paho 1.3.12 calls this (MQTT 5 only) when the broker sends DISCONNECT, and then reconnects
 * without calling on_lost(): this is both the only account of why (0x8E: another client
 * connected with this client id) and the only news that the connection is gone. */
static void
on_disconnect_packet(void *context, MQTTProperties *props, enum MQTTReasonCodes reason)
{
   relay_mqtt_t *m = context;
   const char *text = relay_mqtt_disconnect_text((int)reason);
   atomic_store(&m->last_disconnect_reason, (int)reason);
   relay_log(RELAY_LOG_WARNING, "mqtt",
             "connection lost: the broker disconnected with reason 0x%02X (%s)%s%s%s",
             (int)reason, text ? text : "not a reason MQTT 5 defines",
             reason == 0x8E ? ": another client connected with client id '" : "",
             reason == 0x8E ? m->client_id : "", reason == 0x8E ? "'" : "");
   report_lost(m);
}

static void
on_lost(void *context, char *cause)
{
   relay_mqtt_t *m = context;
   if (atomic_load(&m->lost_reported)) {
      return; /* a DISCONNECT said it already */
   }
   atomic_store(&m->last_disconnect_reason, -1);
   /* Without a reason: mosquitto 2.0, for one, closes the connection of a client whose id
    * another client connects with, and MQTT 3.1.1 has no way to say why. */
   relay_log(RELAY_LOG_WARNING, "mqtt",
             "connection lost%s%s (the broker gave no reason; it closes the connection this way "
             "too when another client connects with client id '%s')",
             cause ? ": " : "", cause ? cause : "", m->client_id);
   report_lost(m);
}

int
relay_mqtt_last_disconnect_reason(relay_mqtt_t *m)
{
   return atomic_load(&m->last_disconnect_reason);
}

static int
on_message(void *context, char *topic, int len, MQTTAsync_message *msg)
{
   /* The relay subscribes to nothing; free whatever arrives anyway. */
   MQTTAsync_freeMessage(&msg);
   MQTTAsync_free(topic);
   return 1;
}

/* The broker's Receive Maximum caps how many QoS 1/2 publishes may be unacknowledged; going
 * above it makes paho 1.3.12's send thread sleep (up to 1 s at a time), so the relay keeps
 * its window below it. */
static void
on_connect_success5(void *context, MQTTAsync_successData5 *resp)
{
   relay_mqtt_t *m = context;
   if (resp && MQTTProperties_hasProperty(&resp->properties, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM)) {
      int rm = MQTTProperties_getNumericValue(&resp->properties, MQTTPROPERTY_CODE_RECEIVE_MAXIMUM);
      if (rm > 0) {
         atomic_store(&m->receive_max, rm);
      }
   }
   /* A broker that announces a Maximum Packet Size drops the connection on a larger packet
    * (mosquitto's max_packet_size): such a message is dead-lettered before it is sent. */
   unsigned mp = 0;
   if (resp &&
       MQTTProperties_hasProperty(&resp->properties, MQTTPROPERTY_CODE_MAXIMUM_PACKET_SIZE)) {
      mp = (unsigned)MQTTProperties_getNumericValue(&resp->properties,
                                                     MQTTPROPERTY_CODE_MAXIMUM_PACKET_SIZE);
   }
   atomic_store(&m->max_packet, mp);
}

int
relay_mqtt_receive_max(relay_mqtt_t *m)
{
   return atomic_load(&m->receive_max);
}

unsigned
relay_mqtt_max_packet(relay_mqtt_t *m)
{
   return atomic_load(&m->max_packet);
}

/* Bytes of MQTT's variable byte integer for @n. */
static size_t
varint_size(size_t n)
{
   return n < 128 ? 1 : n < 16384 ? 2 : n < 2097152 ? 3 : 4;
}

size_t
relay_mqtt_packet_size(int mqtt_version, int qos, const relay_mqtt_message_t *msg)
{
   size_t rest = 2 + strlen(msg->topic) + (qos > 0 ? 2 : 0) + msg->payload_len;
   if (mqtt_version == 5) {
      size_t props = msg->content_type ? 1 + 2 + strlen(msg->content_type) : 0;
      for (size_t i = 0; i < msg->n_user_props; i++) {
         props += 1 + 2 + strlen(msg->user_props[2 * i]) + 2 + strlen(msg->user_props[2 * i + 1]);
      }
      rest += varint_size(props) + props;
   }
   return 1 + varint_size(rest) + rest;
}

const char *
relay_mqtt_keep_reason(relay_mqtt_t *m, char *want)
{
   const char *found = NULL;
   pthread_mutex_lock(&m->lock);
   for (size_t i = 0; i < m->n_limit_reasons && !found; i++) {
      if (!strcmp(m->limit_reasons[i], want)) {
         found = m->limit_reasons[i];
      }
   }
   if (!found) {
      m->limit_reasons =
         bson_realloc(m->limit_reasons, (m->n_limit_reasons + 1) * sizeof *m->limit_reasons);
      m->limit_reasons[m->n_limit_reasons++] = want;
      found = want;
      want = NULL;
   }
   pthread_mutex_unlock(&m->lock);
   bson_free(want);
   return found;
}

/* The reason for @limit, made once per value. */
static const char *
limit_reason(relay_mqtt_t *m, unsigned limit)
{
   return relay_mqtt_keep_reason(
      m, bson_strdup_printf(
            "message larger than the broker's Maximum Packet Size (%u bytes, from its CONNACK)",
            limit));
}

const char *
relay_mqtt_check_size(relay_mqtt_t *m, const relay_mqtt_message_t *msg)
{
   unsigned limit = relay_mqtt_max_packet(m);
   if (limit == 0 || m->cfg->mqtt_version != 5 ||
       relay_mqtt_packet_size(5, m->cfg->qos, msg) <= limit) {
      return NULL;
   }
   return limit_reason(m, limit);
}

/* What to try when an MQTT 5 connect failed the way a broker without MQTT 5 makes it fail,
 * else "". Such a broker answers with MQTT 3.1.1's CONNACK return code 1 ("unacceptable
 * protocol version": aedes 1.x), which paho 1.3.12 reports as code 1, or closes the connection
 * without a CONNACK (RabbitMQ before 3.13), which paho reports as code -1 with "TCP connect
 * completion failure" (a refused TCP connect says "TCP/TLS connect failure" instead). */
static const char *
mqtt5_hint(const relay_mqtt_t *m, int code, const char *message)
{
   if (m->cfg->mqtt_version != 5) {
      return "";
   }
   if (code == 1) {
      return " (MQTT 3.1.1's \"unacceptable protocol version\"): the broker does not support "
             "MQTT 5; try --mqtt-version 4";
   }
   if (code == MQTTASYNC_FAILURE && message && strstr(message, "completion failure")) {
      return " (the broker closed the connection without answering the MQTT 5 CONNECT): the "
             "broker may not support MQTT 5; try --mqtt-version 4";
   }
   return "";
}

/* The broker's refusal in words ("not authorized"), so an operator does not have to look up
 * CONNACK codes; other failures (network, TLS) keep paho's code and message, with a hint when
 * they look like a broker without MQTT 5. */
static void
log_connect_failure(const relay_mqtt_t *m, int code, int reason, const char *message)
{
   const char *refusal = relay_mqtt_connack_text(m->cfg->mqtt_version, code, reason);
   char *tls = relay_tls_take_reason();
   if (refusal && m->cfg->mqtt_version == 5) {
      /* paho 1.3.12 reports an MQTT 5 CONNACK refusal in code (see connack_text). */
      relay_log(RELAY_LOG_WARNING, "mqtt",
                "connect as client id '%s' refused by the broker: %s (reason code 0x%02X)",
                m->client_id, refusal, reason >= 0x80 ? reason : code);
   } else if (refusal) {
      relay_log(RELAY_LOG_WARNING, "mqtt",
                "connect as client id '%s' refused by the broker: %s (return code %d)",
                m->client_id, refusal, code);
   } else {
      relay_log(RELAY_LOG_WARNING, "mqtt", "connect failed: code %d, reason %d%s%s%s%s%s", code,
                reason, message ? ": " : "", message ? message : "", tls ? ": " : "",
                tls ? tls : "", tls ? "" : mqtt5_hint(m, code, message));
   }
   bson_free(tls);
}

static void
on_connect_failure5(void *context, MQTTAsync_failureData5 *resp)
{
   log_connect_failure(context, resp ? resp->code : -1, resp ? (int)resp->reasonCode : 0,
                       resp ? resp->message : NULL);
   push(context, RELAY_MQTT_CONNECT_FAILED, 0, resp ? resp->code : -1, 0);
}

static void
on_connect_failure(void *context, MQTTAsync_failureData *resp)
{
   log_connect_failure(context, resp ? resp->code : -1, 0, resp ? resp->message : NULL);
   push(context, RELAY_MQTT_CONNECT_FAILED, 0, resp ? resp->code : -1, 0);
}

static void
on_disconnected5(void *context, MQTTAsync_successData5 *resp)
{
   push(context, RELAY_MQTT_DISCONNECTED, 0, 0, 0);
}

static void
on_disconnected(void *context, MQTTAsync_successData *resp)
{
   push(context, RELAY_MQTT_DISCONNECTED, 0, 0, 0);
}

relay_mqtt_t *
relay_mqtt_new(const relay_config_t *cfg, const char *client_id, bson_error_t *error)
{
   relay_mqtt_t *m = bson_malloc0(sizeof *m);
   MQTTAsync_createOptions copts = MQTTAsync_createOptions_initializer;
   int rc;

   m->cfg = cfg;
   m->client_id = bson_strdup(client_id);
   atomic_init(&m->lost_reported, false);
   atomic_init(&m->last_disconnect_reason, -1);
   pthread_mutex_init(&m->lock, NULL);
   pthread_cond_init(&m->cond, NULL);
   m->qcap = 1024;
   m->queue = bson_malloc(m->qcap * sizeof *m->queue);
   copts.MQTTVersion = cfg->mqtt_version == 5 ? MQTTVERSION_5 : MQTTVERSION_3_1_1;
   /* Room for the whole window plus slack; never deleteOldestMessages (drops silently). */
   copts.maxBufferedMessages = cfg->inflight_window * 2 + 100;
   copts.sendWhileDisconnected = 0;
   rc = MQTTAsync_createWithOptions(&m->client, cfg->mqtt_uri, client_id,
                                    MQTTCLIENT_PERSISTENCE_NONE, NULL, &copts);
   if (rc != MQTTASYNC_SUCCESS) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT, "cannot create the MQTT client for '%s': %s",
                     cfg->mqtt_uri, MQTTAsync_strerror(rc));
      m->client = NULL;
      relay_mqtt_destroy(m);
      return NULL;
   }
   /* Creating the first client initialises paho's trace settings: set them again. */
   relay_log_sync_paho();
   relay_tls_warn_insecure(cfg);
   MQTTAsync_setCallbacks(m->client, m, on_lost, on_message, NULL);
   MQTTAsync_setConnected(m->client, m, on_connected);
   if (cfg->mqtt_version == 5) {
      MQTTAsync_setDisconnected(m->client, m, on_disconnect_packet);
   }
   /* The start-up line shows the configured client-id; this is the one the broker sees. */
   relay_log(RELAY_LOG_INFO, "mqtt", "client id '%s'%s", client_id,
             cfg->client_id_from_name ? " (from --name and a random suffix)" : "");
   return m;
}

/* Frees the contexts of publishes whose callbacks will never come (the client is destroyed). */
static void
free_contexts(relay_mqtt_t *m)
{
   while (m->ctxs) {
      pub_ctx_t *c = m->ctxs;
      m->ctxs = c->next;
      bson_free(c);
   }
}

void
relay_mqtt_clean_session(relay_mqtt_t *m)
{
   /* Disconnecting also stops paho's automatic reconnect (it answers "disconnected" when the
    * connection is down already); the next relay_mqtt_connect() asks for a clean session, and
    * paho empties its own session store when the broker accepts it. Destroying the client
    * instead leaked the publishes paho held (paho 1.3.12, seen under LeakSanitizer). */
   MQTTAsync_disconnect(m->client, NULL);
   pthread_mutex_lock(&m->lock);
   m->clean_next = true;
   pthread_mutex_unlock(&m->lock);
}

static bool
clean_next(relay_mqtt_t *m)
{
   pthread_mutex_lock(&m->lock);
   bool clean = m->clean_next;
   pthread_mutex_unlock(&m->lock);
   return clean;
}

bool
relay_mqtt_connect(relay_mqtt_t *m, bson_error_t *error)
{
   const relay_config_t *cfg = m->cfg;
   MQTTAsync_connectOptions v5 = MQTTAsync_connectOptions_initializer5;
   MQTTAsync_connectOptions v3 = MQTTAsync_connectOptions_initializer;
   MQTTAsync_connectOptions *o = cfg->mqtt_version == 5 ? &v5 : &v3;
   MQTTAsync_SSLOptions ssl = MQTTAsync_SSLOptions_initializer;
   int rc;

   o->keepAliveInterval = cfg->mqtt_keepalive_s;
   if (cfg->mqtt_version == 5) {
      o->cleanstart = cfg->mqtt_clean_start || clean_next(m);
      o->onSuccess5 = on_connect_success5;
      o->onFailure5 = on_connect_failure5;
   } else {
      /* Not paho's default (MQTTVERSION_DEFAULT), which tries MQTT 3.1 at once after a refused
       * 3.1.1 CONNECT: the relay then logged the 3.1 answer (aedes: "identifier rejected" for
       * a client id over 23 characters) instead of the refusal (a wrong password). */
      o->MQTTVersion = MQTTVERSION_3_1_1;
      o->cleansession = cfg->mqtt_clean_start || clean_next(m);
      o->onFailure = on_connect_failure;
   }
   o->context = m;
   o->maxInflight = cfg->inflight_window;
   o->automaticReconnect = 1;
   o->minRetryInterval = cfg->reconnect_min_ms < 1000 ? 1 : cfg->reconnect_min_ms / 1000;
   o->maxRetryInterval = cfg->reconnect_max_ms < 1000 ? 1 : cfg->reconnect_max_ms / 1000;
   o->connectTimeout = 10;
   o->username = cfg->mqtt_username;
   o->password = cfg->mqtt_password;
   if (relay_tls_uri(cfg->mqtt_uri)) {
      relay_tls_fill(cfg, &ssl);
      o->ssl = &ssl;
      relay_tls_watch(true);
   }
   rc = MQTTAsync_connect(m->client, o);
   if (rc != MQTTASYNC_SUCCESS) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT, "MQTT connect to '%s' failed: %s", cfg->mqtt_uri,
                     MQTTAsync_strerror(rc));
      return false;
   }
   return true;
}

/* Fills one property in place. The array is ours (on the stack): paho's sendMessage copies
 * it (MQTTProperties_copy reads count and array only), so the per-message allocations and
 * frees of MQTTProperties_add()/MQTTProperties_free() are not needed. */
static void
set_string_prop(MQTTProperties *props, enum MQTTPropertyCodes code, const char *name,
                const char *value)
{
   MQTTProperty *p = &props->array[props->count++];
   memset(p, 0, sizeof *p);
   p->identifier = code;
   if (code == MQTTPROPERTY_CODE_USER_PROPERTY) {
      p->value.data.data = (char *)name;
      p->value.data.len = (int)strlen(name);
      p->value.value.data = (char *)value;
      p->value.value.len = (int)strlen(value);
      props->length += 1 + 2 + p->value.data.len + 2 + p->value.value.len;
   } else {
      p->value.data.data = (char *)value;
      p->value.data.len = (int)strlen(value);
      props->length += 1 + 2 + p->value.data.len;
   }
}

int
relay_mqtt_publish(relay_mqtt_t *m, const relay_mqtt_message_t *msg, uint64_t tag)
{
   MQTTAsync_message pm = MQTTAsync_message_initializer;
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   MQTTProperty prop_array[RELAY_MQTT_MAX_USER_PROPS + 1];
   pub_ctx_t *c = bson_malloc0(sizeof *c);
   int rc;

   pm.payload = (void *)msg->payload;
   pm.payloadlen = (int)msg->payload_len;
   pm.qos = m->cfg->qos;
   pm.retained = 0;
   if (m->cfg->mqtt_version == 5) {
      BSON_ASSERT(msg->n_user_props <= RELAY_MQTT_MAX_USER_PROPS);
      pm.properties.array = prop_array;
      pm.properties.max_count = (int)(sizeof prop_array / sizeof prop_array[0]);
      if (msg->content_type) {
         set_string_prop(&pm.properties, MQTTPROPERTY_CODE_CONTENT_TYPE, NULL, msg->content_type);
      }
      for (size_t i = 0; i < msg->n_user_props; i++) {
         set_string_prop(&pm.properties, MQTTPROPERTY_CODE_USER_PROPERTY, msg->user_props[2 * i],
                         msg->user_props[2 * i + 1]);
      }
      /* paho copies message properties only when response options are given (we always
       * give them: the v5 callbacks are how acknowledgements arrive). */
      ro.onSuccess5 = on_pub_success5;
      ro.onFailure5 = on_pub_failure5;
   } else {
      ro.onSuccess = on_pub_success;
      ro.onFailure = on_pub_failure;
   }
   c->m = m;
   c->tag = tag;
   ro.context = c;
   pthread_mutex_lock(&m->lock);
   c->next = m->ctxs;
   if (m->ctxs) {
      m->ctxs->prev = c;
   }
   m->ctxs = c;
   pthread_mutex_unlock(&m->lock);
   rc = MQTTAsync_sendMessage(m->client, msg->topic, &pm, &ro);
   if (rc != MQTTASYNC_SUCCESS) {
      /* "When a function which takes a callback returns an error, the callback will never
       * be called": the context is ours to free. */
      ctx_release(c);
   }
   return rc;
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

void
relay_mqtt_disconnect(relay_mqtt_t *m, int timeout_ms)
{
   MQTTAsync_disconnectOptions v5 = MQTTAsync_disconnectOptions_initializer5;
   MQTTAsync_disconnectOptions v3 = MQTTAsync_disconnectOptions_initializer;
   MQTTAsync_disconnectOptions *o = m->cfg->mqtt_version == 5 ? &v5 : &v3;
   relay_mqtt_completion_t c;
   int64_t deadline = bson_get_monotonic_time() + (int64_t)timeout_ms * 1000;

   if (!m->client || !MQTTAsync_isConnected(m->client)) {
      return;
   }
   o->timeout = timeout_ms;
   o->context = m;
   if (m->cfg->mqtt_version == 5) {
      o->onSuccess5 = on_disconnected5;
   } else {
      o->onSuccess = on_disconnected;
   }
   if (MQTTAsync_disconnect(m->client, o) != MQTTASYNC_SUCCESS) {
      return;
   }
   /* Late publish completions may still come first; they no longer matter. */
   while (bson_get_monotonic_time() < deadline) {
      if (relay_mqtt_wait(m, &c, 1, 100) == 1 && c.kind == RELAY_MQTT_DISCONNECTED) {
         return;
      }
   }
}

void
relay_mqtt_destroy(relay_mqtt_t *m)
{
   if (!m) {
      return;
   }
   if (m->client) {
      MQTTAsync_destroy(&m->client);
   }
   free_contexts(m);
   for (size_t i = 0; i < m->n_limit_reasons; i++) {
      bson_free(m->limit_reasons[i]);
   }
   bson_free(m->limit_reasons);
   bson_free(m->queue);
   bson_free(m->client_id);
   pthread_cond_destroy(&m->cond);
   pthread_mutex_destroy(&m->lock);
   bson_free(m);
}
