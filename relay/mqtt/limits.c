/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The broker's limits from its MQTT 5 CONNACK (Receive Maximum, Maximum Packet Size: set
 * by the connect callback on paho's thread, read by the main thread, atomics written only
 * here), the size of the PUBLISH a message makes, and the dead-letter reasons made from
 * what the broker said (relay_mqtt_t.limit_reasons, touched only here under the lock, freed
 * by relay_mqtt_destroy()).
 */
#include "mqtt/mqtt-private.h"

#include <string.h>

/* The broker's Receive Maximum caps how many QoS 1/2 publishes may be unacknowledged; going
 * above it makes paho 1.3.12's send thread sleep (up to 1 s at a time), so the relay keeps
 * its window below it. */
void
relay_mqtt_on_connect_success5(void *context, MQTTAsync_successData5 *resp)
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
   unsigned am = 0;
   if (resp &&
       MQTTProperties_hasProperty(&resp->properties, MQTTPROPERTY_CODE_TOPIC_ALIAS_MAXIMUM)) {
      am = (unsigned)MQTTProperties_getNumericValue(&resp->properties,
                                                    MQTTPROPERTY_CODE_TOPIC_ALIAS_MAXIMUM);
   }
   atomic_store(&m->alias_max, am);
}

size_t
relay_mqtt_window(int configured, int qos, int receive_max)
{
   size_t w = configured > 0 ? (size_t)configured : 1;
   if (qos > 0 && receive_max > 0 && (size_t)receive_max < w) {
      w = (size_t)receive_max;
   }
   return w;
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
      props += msg->expiry_s ? 1 + 4 : 0;
      props += msg->payload_format != RELAY_PAYLOAD_FORMAT_NONE ? 1 + 1 : 0;
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
