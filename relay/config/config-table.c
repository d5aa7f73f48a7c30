/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The option table, the defaults and the destructor. Rows with a NULL name are section
 * headings for --help and the man page order.
 *
 * The table is constant; the defaults and the destructor touch only the relay_config_t they are
 * given.
 */
#include "config/config-private.h"

#include <stdint.h>
#include <string.h>

#define OFF(field) offsetof(relay_config_t, field)
#define SECTION(title)                                                                             \
   {                                                                                               \
      NULL, NULL, OPT_STRING, 0, 0, 0, NULL, NULL, title                                           \
   }

/* Upper bounds keep values within what the code and the protocols can represent: 65535 is
 * MQTT's Receive Maximum, 268435455 its largest packet, an hour the longest sensible wait. */
const relay_opt_t relay_opts[] = {
   SECTION("MongoDB"),
   {"mongodb-uri", "OUTBOX_MONGODB_URI", OPT_URI_MONGODB, OFF(mongodb_uri), 0, 0, "URI", NULL,
    "connection string; credentials, TLS and timeouts go here (required)"},
   {"database", "OUTBOX_DATABASE", OPT_NAME, OFF(database), RELAY_NAME_DATABASE, 0, "NAME", NULL,
    "database holding the outbox collections (required)"},
   {"collection", "OUTBOX_COLLECTIONS", OPT_LIST, OFF(collections), RELAY_NAME_COLLECTION,
    (long long)OFF(n_collections), "NAME", NULL,
    "collection of --database to watch; repeat or give a comma-separated list"},
   {"namespace", "OUTBOX_NAMESPACES", OPT_LIST, OFF(namespaces), RELAY_NAME_NAMESPACE,
    (long long)OFF(n_namespaces), "DB.COLL", NULL,
    "namespaces to watch, `*` globs in either part (tenant_*.orders); repeat or comma-separate"},
   {"state-database", "OUTBOX_STATE_DATABASE", OPT_NAME, OFF(state_database), RELAY_NAME_DATABASE,
    0, "NAME", "--database",
    "database of the state, lease and archive collections (required when patterns span databases)"},
   {"state-collection", "OUTBOX_STATE_COLLECTION", OPT_NAME, OFF(state_collection),
    RELAY_NAME_COLLECTION, 0, "NAME", "outbox_relay_state",
    "collection for resume tokens, one document per relay name"},
   {"version-field", "OUTBOX_VERSION_FIELD", OPT_NAME, OFF(version_field), RELAY_NAME_FIELD, 0,
    "FIELD", "version", "name of the documents' version field"},
   {"event-seq-field", "OUTBOX_EVENT_SEQ_FIELD", OPT_NAME, OFF(event_seq_field), RELAY_NAME_FIELD,
    0, "FIELD", "eventSeq", "name of the documents' last-event-seq field"},
   {"events-field", "OUTBOX_EVENTS_FIELD", OPT_NAME, OFF(events_field), RELAY_NAME_FIELD, 0,
    "FIELD", "events", "name of the documents' pending-events array"},
   {"dead-letters-field", "OUTBOX_DEAD_LETTERS_FIELD", OPT_NAME, OFF(dead_letters_field),
    RELAY_NAME_FIELD, 0, "FIELD", "deadLetters", "where events that cannot be published are moved"},
   {"requeues-field", "OUTBOX_REQUEUES_FIELD", OPT_NAME, OFF(requeues_field), RELAY_NAME_FIELD, 0,
    "FIELD", "requeues", "counter a requeue of a dead letter increments (the stream watches it)"},

   SECTION("MQTT"),
   {"mqtt-uri", "OUTBOX_MQTT_URI", OPT_URI_MQTT, OFF(mqtt_uri), 0, 0, "URI", NULL,
    "broker, tcp://HOST:PORT or ssl://HOST:PORT (also mqtt, mqtts, ws, wss) (required)"},
   {"mqtt-version", "OUTBOX_MQTT_VERSION", OPT_MQTT_VERSION, OFF(mqtt_version), 0, 0, "N", "5",
    "protocol version: 5, or 4 for MQTT 3.1.1"},
   {"qos", "OUTBOX_QOS", OPT_QOS, OFF(qos), 0, 2, "N", "1", "QoS of published messages: 0, 1 or 2"},
   {"topic", "OUTBOX_TOPIC", OPT_TEMPLATE, OFF(topic_template), 0, 0, "TEMPLATE",
    "outbox/{collection}/{id}",
    "topic template with {db}, {collection}, {id}, {type}, {partition}"},
   {"source", "OUTBOX_SOURCE", OPT_TEMPLATE, OFF(source_template), 0, 0, "TEMPLATE",
    "/{db}/{collection}", "CloudEvents source template, same placeholders"},
   {"payload-mode", "OUTBOX_PAYLOAD_MODE", OPT_PAYLOAD, OFF(payload_mode), 0, 0, "MODE",
    "structured", "structured (CloudEvents JSON) or binary (MQTT 5 user properties + data)"},
   {"user-properties", "OUTBOX_USER_PROPERTIES", OPT_PROPS, OFF(user_properties), 0, 0, "LIST",
    "all", "MQTT 5 user properties: all, none or a list of event-id,event-type,entity-id,seq"},
   {"name", "OUTBOX_NAME", OPT_STRING, OFF(name), 1, 0, "NAME", "outbox-relay",
    "relay name; relays with the same name form a group that shares the work"},
   {"client-id", "OUTBOX_CLIENT_ID", OPT_STRING, OFF(client_id), 1, 0, "ID",
    "NAME-<8 hex per process>", "MQTT client identifier (if given, each member needs its own)"},
   {"mqtt-username", "OUTBOX_MQTT_USERNAME", OPT_STRING, OFF(mqtt_username), 1, 0, "USER", NULL,
    "user name for the broker"},
   {"mqtt-password", "OUTBOX_MQTT_PASSWORD", OPT_SECRET, OFF(mqtt_password), 1, 0, "PASSWORD", NULL,
    "password (environment or config file only: flags are visible in ps)"},
   {"mqtt-password-file", "OUTBOX_MQTT_PASSWORD_FILE", OPT_SECRET_FILE, OFF(mqtt_password_file), 0,
    0, "FILE", NULL, "read the password from FILE (one trailing newline is ignored)"},
   {"mqtt-ca-file", "OUTBOX_MQTT_CA_FILE", OPT_FILE, OFF(mqtt_ca_file), 0, 0, "FILE", NULL,
    "PEM CA certificates to verify the broker (default: the system store)"},
   {"mqtt-cert-file", "OUTBOX_MQTT_CERT_FILE", OPT_FILE, OFF(mqtt_cert_file), 0, 0, "FILE", NULL,
    "PEM client certificate"},
   {"mqtt-key-file", "OUTBOX_MQTT_KEY_FILE", OPT_FILE, OFF(mqtt_key_file), 0, 0, "FILE", NULL,
    "PEM private key of the client certificate"},
   {"mqtt-key-password", "OUTBOX_MQTT_KEY_PASSWORD", OPT_SECRET, OFF(mqtt_key_password), 1, 0,
    "PASSWORD", NULL, "passphrase of an encrypted mqtt-key-file (environment or config file only)"},
   {"mqtt-key-password-file", "OUTBOX_MQTT_KEY_PASSWORD_FILE", OPT_SECRET_FILE,
    OFF(mqtt_key_password_file), 0, 0, "FILE", NULL,
    "read the key's passphrase from FILE (one trailing newline is ignored)"},
   {"mqtt-tls-insecure", "OUTBOX_MQTT_TLS_INSECURE", OPT_BOOL, OFF(mqtt_tls_insecure), 0, 0, NULL,
    "false", "do not verify the broker's host name (testing only)"},
   {"mqtt-clean-start", "OUTBOX_MQTT_CLEAN_START", OPT_BOOL, OFF(mqtt_clean_start), 0, 0, NULL,
    "true", "start a clean broker session on every connect (false: keep it)"},
   {"mqtt-keepalive", "OUTBOX_MQTT_KEEPALIVE", OPT_INT, OFF(mqtt_keepalive_s), 1, 65535, "SECONDS",
    "30", "keep-alive interval"},
   {"max-message-bytes", "OUTBOX_MAX_MESSAGE_BYTES", OPT_SIZE, OFF(max_message_bytes), 64,
    268435455, "BYTES", "268435455", "larger messages are dead-lettered instead of published"},
   {"message-expiry", "OUTBOX_MESSAGE_EXPIRY", OPT_STRING, OFF(message_expiry), 1, 0, "DURATION",
    "none",
    "MQTT 5 Message Expiry Interval of every message (90s, 15m, 1.5h, 7d); an event's "
    "expiresAt wins"},
   {"topic-aliases", "OUTBOX_TOPIC_ALIASES", OPT_BOOL, OFF(topic_aliases), 0, 0, NULL, "false",
    "MQTT 5 topic aliases: a repeated topic is sent as a 2-byte alias"},
   {"expired-events", "OUTBOX_EXPIRED_EVENTS", OPT_STRING, OFF(expired_events), 1, 0, "ACTION",
    "drop", "an event expired before it is published: drop, dead-letter or publish"},

   SECTION("Flow control"),
   {"inflight-window", "OUTBOX_INFLIGHT_WINDOW", OPT_INT, OFF(inflight_window), 1, 65535, "N",
    "256", "unacknowledged messages at most"},
   {"max-buffered-events", "OUTBOX_MAX_BUFFERED_EVENTS", OPT_INT, OFF(max_buffered_events), 1,
    10000000, "N", "10000", "events read but not yet cleared at most (backpressure)"},
   {"max-buffered-bytes", "OUTBOX_MAX_BUFFERED_BYTES", OPT_SIZE, OFF(max_buffered_bytes), 1048576,
    4294967296, "BYTES", "33554432", "BSON bytes of those events at most (backpressure)"},
   {"max-publish-rate", "OUTBOX_MAX_PUBLISH_RATE", OPT_INT, OFF(max_publish_rate), 0, 1000000, "N",
    "0", "events published per second at most (a token bucket; 0: no limit)"},
   {"clear-batch-size", "OUTBOX_CLEAR_BATCH_SIZE", OPT_INT, OFF(clear_batch_size), 1, 100000, "N",
    "500", "acknowledged events removed per round-trip at most"},
   {"clear-interval-ms", "OUTBOX_CLEAR_INTERVAL_MS", OPT_INT, OFF(clear_interval_ms), 0, 60000,
    "MS", "20",
    "how long acknowledgements are collected before clearing (a full batch goes at once)"},
   {"checkpoint-interval-ms", "OUTBOX_CHECKPOINT_INTERVAL_MS", OPT_INT, OFF(checkpoint_interval_ms),
    1, 3600000, "MS", "1000", "how often the resume token is saved"},
   {"shutdown-timeout-ms", "OUTBOX_SHUTDOWN_TIMEOUT_MS", OPT_INT, OFF(shutdown_timeout_ms), 0,
    3600000, "MS", "10000", "how long to wait for acknowledgements on SIGTERM"},
   {"publish-timeout-ms", "OUTBOX_PUBLISH_TIMEOUT_MS", OPT_INT, OFF(publish_timeout_ms), 100,
    3600000, "MS", "30000",
    "a publish unacknowledged this long drops the connection and counts against the message"},
   {"reconnect-min-ms", "OUTBOX_RECONNECT_MIN_MS", OPT_INT, OFF(reconnect_min_ms), 1, 3600000, "MS",
    "100", "first reconnect delay (doubles per attempt)"},
   {"reconnect-max-ms", "OUTBOX_RECONNECT_MAX_MS", OPT_INT, OFF(reconnect_max_ms), 1, 3600000, "MS",
    "10000", "longest reconnect delay"},

   SECTION("Groups"),
   {"partitions", "OUTBOX_PARTITIONS", OPT_INT, OFF(partitions), 1, 4096, "N", "32",
    "partitions of the entities; the same for every member of a group"},
   {"lease-ttl-ms", "OUTBOX_LEASE_TTL_MS", OPT_INT, OFF(lease_ttl_ms), 500, 3600000, "MS", "10000",
    "a partition lease expires this long after its last renewal"},
   {"lease-renew-ms", "OUTBOX_LEASE_RENEW_MS", OPT_INT, OFF(lease_renew_ms), 50, 3600000, "MS",
    "2000", "how often the leases are renewed"},
   {"lease-margin-ms", "OUTBOX_LEASE_MARGIN_MS", OPT_INT, OFF(lease_margin_ms), 0, 3600000, "MS",
    "2000", "stop publishing a partition this long before its lease could expire"},
   {"lease-collection", "OUTBOX_LEASE_COLLECTION", OPT_NAME, OFF(lease_collection),
    RELAY_NAME_COLLECTION, 0, "NAME", "the state collection",
    "collection for the partition leases and member documents"},

   SECTION("Archive"),
   {"archive-collection", "OUTBOX_ARCHIVE_COLLECTION", OPT_NAME, OFF(archive_collection),
    RELAY_NAME_COLLECTION, 0, "NAME", "off",
    "keep published events in collection NAME before clearing them (replayable)"},
   {"archive-ttl", "OUTBOX_ARCHIVE_TTL", OPT_STRING, OFF(archive_ttl), 1, 0, "DURATION", "none",
    "remove archived events this long after publishing (30d, 1.5d, 90m, 3600s)"},

   SECTION("Operations"),
   {"pending-scan-interval-ms", "OUTBOX_PENDING_SCAN_INTERVAL_MS", OPT_INT,
    OFF(pending_scan_interval_ms), 0, 3600000, "MS", "30000",
    "how often stored pending events and dead letters are counted (0: never)"},
   {"metrics-listen", "OUTBOX_METRICS_LISTEN", OPT_LISTEN, OFF(metrics_listen), 0, 0, "HOST:PORT",
    "127.0.0.1:9464", "address for /metrics and /healthz; 'off' disables"},
   {"log-level", "OUTBOX_LOG_LEVEL", OPT_LEVEL, OFF(log_level), 0, 0, "LEVEL", "info",
    "error, warning, info, debug or trace"},
   {"log-format", "OUTBOX_LOG_FORMAT", OPT_FORMAT, OFF(log_format), 0, 0, "FORMAT", "text",
    "text or json (one object per line)"},
   {"log-file", "OUTBOX_LOG_FILE", OPT_STRING, OFF(log_file), 0, 0, "FILE", "stderr",
    "append logs to FILE; reopened on SIGHUP"},
};

