/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Configuration from flags and the environment: precedence, syntax, and the exact message
 * of every validation error. (Config files: test-config-file.c.)
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/reload.h"
#include "test-util.h"

static relay_config_t cfg;
static bson_error_t error;

static void
setup(void)
{
   test_clear_env();
   relay_config_init_defaults(&cfg);
}

static void
teardown(void)
{
   relay_config_destroy(&cfg);
}

TestSuite(config, .init = setup, .fini = teardown);

Test(config, defaults)
{
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.mongodb_uri, "mongodb://localhost/");
   cr_assert_str_eq(cfg.database, "app");
   cr_assert_eq(cfg.n_collections, 1);
   cr_assert_str_eq(cfg.collections[0], "c1");
   cr_assert_str_eq(cfg.mqtt_uri, "tcp://localhost:1883");
   cr_assert_str_eq(cfg.topic_template, "outbox/{collection}/{id}");
   cr_assert_str_eq(cfg.source_template, "/{db}/{collection}");
   cr_assert_eq(cfg.qos, 1);
   cr_assert_eq(cfg.mqtt_version, 5);
   cr_assert_str_eq(cfg.name, "outbox-relay");
   cr_assert_str_eq(cfg.client_id, "outbox-relay");
   cr_assert_eq(cfg.payload_mode, RELAY_PAYLOAD_STRUCTURED);
   cr_assert_eq(cfg.user_properties, RELAY_PROP_ALL);
   cr_assert_str_eq(cfg.state_collection, "outbox_relay_state");
   cr_assert_str_eq(cfg.version_field, "version");
   cr_assert_str_eq(cfg.event_seq_field, "eventSeq");
   cr_assert_str_eq(cfg.events_field, "events");
   cr_assert_str_eq(cfg.dead_letters_field, "deadLetters");
   cr_assert_eq(cfg.inflight_window, 256);
   cr_assert_eq(cfg.max_buffered_events, 10000);
   cr_assert_eq(cfg.max_buffered_bytes, 32 * 1024 * 1024);
   cr_assert_eq(cfg.clear_batch_size, 500);
   cr_assert_eq(cfg.clear_interval_ms, 20);
   cr_assert_eq(cfg.checkpoint_interval_ms, 1000);
   cr_assert_eq(cfg.shutdown_timeout_ms, 10000);
   cr_assert_eq(cfg.max_message_bytes, 268435455);
   cr_assert_eq(cfg.publish_timeout_ms, 30000);
   cr_assert_eq(cfg.reconnect_min_ms, 100);
   cr_assert_eq(cfg.reconnect_max_ms, 10000);
   cr_assert_eq(cfg.mqtt_tls_insecure, false);
   cr_assert_eq(cfg.mqtt_clean_start, true);
   cr_assert_eq(cfg.mqtt_keepalive_s, 30);
   cr_assert_str_eq(cfg.metrics_listen, "127.0.0.1:9464");
   cr_assert_eq(cfg.log_level, RELAY_LOG_INFO);
   cr_assert_eq(cfg.log_format, RELAY_LOG_TEXT);
   cr_assert_null(cfg.log_file);
   cr_assert_null(cfg.mqtt_password);
   cr_assert_null(cfg.config_file);
}

