/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Publishes and their delivery bookkeeping: sending one message through paho (relay_mqtt_publish(),
 * main thread) and the per-publish contexts that carry its tag to paho's acknowledgement
 * callbacks (paho's threads), which turn them into ACK/FAIL completions. The list of
 * contexts (relay_mqtt_t.ctxs) is touched only here, under relay_mqtt_t.lock.
 */
#include "mqtt/mqtt-private.h"

#include <string.h>

#include "mqtt/aliases.h"

/* Per-publish callback context. paho hands back one pointer; it has to lead to both the
 * client (for the queue) and the tag. Contexts are linked so the ones whose callback never
 * came (client destroyed first) are freed at the end. */
typedef struct pub_ctx_t {
   relay_mqtt_t *m;
   uint64_t tag;
   struct pub_ctx_t *prev, *next;
} pub_ctx_t;

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
   relay_mqtt_push(m, reason >= 0x80 ? RELAY_MQTT_FAIL : RELAY_MQTT_ACK, tag, 0, reason);
}

static void
on_pub_failure5(void *context, MQTTAsync_failureData5 *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   relay_mqtt_push(m, RELAY_MQTT_FAIL, tag, resp ? resp->code : -1,
                   resp ? (int)resp->reasonCode : 0);
}

static void
on_pub_success(void *context, MQTTAsync_successData *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   relay_mqtt_push(m, RELAY_MQTT_ACK, tag, 0, 0);
}

static void
on_pub_failure(void *context, MQTTAsync_failureData *resp)
{
   pub_ctx_t *c = context;
   relay_mqtt_t *m = c->m;
   uint64_t tag = ctx_release(c);
   relay_mqtt_push(m, RELAY_MQTT_FAIL, tag, resp ? resp->code : -1, 0);
}

/* Frees the contexts of publishes whose callbacks will never come (the client is destroyed). */
void
relay_mqtt_free_contexts(relay_mqtt_t *m)
{
   while (m->ctxs) {
      pub_ctx_t *c = m->ctxs;
      m->ctxs = c->next;
      bson_free(c);
   }
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

/* A byte (@size 1) or four-byte integer property, filled like set_string_prop(). */
static void
set_int_prop(MQTTProperties *props, enum MQTTPropertyCodes code, int size, uint32_t value)
{
   MQTTProperty *p = &props->array[props->count++];
   memset(p, 0, sizeof *p);
   p->identifier = code;
   if (size == 1) {
      p->value.byte = (unsigned char)value;
   } else {
      p->value.integer4 = value;
   }
   props->length += 1 + size;
}

/* --topic-aliases: adds the topic's alias to @props and returns the topic to send: "" when
 * the broker knows the alias on this connection, else @topic (defining it). Without aliases
 * (the option off, MQTT 3.1.1, a broker that allows none, the connection down) @topic. */
static const char *
with_alias(relay_mqtt_t *m, MQTTProperties *props, const char *topic)
{
   bool known;
   uint16_t alias;
   if (!m->aliases || atomic_load(&m->lost_reported)) {
      return topic;
   }
   alias = relay_aliases_use(m->aliases, atomic_load(&m->conn_gen), atomic_load(&m->alias_max),
                             topic, &known);
   if (!alias) {
      return topic;
   }
   MQTTProperty *p = &props->array[props->count++];
   memset(p, 0, sizeof *p);
   p->identifier = MQTTPROPERTY_CODE_TOPIC_ALIAS;
   p->value.integer2 = alias;
   props->length += 1 + 2;
   return known ? "" : topic;
}

int
relay_mqtt_publish(relay_mqtt_t *m, const relay_mqtt_message_t *msg, uint64_t tag)
{
   MQTTAsync_message pm = MQTTAsync_message_initializer;
   MQTTAsync_responseOptions ro = MQTTAsync_responseOptions_initializer;
   MQTTProperty prop_array[RELAY_MQTT_MAX_USER_PROPS + 4];
   const char *topic = msg->topic;
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
      if (msg->payload_format != RELAY_PAYLOAD_FORMAT_NONE) {
         set_int_prop(&pm.properties, MQTTPROPERTY_CODE_PAYLOAD_FORMAT_INDICATOR, 1,
                      msg->payload_format == RELAY_PAYLOAD_FORMAT_UTF8);
      }
      if (msg->expiry_s) {
         set_int_prop(&pm.properties, MQTTPROPERTY_CODE_MESSAGE_EXPIRY_INTERVAL, 4, msg->expiry_s);
      }
      topic = with_alias(m, &pm.properties, topic);
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
   rc = MQTTAsync_sendMessage(m->client, topic, &pm, &ro);
   if (rc != MQTTASYNC_SUCCESS) {
      /* "When a function which takes a callback returns an error, the callback will never
       * be called": the context is ours to free. */
      ctx_release(c);
   }
   return rc;
}
