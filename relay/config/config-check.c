/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Checks that involve several options, run once all layers are applied.
 *
 * Runs on the thread that loads the configuration (main at start-up, the signal thread on
 * SIGHUP); it touches only the relay_config_t it is given, never a running one.
 */
#include "config/config-private.h"
#include "config/namespace.h"
#include "util/error.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static bool
missing_required(const relay_config_t *cfg, bson_error_t *error)
{
   struct {
      bool missing;
      const char *name;
   } req[] = {
      {!cfg->mongodb_uri, "mongodb-uri"},
      {!cfg->database && cfg->n_namespaces == 0 && !cfg->state_database, "database"},
      {cfg->n_collections == 0 && cfg->n_namespaces == 0 && !cfg->mongodb_only, "collection"},
      {!cfg->mqtt_uri && !cfg->mongodb_only, "mqtt-uri"},
   };
   bson_string_t *list = bson_string_new(NULL);
   for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
      if (req[i].missing) {
         const relay_opt_t *opt = _relay_opt_find(req[i].name, strlen(req[i].name));
         bson_string_append_printf(list, "%s--%s (%s)", list->len ? ", " : "", opt->name, opt->env);
      }
   }
   bool missing = list->len > 0;
   if (missing) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "missing required option%s: %s; set each as a flag, in the environment or "
                     "in the config file",
                     strchr(list->str, ',') ? "s" : "", list->str);
   }
   bson_string_free(list, true);
   return missing;
}

static bool
is_tls_uri(const char *uri)
{
   return !strncasecmp(uri, "ssl://", 6) || !strncasecmp(uri, "mqtts://", 8) ||
          !strncasecmp(uri, "wss://", 6);
}

static bool
check_mqtt(const relay_config_t *cfg, bson_error_t *error)
{
   const char *tls_opt = cfg->mqtt_ca_file        ? "mqtt-ca-file"
                         : cfg->mqtt_cert_file    ? "mqtt-cert-file"
                         : cfg->mqtt_key_file     ? "mqtt-key-file"
                         : cfg->mqtt_tls_insecure ? "mqtt-tls-insecure"
                                                  : NULL;
   /* Silently sending in clear text when TLS options were given would be the worst outcome. */
   if (tls_opt && !is_tls_uri(cfg->mqtt_uri)) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s is set but mqtt-uri is not a TLS URI: use ssl://, mqtts:// or wss://",
                     tls_opt);
      return false;
   }
   if ((cfg->mqtt_key_password || cfg->mqtt_key_password_file) && !cfg->mqtt_cert_file) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "mqtt-key-password is set without mqtt-cert-file (and mqtt-key-file)");
      return false;
   }
   if (cfg->mqtt_key_file && !cfg->mqtt_cert_file) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "mqtt-key-file is set without mqtt-cert-file");
      return false;
   }
   if (cfg->mqtt_password && !cfg->mqtt_username && cfg->mqtt_version == 4) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "a password without mqtt-username is not allowed by MQTT 3.1.1 "
                     "(mqtt-version 4); set mqtt-username or use mqtt-version 5");
      return false;
   }
   if (cfg->payload_mode == RELAY_PAYLOAD_BINARY && cfg->mqtt_version != 5) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "payload-mode binary needs MQTT 5 user properties; set mqtt-version 5 or "
                     "payload-mode structured");
      return false;
   }
   if (cfg->topic_aliases && cfg->mqtt_version != 5) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "topic-aliases needs MQTT 5; set mqtt-version 5 or leave topic-aliases off");
      return false;
   }
   return true;
}

static bool
check_fields(const relay_config_t *cfg, bson_error_t *error)
{
   const char *names[] = {cfg->version_field, cfg->event_seq_field, cfg->events_field,
                          cfg->dead_letters_field, cfg->requeues_field};
   const char *keys[] = {"version-field", "event-seq-field", "events-field", "dead-letters-field",
                         "requeues-field"};
   for (size_t i = 0; i < 5; i++) {
      for (size_t j = i + 1; j < 5; j++) {
         if (!strcmp(names[i], names[j])) {
            bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                           "%s and %s are both '%s': they must differ", keys[i], keys[j], names[i]);
            return false;
         }
      }
   }
   return true;
}

static bool
check_flow(const relay_config_t *cfg, bson_error_t *error)
{
   if (cfg->reconnect_min_ms > cfg->reconnect_max_ms) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "reconnect-min-ms (%d) is greater than reconnect-max-ms (%d)",
                     cfg->reconnect_min_ms, cfg->reconnect_max_ms);
      return false;
   }
   /* The window could never fill otherwise: buffered events include the in-flight ones. */
   if (cfg->max_buffered_events < cfg->inflight_window) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "max-buffered-events (%d) is less than inflight-window (%d)",
                     cfg->max_buffered_events, cfg->inflight_window);
      return false;
   }
   return true;
}