Test(config, every_option_as_flag)
{
   char *ca = test_write_temp("ca");
   const char *args[] = {TEST_REQUIRED,
                         "--state-collection",
                         "st",
                         "--version-field",
                         "v",
                         "--event-seq-field",
                         "s",
                         "--events-field",
                         "e",
                         "--dead-letters-field",
                         "d",
                         "--mqtt-version",
                         "3.1.1",
                         "--qos",
                         "2",
                         "--topic",
                         "t/{db}/{type}/{id}",
                         "--source",
                         "urn:{collection}",
                         "--name",
                         "r1",
                         "--client-id",
                         "cid",
                         "--mqtt-username",
                         "u",
                         "--mqtt-ca-file",
                         ca,
                         "--mqtt-cert-file",
                         ca,
                         "--mqtt-key-file",
                         ca,
                         "--mqtt-tls-insecure",
                         "--mqtt-clean-start",
                         "--mqtt-keepalive=5",
                         "--max-message-bytes",
                         "1000",
                         "--inflight-window",
                         "8",
                         "--max-buffered-events",
                         "9",
                         "--max-buffered-bytes",
                         "2000000",
                         "--clear-batch-size",
                         "10",
                         "--clear-interval-ms",
                         "0",
                         "--checkpoint-interval-ms",
                         "12",
                         "--shutdown-timeout-ms",
                         "13",
                         "--publish-timeout-ms",
                         "1500",
                         "--reconnect-min-ms",
                         "14",
                         "--reconnect-max-ms",
                         "15",
                         "--metrics-listen",
                         "off",
                         "--log-level",
                         "DEBUG",
                         "--log-format",
                         "json",
                         "--log-file",
                         "/tmp/x.log",
                         "--mqtt-uri",
                         "ssl://b:8883",
                         NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.state_collection, "st");
   cr_assert_str_eq(cfg.version_field, "v");
   cr_assert_str_eq(cfg.event_seq_field, "s");
   cr_assert_str_eq(cfg.events_field, "e");
   cr_assert_str_eq(cfg.dead_letters_field, "d");
   cr_assert_eq(cfg.mqtt_version, 4);
   cr_assert_eq(cfg.qos, 2);
   cr_assert_str_eq(cfg.topic_template, "t/{db}/{type}/{id}");
   cr_assert_str_eq(cfg.source_template, "urn:{collection}");
   cr_assert_str_eq(cfg.name, "r1");
   cr_assert_str_eq(cfg.client_id, "cid");
   cr_assert_str_eq(cfg.mqtt_username, "u");
   cr_assert_str_eq(cfg.mqtt_ca_file, ca);
   cr_assert_str_eq(cfg.mqtt_key_file, ca);
   cr_assert_eq(cfg.mqtt_tls_insecure, true);
   cr_assert_eq(cfg.mqtt_clean_start, true);
   cr_assert_eq(cfg.mqtt_keepalive_s, 5);
   cr_assert_eq(cfg.max_message_bytes, 1000);
   cr_assert_eq(cfg.inflight_window, 8);
   cr_assert_eq(cfg.max_buffered_events, 9);
   cr_assert_eq(cfg.max_buffered_bytes, 2000000);
   cr_assert_eq(cfg.clear_batch_size, 10);
   cr_assert_eq(cfg.clear_interval_ms, 0);
   cr_assert_eq(cfg.checkpoint_interval_ms, 12);
   cr_assert_eq(cfg.shutdown_timeout_ms, 13);
   cr_assert_eq(cfg.publish_timeout_ms, 1500);
   cr_assert_eq(cfg.reconnect_min_ms, 14);
   cr_assert_eq(cfg.reconnect_max_ms, 15);
   cr_assert_null(cfg.metrics_listen);
   cr_assert_eq(cfg.log_level, RELAY_LOG_DEBUG);
   cr_assert_eq(cfg.log_format, RELAY_LOG_JSON);
   cr_assert_str_eq(cfg.log_file, "/tmp/x.log");
   cr_assert_str_eq(cfg.mqtt_uri, "ssl://b:8883");
   unlink(ca);
   bson_free(ca);
}

Test(config, env_over_file_flags_over_env)
{
   char *path = test_write_temp("{\"qos\": 0, \"name\": \"from-file\", \"log-level\": \"trace\","
                                " \"client-id\": \"file-id\"}");
   setenv("OUTBOX_QOS", "2", 1);
   setenv("OUTBOX_NAME", "from-env", 1);
   const char *args[] = {TEST_REQUIRED, "--config", path, "--qos", "1", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.qos, 1);                     /* flag > env > file */
   cr_assert_str_eq(cfg.name, "from-env");       /* env > file */
   cr_assert_eq(cfg.log_level, RELAY_LOG_TRACE); /* file > default */
   cr_assert_str_eq(cfg.client_id, "file-id");
   cr_assert_str_eq(cfg.config_file, path);
   unlink(path);
   bson_free(path);
}