const size_t relay_n_opts = sizeof relay_opts / sizeof relay_opts[0];

const relay_opt_t *
_relay_opt_find(const char *name, size_t len)
{
   if (len == strlen("collections") && !strncmp(name, "collections", len)) {
      len--; /* plural alias: {"collections": [...]} reads naturally in a file */
   }
   for (size_t i = 0; i < relay_n_opts; i++) {
      const char *n = relay_opts[i].name;
      if (n && strlen(n) == len && !strncmp(n, name, len)) {
         return &relay_opts[i];
      }
   }
   return NULL;
}

bool
relay_config_is_option(const char *name, size_t len, bool *takes_value)
{
   const relay_opt_t *opt = _relay_opt_find(name, len);
   bool config = len == strlen("config") && !strncmp(name, "config", len);
   *takes_value = config || (opt && opt->type != OPT_BOOL);
   return config || opt;
}

void
relay_config_init_defaults(relay_config_t *cfg)
{
   *cfg = (relay_config_t){
      .topic_template = bson_strdup("outbox/{collection}/{id}"),
      .source_template = bson_strdup("/{db}/{collection}"),
      .qos = 1,
      .mqtt_version = 5,
      .name = bson_strdup("outbox-relay"),
      .payload_mode = RELAY_PAYLOAD_STRUCTURED,
      .user_properties = RELAY_PROP_ALL,
      .state_collection = bson_strdup("outbox_relay_state"),
      .version_field = bson_strdup("version"),
      .event_seq_field = bson_strdup("eventSeq"),
      .events_field = bson_strdup("events"),
      .dead_letters_field = bson_strdup("deadLetters"),
      .requeues_field = bson_strdup("requeues"),
      .inflight_window = 256,
      .max_buffered_events = 10000,
      .max_buffered_bytes = 32 * 1024 * 1024,
      .clear_batch_size = 500,
      .clear_interval_ms = 20,
      .checkpoint_interval_ms = 1000,
      .shutdown_timeout_ms = 10000,
      .max_message_bytes = 268435455,
      .publish_timeout_ms = 30000,
      .reconnect_min_ms = 100,
      .reconnect_max_ms = 10000,
      .pending_scan_interval_ms = 30000,
      .partitions = 32,
      .lease_ttl_ms = 10000,
      .lease_renew_ms = 2000,
      .lease_margin_ms = 2000,
      .mqtt_tls_insecure = false,
      /* The relay re-sends whatever was in flight when a connection drops; a kept session
       * only makes paho resend it too (a duplicate), and paho 1.3.12 can read a freed topic
       * when the connection drops again during that resend (seen under ASan). */
      .mqtt_clean_start = true,
      .mqtt_keepalive_s = 30,
      .metrics_listen = bson_strdup("127.0.0.1:9464"),
      .log_level = RELAY_LOG_INFO,
      .log_format = RELAY_LOG_TEXT,
   };
   /* client_id stays NULL here: relay_config_load() defaults it to the final name. */
}