/* The lease timings must leave room for one missed renewal before the local deadline. */
static bool
check_group(const relay_config_t *cfg, bson_error_t *error)
{
   if (cfg->lease_margin_ms >= cfg->lease_ttl_ms) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "lease-margin-ms (%d) must be less than lease-ttl-ms (%d)",
                     cfg->lease_margin_ms, cfg->lease_ttl_ms);
      return false;
   }
   if (2 * cfg->lease_renew_ms >= cfg->lease_ttl_ms - cfg->lease_margin_ms) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "lease-renew-ms (%d) must be less than half of lease-ttl-ms - "
                     "lease-margin-ms (%d - %d), so that one missed renewal costs nothing",
                     cfg->lease_renew_ms, cfg->lease_ttl_ms, cfg->lease_margin_ms);
      return false;
   }
   return true;
}

/* MQTT 5 and 3.1.1 encode a client id with a two-byte length: longer ones can never be sent
 * (paho then fails every connect with "TCP connect completion failure"). 23 bytes is only
 * what every broker must accept; mosquitto and most others take more. */
#define MQTT_STRING_MAX 65535
/* What relay_group_new() appends to a client id made from --name: "-" and 8 hex digits. */
#define CLIENT_ID_SUFFIX_LEN 9

static bool
check_client_id(const relay_config_t *cfg, bson_error_t *error)
{
   size_t len = strlen(cfg->client_id) + (cfg->client_id_from_name ? CLIENT_ID_SUFFIX_LEN : 0);
   if (len > MQTT_STRING_MAX) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s is %zu bytes long%s: MQTT allows at most %d bytes in a client id",
                     cfg->client_id_from_name ? "name" : "client-id", strlen(cfg->client_id),
                     cfg->client_id_from_name ? " (the client id adds 9)" : "", MQTT_STRING_MAX);
      return false;
   }
   return true;
}

/* Topics starting with '$' are the broker's own ($SYS/...): MQTT forbids clients to publish
 * there, and a broker drops the connection instead (MQTT 5 4.7.2). Refused here, not found
 * out by dead-lettering every event. An {id} at the start is percent-encoded instead. */
static bool
check_topic(const relay_config_t *cfg, bson_error_t *error)
{
   if (cfg->topic_template && cfg->topic_template[0] == '$') {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "topic: '%s' starts with '$', which brokers reserve for their own topics "
                     "($SYS/...) and refuse publishes to",
                     cfg->topic_template);
      return false;
   }
   return true;
}

/* The log file is opened only at start; a missing directory found then would exit 73 after
 * --check-config said the configuration was fine. Whether the service's user may write there
 * is left to the start (--check-config often runs as another user). */
static bool
check_log_file(const relay_config_t *cfg, bson_error_t *error)
{
   if (!cfg->log_file) {
      return true;
   }
   const char *slash = strrchr(cfg->log_file, '/');
   char *dir = slash == cfg->log_file ? bson_strdup("/")
               : slash                ? bson_strndup(cfg->log_file, (size_t)(slash - cfg->log_file))
                                      : bson_strdup(".");
   struct stat st;
   int err = stat(dir, &st) == 0 ? 0 : errno;
   bool ok = !err && S_ISDIR(st.st_mode);
   if (!ok) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "log-file: '%s' cannot be created: '%s': %s", cfg->log_file, dir,
                     err ? strerror(err) : "not a directory");
   }
   bson_free(dir);
   return ok;
}

bool
relay_config_check_publishing(const relay_config_t *cfg, bson_error_t *error)
{
   return check_mqtt(cfg, error) && check_topic(cfg, error);
}

bool
_relay_config_finish(relay_config_t *cfg, bson_error_t *error)
{
   if (!cfg->lease_collection) {
      cfg->lease_collection = bson_strdup(cfg->state_collection);
   }
   cfg->client_id_from_name = !cfg->client_id;
   if (!cfg->client_id) {
      cfg->client_id = bson_strdup(cfg->name);
   }
   if (cfg->metrics_listen && (!*cfg->metrics_listen || !strcasecmp(cfg->metrics_listen, "off"))) {
      bson_free(cfg->metrics_listen);
      cfg->metrics_listen = NULL;
   }
   if (cfg->log_file && !*cfg->log_file) {
      bson_free(cfg->log_file);
      cfg->log_file = NULL;
   }
   if (missing_required(cfg, error)) {
      return false;
   }
   return (cfg->mongodb_only ||
           (check_mqtt(cfg, error) && check_topic(cfg, error) && check_client_id(cfg, error))) &&
          check_fields(cfg, error) && check_flow(cfg, error) && check_group(cfg, error) &&
          check_log_file(cfg, error) && _relay_config_check_archive(cfg, error) &&
          _relay_config_check_expiry(cfg, error) && relay_config_resolve_namespaces(cfg, error);
}