/* --user-properties from a flag, the environment and the file, and how --check-config
 * shows it (always in the same order, whatever order it was given in). */
Test(config, user_properties)
{
   static const struct {
      const char *value;
      unsigned bits;
      const char *shown;
   } cases[] = {
      {"all", RELAY_PROP_ALL, "all"},
      {"none", 0, "none"},
      {"seq,event-id", RELAY_PROP_SEQ | RELAY_PROP_EVENT_ID, "event-id,seq"},
      {"entity-id", RELAY_PROP_ENTITY_ID, "entity-id"},
      {"event-type,seq,entity-id,event-id", RELAY_PROP_ALL, "all"},
   };
   for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
      const char *args[] = {TEST_REQUIRED, "--user-properties", cases[i].value, NULL};
      cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
      cr_assert_eq(cfg.user_properties, cases[i].bits, "%s", cases[i].value);
      bson_string_t *dump = bson_string_new(NULL);
      relay_config_dump(&cfg, dump);
      char *want = bson_strdup_printf("%-23s = %s\n", "user-properties", cases[i].shown);
      cr_assert(strstr(dump->str, want), "%s: %s", cases[i].value, dump->str);
      bson_free(want);
      bson_string_free(dump, true);
   }
   setenv("OUTBOX_USER_PROPERTIES", "none", 1);
   const char *env_args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, env_args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.user_properties, 0);
   unsetenv("OUTBOX_USER_PROPERTIES");
   char *path = test_write_temp("{\"user-properties\": \"event-type\"}");
   const char *file_args[] = {TEST_REQUIRED, "--config", path, NULL};
   cr_assert_eq(test_load(&cfg, &error, file_args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.user_properties, RELAY_PROP_EVENT_TYPE);
   unlink(path);
   bson_free(path);
}

Test(config, env_sets_every_required_option)
{
   setenv("OUTBOX_MONGODB_URI", "mongodb://h1,h2/?replicaSet=rs", 1);
   setenv("OUTBOX_DATABASE", "db", 1);
   setenv("OUTBOX_COLLECTIONS", "a, b ,c", 1);
   setenv("OUTBOX_MQTT_URI", "mqtt://broker", 1);
   setenv("OUTBOX_MQTT_TLS_INSECURE", "no", 1);
   setenv("OUTBOX_NAME", "r7", 1);
   const char *args[] = {NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_collections, 3);
   cr_assert_str_eq(cfg.collections[0], "a");
   cr_assert_str_eq(cfg.collections[1], "b");
   cr_assert_str_eq(cfg.collections[2], "c");
   cr_assert_str_eq(cfg.mqtt_uri, "mqtt://broker");
   cr_assert_str_eq(cfg.client_id, "r7"); /* defaults to the final name */
}

Test(config, flag_collections_replace_env_and_add_up)
{
   setenv("OUTBOX_COLLECTIONS", "x,y", 1);
   const char *args[] = {TEST_REQUIRED, "--collection", "c2,c3", "--collections=c4", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_collections, 4);
   cr_assert_str_eq(cfg.collections[0], "c1");
   cr_assert_str_eq(cfg.collections[3], "c4");
}

Test(config, empty_env_counts_as_unset)
{
   setenv("OUTBOX_QOS", "", 1);
   setenv("OUTBOX_NAME", "", 1);
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.qos, 1);
   cr_assert_str_eq(cfg.name, "outbox-relay");
}

Test(config, config_file_from_env)
{
   char *path = test_write_temp("{\"qos\": 2}");
   setenv("OUTBOX_CONFIG", path, 1);
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.qos, 2);
   unlink(path);
   bson_free(path);
}

Test(config, password_file)
{
   char *path = test_write_temp("s3cret\n");
   setenv("OUTBOX_MQTT_PASSWORD_FILE", path, 1);
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.mqtt_password, "s3cret");
   cr_assert_str_eq(cfg.mqtt_password_file, path);
   unlink(path);
   bson_free(path);
}

Test(config, password_file_flag_beats_env_password)
{
   char *path = test_write_temp("from-file\r\n");
   setenv("OUTBOX_MQTT_PASSWORD", "from-env", 1);
   const char *args[] = {TEST_REQUIRED, "--mqtt-password-file", path, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.mqtt_password, "from-file");
   unlink(path);
   bson_free(path);
}