void
relay_config_destroy(relay_config_t *cfg)
{
   if (!cfg) {
      return;
   }
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      if (!opt->name || opt->type == OPT_LIST) {
         continue;
      }
      bool is_string = opt->type != OPT_INT && opt->type != OPT_SIZE && opt->type != OPT_BOOL &&
                       opt->type != OPT_QOS && opt->type != OPT_MQTT_VERSION &&
                       opt->type != OPT_LEVEL && opt->type != OPT_FORMAT &&
                       opt->type != OPT_PAYLOAD && opt->type != OPT_PROPS;
      if (is_string) {
         bson_free(*(char **)((char *)cfg + opt->offset));
      }
   }
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      if (opt->name && opt->type == OPT_LIST) {
         for (size_t j = 0; j < *RELAY_OPT_COUNT(cfg, opt); j++) {
            bson_free((*RELAY_OPT_ITEMS(cfg, opt))[j]);
         }
         bson_free(*RELAY_OPT_ITEMS(cfg, opt));
      }
   }
   for (size_t i = 0; i < cfg->n_watch; i++) {
      bson_free(cfg->watch[i]);
   }
   bson_free(cfg->watch);
   for (size_t i = 0; i < cfg->n_replaced_collections; i++) {
      bson_free(cfg->replaced_collections[i]);
   }
   bson_free(cfg->replaced_collections);
   bson_free(cfg->config_file);
   memset(cfg, 0, sizeof *cfg);
}
