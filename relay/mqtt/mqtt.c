/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's MQTT client over paho MQTTAsync, its lifetime: create it and register paho's
 * callbacks (callbacks.c), connect (paho reconnects by itself), clean the session,
 * disconnect, destroy. The other jobs are in their own files: publishes and their
 * bookkeeping (delivery.c), the completion queue (completions.c), the broker's limits
 * (limits.c); the state they share is relay_mqtt_t (mqtt-private.h). Main thread only.
 */
#include "mqtt/mqtt-private.h"
#include "util/error.h"

#include "mqtt/aliases.h"
#include "mqtt/tls.h"
#include "util/log.h"

_Static_assert(RELAY_MQTT_CODE_INCOMPLETE == MQTTASYNC_OPERATION_INCOMPLETE,
               "mqtt.h names paho's code");

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
   atomic_init(&m->alias_max, 0);
   atomic_init(&m->conn_gen, 0);
   m->aliases = cfg->topic_aliases && cfg->mqtt_version == 5 ? relay_aliases_new() : NULL;
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
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT,
                     "cannot create the MQTT client for '%s': %s", cfg->mqtt_uri,
                     MQTTAsync_strerror(rc));
      m->client = NULL;
      relay_mqtt_destroy(m);
      return NULL;
   }
   /* Creating the first client initialises paho's trace settings: set them again. */
   relay_log_sync_paho();
   relay_tls_warn_insecure(cfg);
   if (cfg->mqtt_version != 5) {
      /* MQTT 3.1.1 has no Message Expiry Interval: a broker keeps such messages for ever. */
      relay_log(cfg->message_expiry_s ? RELAY_LOG_WARNING : RELAY_LOG_INFO, "mqtt",
                "MQTT 3.1.1 (mqtt-version 4) cannot send a message expiry: %s; events whose "
                "expiresAt passed before publishing are still handled by expired-events (%s)",
                cfg->message_expiry_s ? "message-expiry is not sent"
                                      : "events' expiresAt is not sent",
                cfg->expired_events ? cfg->expired_events : "drop");
   }
   MQTTAsync_setCallbacks(m->client, m, relay_mqtt_on_lost, relay_mqtt_on_message, NULL);
   MQTTAsync_setConnected(m->client, m, relay_mqtt_on_connected);
   if (cfg->mqtt_version == 5) {
      MQTTAsync_setDisconnected(m->client, m, relay_mqtt_on_disconnect_packet);
   }
   /* The start-up line shows the configured client-id; this is the one the broker sees. */
   relay_log(RELAY_LOG_INFO, "mqtt", "client id '%s'%s", client_id,
             cfg->client_id_from_name ? " (from --name and a random suffix)" : "");
   return m;
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
      o->onSuccess5 = relay_mqtt_on_connect_success5;
      o->onFailure5 = relay_mqtt_on_connect_failure5;
   } else {
      /* Not paho's default (MQTTVERSION_DEFAULT), which tries MQTT 3.1 at once after a refused
       * 3.1.1 CONNECT: the relay then logged the 3.1 answer (aedes: "identifier rejected" for
       * a client id over 23 characters) instead of the refusal (a wrong password). */
      o->MQTTVersion = MQTTVERSION_3_1_1;
      o->cleansession = cfg->mqtt_clean_start || clean_next(m);
      o->onFailure = relay_mqtt_on_connect_failure;
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
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_MQTT, "MQTT connect to '%s' failed: %s",
                     cfg->mqtt_uri, MQTTAsync_strerror(rc));
      return false;
   }
   return true;
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
      o->onSuccess5 = relay_mqtt_on_disconnected5;
   } else {
      o->onSuccess = relay_mqtt_on_disconnected;
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
   relay_mqtt_free_contexts(m);
   relay_aliases_destroy(m->aliases);
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