Test(config, env_password_beats_file_password_file)
{
   char *secret = test_write_temp("from-secret-file");
   char *path = bson_strdup_printf("{\"mqtt-password-file\": \"%s\"}", secret);
   char *conf = test_write_temp(path);
   setenv("OUTBOX_MQTT_PASSWORD", "from-env", 1);
   const char *args[] = {TEST_REQUIRED, "-c", conf, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_str_eq(cfg.mqtt_password, "from-env");
   cr_assert_null(cfg.mqtt_password_file); /* the dump must not name a file not used */
   unlink(secret);
   unlink(conf);
   bson_free(secret);
   bson_free(conf);
   bson_free(path);
}

Test(config, actions)
{
   const char *help[] = {"--qos", "1", "--help", NULL};
   const char *h[] = {"-h", NULL};
   const char *version[] = {"--version", NULL};
   const char *v[] = {"-V", NULL};
   const char *check[] = {TEST_REQUIRED, "--check-config", NULL};
   const char *check_bad[] = {"--check-config", NULL};
   cr_assert_eq(test_load(&cfg, &error, help), RELAY_CONFIG_HELP);
   cr_assert_eq(test_load(&cfg, &error, h), RELAY_CONFIG_HELP);
   cr_assert_eq(test_load(&cfg, &error, version), RELAY_CONFIG_VERSION);
   cr_assert_eq(test_load(&cfg, &error, v), RELAY_CONFIG_VERSION);
   cr_assert_eq(test_load(&cfg, &error, check), RELAY_CONFIG_CHECK);
   cr_assert_eq(test_load(&cfg, &error, check_bad), RELAY_CONFIG_INVALID);
}

Test(config, load_twice_frees_and_resets)
{
   const char *first[] = {TEST_REQUIRED, "--qos", "2", "--collection", "c9", NULL};
   const char *second[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, first), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(test_load(&cfg, &error, second), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.qos, 1);
   cr_assert_eq(cfg.n_collections, 1);
}

/* One bad value each, after valid required options; the message must match exactly. */
typedef struct {
   const char *args[4];
   relay_config_action_t action;
   const char *message;
} bad_case_t;

static const bad_case_t config_bad_values_cases[] = {
   {{"--qos", "7"}, RELAY_CONFIG_USAGE_ERROR, "--qos: expected 0, 1 or 2, got '7'"},
   {{"--qos", "1x"}, RELAY_CONFIG_USAGE_ERROR, "--qos: expected 0, 1 or 2, got '1x'"},
   {{"--publish-timeout-ms", "99"},
    RELAY_CONFIG_USAGE_ERROR,
    "--publish-timeout-ms: expected an integer from 100 to 3600000, got '99'"},
   {{"--inflight-window", "0"},
    RELAY_CONFIG_USAGE_ERROR,
    "--inflight-window: expected an integer from 1 to 65535, got '0'"},
   {{"--inflight-window=12x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--inflight-window: expected an integer from 1 to 65535, got '12x'"},
   {{"--max-buffered-bytes", "1048575"},
    RELAY_CONFIG_USAGE_ERROR,
    "--max-buffered-bytes: expected an integer from 1048576 to 4294967296, got '1048575'"},
   {{"--max-message-bytes", "-1"},
    RELAY_CONFIG_USAGE_ERROR,
    "--max-message-bytes: expected an integer from 64 to 268435455, got '-1'"},
   {{"--mqtt-keepalive", ""},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-keepalive: expected an integer from 1 to 65535, got ''"},
   {{"--mqtt-version", "3"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-version: expected 5 (MQTT 5) or 4 (MQTT 3.1.1), got '3'"},
   {{"--log-level", "loud"},
    RELAY_CONFIG_USAGE_ERROR,
    "--log-level: expected error, warning, info, debug or trace, got 'loud'"},
   {{"--log-format", "xml"},
    RELAY_CONFIG_USAGE_ERROR,
    "--log-format: expected text or json, got 'xml'"},
   {{"--payload-mode", "raw"},
    RELAY_CONFIG_USAGE_ERROR,
    "--payload-mode: expected structured or binary, got 'raw'"},
   {{"--user-properties", "some"},
    RELAY_CONFIG_USAGE_ERROR,
    "--user-properties: expected all, none or a comma-separated list of event-id, event-type, "
    "entity-id, seq; got 'some'"},
   {{"--user-properties", "seq,,event-id"},
    RELAY_CONFIG_USAGE_ERROR,
    "--user-properties: expected all, none or a comma-separated list of event-id, event-type, "
    "entity-id, seq; got ''"},
   {{"--user-properties", "seq,all"},
    RELAY_CONFIG_USAGE_ERROR,
    "--user-properties: expected all, none or a comma-separated list of event-id, event-type, "
    "entity-id, seq; got 'all'"},
   {{"--mqtt-tls-insecure=maybe"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-tls-insecure: expected true or false, got 'maybe'"},
   {{"--topic", "a/+/{id}"},
    RELAY_CONFIG_USAGE_ERROR,
    "--topic: + and # are MQTT wildcards and cannot be published to, got 'a/+/{id}'"},
   {{"--topic", "a/{foo}"},
    RELAY_CONFIG_USAGE_ERROR,
    "--topic: unknown placeholder '{foo}' (known: {db}, {collection}, {id}, {type}, {partition})"},
   {{"--topic", "a/{id"},
    RELAY_CONFIG_USAGE_ERROR,
    "--topic: unbalanced '{' in 'a/{id' (placeholders: {db}, {collection}, {id}, {type}, "
    "{partition})"},
   {{"--source", "/{ID}"},
    RELAY_CONFIG_USAGE_ERROR,
    "--source: unknown placeholder '{ID}' (known: {db}, {collection}, {id}, {type}, {partition})"},
   {{"--database", "a.b"},
    RELAY_CONFIG_USAGE_ERROR,
    "--database: a database name cannot contain any of / \\ . space \" $, got 'a.b'"},
   {{"--collection", "system.views"},
    RELAY_CONFIG_USAGE_ERROR,
    "--collection: system collections cannot be watched, got 'system.views'"},
   {{"--collection", "a$b"},
    RELAY_CONFIG_USAGE_ERROR,
    "--collection: a collection name cannot contain $, got 'a$b'"},
   {{"--collection", "c2,c3", "--collection", "c3"},
    RELAY_CONFIG_USAGE_ERROR,
    "--collection: collection 'c3' given twice"},
   {{"--collection", "a,,b"}, RELAY_CONFIG_USAGE_ERROR, "--collection: must not be empty, got ''"},
   {{"--version-field", "$v"},
    RELAY_CONFIG_USAGE_ERROR,
    "--version-field: a field name cannot contain . or start with $, got '$v'"},
   {{"--name", ""}, RELAY_CONFIG_USAGE_ERROR, "--name: must not be empty"},
   {{"--mongodb-uri", "http://x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mongodb-uri: not a valid MongoDB connection string: Invalid URI Schema, expecting "
    "'mongodb://' or 'mongodb+srv://'"},
   {{"--mqtt-uri", "http://u:pw@x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: expected tcp://, ssl://, mqtt://, mqtts://, ws:// or wss:// and a host, got "
    "'http://u:***@x'"},
   {{"--mqtt-uri", "tcp://"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: expected tcp://, ssl://, mqtt://, mqtts://, ws:// or wss:// and a host, got "
    "'tcp://'"},
   /* Credentials in the MQTT URI: paho would take them for part of the host name (issue
    * 14, 6b); refused, naming the options that carry them, never quoting the password. */
   {{"--mqtt-uri", "tcp://user:s3cr3t@broker:1883"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: a user name or password in the MQTT URI is not supported; give them with "
    "--mqtt-username and --mqtt-password-file (or OUTBOX_MQTT_PASSWORD, or \"mqtt-password\" "
    "in the config file), got 'tcp://user:***@broker:1883'"},
   {{"--mqtt-uri", "WSS://user@broker/mqtt"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: a user name or password in the MQTT URI is not supported; give them with "
    "--mqtt-username and --mqtt-password-file (or OUTBOX_MQTT_PASSWORD, or \"mqtt-password\" "
    "in the config file), got 'WSS://user@broker/mqtt'"},
   /* mongoc quotes a password it cannot parse (issue 14, 6a): never shown. */
   {{"--mongodb-uri", "mongodb://u:pa:ss-s3cr3t@h/"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mongodb-uri: not a valid MongoDB connection string: Password \"***\" must not have "
    "unescaped chars. Percent-encode username and password according to RFC 3986"},
   {{"--metrics-listen", "9464"},
    RELAY_CONFIG_USAGE_ERROR,
    "--metrics-listen: expected HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464) or 'off', got "
    "'9464'"},
   {{"--metrics-listen", "h:70000"},
    RELAY_CONFIG_USAGE_ERROR,
    "--metrics-listen: expected HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464) or 'off', got "
    "'h:70000'"},
   {{"--mqtt-ca-file", "/nonexistent/ca.pem"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-ca-file: cannot read '/nonexistent/ca.pem': No such file or directory"},
   {{"--mqtt-password-file", "/nonexistent/pw"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-password-file: cannot read '/nonexistent/pw': No such file or directory"},
   {{"--bogus"}, RELAY_CONFIG_USAGE_ERROR, "unknown option '--bogus' (see --help)"},
   {{"--bogus=1"}, RELAY_CONFIG_USAGE_ERROR, "unknown option '--bogus' (see --help)"},
   {{"--qos"}, RELAY_CONFIG_USAGE_ERROR, "--qos: missing value"},
   {{"--database", "--qos"}, RELAY_CONFIG_USAGE_ERROR, "--database: missing value"},
   {{"-c"}, RELAY_CONFIG_USAGE_ERROR, "-c: missing value"},
   {{"stray"},
    RELAY_CONFIG_USAGE_ERROR,
    "unexpected argument 'stray' (options start with --; see --help)"},
   {{"--mqtt-password", "x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-password is not accepted on the command line (other users can read it with ps): "
    "use OUTBOX_MQTT_PASSWORD, --mqtt-password-file or the config file"},
   {{"--mqtt-ca-file", "/dev/null"},
    RELAY_CONFIG_INVALID,
    "mqtt-ca-file is set but mqtt-uri is not a TLS URI: use ssl://, mqtts:// or wss://"},
   {{"--mqtt-tls-insecure"},
    RELAY_CONFIG_INVALID,
    "mqtt-tls-insecure is set but mqtt-uri is not a TLS URI: use ssl://, mqtts:// or wss://"},
   {{"--mqtt-uri", "ssl://b", "--mqtt-key-file", "/dev/null"},
    RELAY_CONFIG_INVALID,
    "mqtt-key-file is set without mqtt-cert-file"},
   {{"--payload-mode", "binary", "--mqtt-version", "4"},
    RELAY_CONFIG_INVALID,
    "payload-mode binary needs MQTT 5 user properties; set mqtt-version 5 or payload-mode "
    "structured"},
   {{"--reconnect-min-ms", "500", "--reconnect-max-ms", "400"},
    RELAY_CONFIG_INVALID,
    "reconnect-min-ms (500) is greater than reconnect-max-ms (400)"},
   {{"--max-buffered-events", "10", "--inflight-window", "11"},
    RELAY_CONFIG_INVALID,
    "max-buffered-events (10) is less than inflight-window (11)"},
   {{"--events-field", "version"},
    RELAY_CONFIG_INVALID,
    "version-field and events-field are both 'version': they must differ"},
   /* Issue 29, 13: what paho accepted and then got wrong. */
   {{"--mqtt-uri", "tcp://127.0.0.1:99999"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://127.0.0.1:99999' has a port above 65535"},
   {{"--mqtt-uri", "tcp://127.0.0.1:0"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://127.0.0.1:0' has port 0"},
   {{"--mqtt-uri", "tcp://h:1x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://h:1x' has a port that is not a number"},
   {{"--mqtt-uri", "tcp://h:"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://h:' has an empty port"},
   {{"--mqtt-uri", "tcp://[::1"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://[::1' has a '[' without ']'"},
   {{"--mqtt-uri", "tcp://[::1]x"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://[::1]x' has text after the host that is not ':PORT'"},
   {{"--mqtt-uri", "tcp://::1:1883"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: expected tcp://, ssl://, mqtt://, mqtts://, ws:// or wss:// and a host, got "
    "'tcp://::1:1883'"},
   {{"--mqtt-uri", "tcp://fe80::1:1883"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://fe80::1:1883' has an IPv6 address without brackets (write [::1]:1883)"},
   {{"--mqtt-uri", "tcp://host:1883/path"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'tcp://host:1883/path' has a path, query or fragment, which MQTT over TCP has "
    "no use for"},
   {{"--mqtt-uri", "mqtt://host?x=1"},
    RELAY_CONFIG_USAGE_ERROR,
    "--mqtt-uri: 'mqtt://host?x=1' has a path, query or fragment, which MQTT over TCP has no "
    "use for"},
   /* Issue 29, 12: brokers keep '$' topics for themselves and drop a publisher. */
   {{"--topic", "$SYS/{id}"},
    RELAY_CONFIG_INVALID,
    "topic: '$SYS/{id}' starts with '$', which brokers reserve for their own topics ($SYS/...) "
    "and refuse publishes to"},
   /* Issue 29, 13: found by --check-config, not at start (exit 73). */
   {{"--log-file", "/nonexistent-outbox-dir/relay.log"},
    RELAY_CONFIG_INVALID,
    "log-file: '/nonexistent-outbox-dir/relay.log' cannot be created: '/nonexistent-outbox-dir': "
    "No such file or directory"},
   {{"--log-file", "/etc/hostname/relay.log"},
    RELAY_CONFIG_INVALID,
    "log-file: '/etc/hostname/relay.log' cannot be created: '/etc/hostname': not a directory"},
};

TEST_CASE_INDEXES(config, bad_values, config_bad_values_cases)

ParameterizedTest(size_t *idx_p, config, bad_values)
{
   const bad_case_t *c = &config_bad_values_cases[*idx_p];
   const char *args[16] = {TEST_REQUIRED};
   size_t n = 8;
   for (size_t i = 0; i < 4 && c->args[i]; i++) {
      args[n++] = c->args[i];
   }
   args[n] = NULL;
   cr_assert_eq(test_load(&cfg, &error, args), c->action, "%s", error.message);
   cr_assert_str_eq(error.message, c->message);
}

/* Issue 29, 13: MQTT encodes a client id with a 16-bit length; the broker's 23-byte minimum
 * is no limit. */
Test(config, client_id_length)
{
   char *id = bson_malloc(70001);
   memset(id, 'c', 70000);
   id[70000] = '\0';
   const char *args[16] = {TEST_REQUIRED, "--client-id", id, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(
      error.message,
      "client-id is 70000 bytes long: MQTT allows at most 65535 bytes in a client id");
   id[65535] = '\0';
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   /* From --name, the client id gets "-" and 8 hex digits. */
   id[65530] = '\0';
   const char *named[16] = {TEST_REQUIRED, "--name", id, NULL};
   relay_config_action_t action = test_load(&cfg, &error, named);
   if (action != RELAY_CONFIG_RUN) {
      cr_assert_str_eq(error.message, "name is 65530 bytes long (the client id adds 9): MQTT "
                                      "allows at most 65535 bytes in a client id");
   } else {
      cr_assert_fail("a 65530-byte name makes a 65539-byte client id and was accepted");
   }
   id[65526] = '\0';
   cr_assert_eq(test_load(&cfg, &error, named), RELAY_CONFIG_RUN, "%s", error.message);
   bson_free(id);
}

/* Issue 29, 13: addresses paho takes as they are. */
Test(config, mqtt_uri_good_addresses)
{
   const char *good[] = {
      "tcp://[::1]:1883", "tcp://[::1]",      "tcp://h",          "tcp://h:65535",
      "tcp://h:1883/",    "ws://h:8080/mqtt", "wss://h/mqtt?x=1", NULL};
   for (size_t i = 0; good[i]; i++) {
      const char *args[16] = {TEST_REQUIRED, "--mqtt-uri", good[i], NULL};
      cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s: %s", good[i],
                   error.message);
   }
}

Test(config, missing_required_names_each)
{
   const char *args[] = {"--database", "app", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(error.message,
                    "missing required options: --mongodb-uri (OUTBOX_MONGODB_URI), --collection "
                    "(OUTBOX_COLLECTIONS), --mqtt-uri (OUTBOX_MQTT_URI); set each as a flag, in "
                    "the environment or in the config file");
}

Test(config, env_error_names_variable)
{
   setenv("OUTBOX_QOS", "9", 1);
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(error.message, "OUTBOX_QOS: expected 0, 1 or 2, got '9'");
}

Test(config, env_password_and_file_conflict)
{
   setenv("OUTBOX_MQTT_PASSWORD", "a", 1);
   setenv("OUTBOX_MQTT_PASSWORD_FILE", "/dev/null", 1);
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(error.message,
                    "OUTBOX_MQTT_PASSWORD and OUTBOX_MQTT_PASSWORD_FILE are both set: set only "
                    "one");
}

Test(config, mqtt311_password_needs_username)
{
   setenv("OUTBOX_MQTT_PASSWORD", "a", 1);
   const char *args[] = {TEST_REQUIRED, "--mqtt-version", "4", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(error.message, "a password without mqtt-username is not allowed by MQTT "
                                   "3.1.1 (mqtt-version 4); set mqtt-username or use "
                                   "mqtt-version 5");
}

/* What SIGHUP reports as "needs a restart": every changed option by name, URIs compared in
 * full (the dump redacts their passwords, the comparison must not), log options on request. */
Test(config, diff_names_changed_options)
{
   const char *same[] = {TEST_REQUIRED, "--log-level", "debug", NULL};
   const char *changed[] = {"--mongodb-uri",
                            "mongodb://u:other@localhost/",
                            "--database",
                            "app",
                            "--collection",
                            "c1",
                            "--collection",
                            "c2",
                            "--mqtt-uri",
                            "tcp://localhost:1883",
                            "--qos",
                            "2",
                            NULL};
   relay_config_t other;
   bson_string_t *out = bson_string_new(NULL);

   relay_config_init_defaults(&other);
   cr_assert_eq(test_load(&cfg, &error, same), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(test_load(&other, &error, same), RELAY_CONFIG_RUN, "%s", error.message);
   relay_config_diff(&cfg, &other, true, out);
   cr_assert_str_eq(out->str, "");

   cr_assert_eq(test_load(&other, &error, changed), RELAY_CONFIG_RUN, "%s", error.message);
   relay_config_diff(&cfg, &other, false, out);
   cr_assert_str_eq(out->str, "mongodb-uri, collection, qos");
   bson_string_truncate(out, 0);
   relay_config_diff(&cfg, &other, true, out);
   cr_assert_str_eq(out->str, "mongodb-uri, collection, qos, log-level");
   bson_string_free(out, true);
   relay_config_destroy(&other);
}

/* Schemes are case-insensitive; paho's are not: "SSL://" passed --check-config and then
 * failed at start (issue 14, 9). The loaded URI has its scheme in lower case. */
Test(config, mqtt_scheme_any_case)
{
   const char *schemes[][2] = {{"SSL://b:8883", "ssl://b:8883"},
                               {"Mqtts://b:8883", "mqtts://b:8883"},
                               {"TCP://B:1883", "tcp://B:1883"},
                               {"wSs://b/mqtt", "wss://b/mqtt"}};
   for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
      const char *args[] = {TEST_REQUIRED, "--mqtt-uri", schemes[i][0], NULL};
      cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
      cr_assert_str_eq(cfg.mqtt_uri, schemes[i][1]);
   }
   const char *tls[] = {TEST_REQUIRED, "--mqtt-uri", "MQTTS://b", "--mqtt-tls-insecure", NULL};
   cr_assert_eq(test_load(&cfg, &error, tls), RELAY_CONFIG_RUN, "%s", error.message);
}
