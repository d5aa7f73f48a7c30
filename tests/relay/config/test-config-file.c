/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Config files (JSON) and what the configuration shows of itself: --check-config dumps, the
 * start-up log line and URI redaction. No secret may appear in either.
 */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "test-util.h"

static relay_config_t cfg;
static bson_error_t error;
static char *path;

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
   if (path) {
      unlink(path);
      bson_free(path);
   }
}

TestSuite(file, .init = setup, .fini = teardown);
TestSuite(dump, .init = setup, .fini = teardown);

static relay_config_action_t
load_file(const char *json)
{
   path = test_write_temp(json);
   cr_assert_not_null(path);
   const char *args[] = {TEST_REQUIRED, "--config", path, NULL};
   return test_load(&cfg, &error, args);
}

Test(file, every_json_type)
{
   relay_config_action_t a = load_file(
      "{\"collections\": [\"x\", \"y\"], \"qos\": 2, \"mqtt-clean-start\": false,"
      " \"max-message-bytes\": 1024.0, \"mqtt-version\": \"3.1.1\", \"mqtt-username\": \"u\","
      " \"mqtt-password\": \"pw\", \"metrics-listen\": \"\"}");
   cr_assert_eq(a, RELAY_CONFIG_RUN, "%s", error.message);
   /* The flag's --collection c1 replaces the file's list. */
   cr_assert_eq(cfg.n_collections, 1);
   cr_assert_eq(cfg.qos, 2);
   cr_assert_eq(cfg.mqtt_clean_start, false);
   cr_assert_eq(cfg.max_message_bytes, 1024);
   cr_assert_eq(cfg.mqtt_version, 4);
   cr_assert_str_eq(cfg.mqtt_password, "pw");
   cr_assert_null(cfg.metrics_listen);
}

Test(file, collections_from_file)
{
   path = test_write_temp("{\"mongodb-uri\": \"mongodb://h/\", \"database\": \"d\","
                          " \"collection\": [\"x\", \"y\"], \"mqtt-uri\": \"tcp://b\"}");
   const char *args[] = {"-c", path, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   cr_assert_eq(cfg.n_collections, 2);
   cr_assert_str_eq(cfg.collections[1], "y");
}

typedef struct {
   const char *json;
   const char *message; /* after "config file 'PATH': " */
} file_case_t;

static const file_case_t file_errors_cases[] = {
   {"[1, 2]", "expected a JSON object ({...})"},
   {"", "expected a JSON object ({...})"},
   {"{\"foo\": 1, \"qos\": 1, \"bar\": 2}",
    "unknown key \"foo\", \"bar\" (keys are the long option names, e.g. \"mongodb-uri\")"},
   {"{\"config\": \"x\"}",
    "unknown key \"config\" (keys are the long option names, e.g. \"mongodb-uri\")"},
   {"{\"qos\": \"1\"}", "\"qos\": expected a number, got a string"},
   {"{\"qos\": 1.5}", "\"qos\": expected 0, 1 or 2, got '1.5'"},
   /* Doubles outside int64's range were cast to int64 (undefined; found with the fuzz
    * targets). */
   {"{\"qos\": 1e300}", "\"qos\": expected 0, 1 or 2, got '1e300'"},
   {"{\"qos\": -1e19}", "\"qos\": expected 0, 1 or 2, got '-1e19'"},
   /* Numbers are quoted as written, not as libbson's double printed back (issue 14, 9:
    * "got '1.23457e+06'"). */
   {"{\"inflight-window\": 1234567.5}",
    "\"inflight-window\": expected an integer from 1 to 65535, got '1234567.5'"},
   {"{\"inflight-window\" : 1e9 , \"qos\": 1}",
    "\"inflight-window\": expected an integer from 1 to 65535, got '1e9'"},
   {"{\"topic\": \"a/{id}\", \"x\": 1}",
    "unknown key \"x\" (keys are the long option names, e.g. \"mongodb-uri\")"},
   {"{\"name\": \"a,}\\\"[\", \"mqtt-keepalive\": 70000.0}",
    "\"mqtt-keepalive\": expected an integer from 1 to 65535, got '70000.0'"},
   /* A key given twice (which one wins is a guess) and NUL escapes, which cut the C string
    * (issue 14, 9). */
   {"{\"qos\": 1, \"name\": \"n\", \"qos\": 2}",
    "key \"qos\" given more than once (which one should win?)"},
   {"{\"collection\": \"a\", \"collections\": [\"b\"]}",
    "key \"collections\" given more than once (which one should win?)"},
   {"{\"name\": \"relay\\u0000evil\"}",
    "\"name\": a string must not contain a NUL character (\\u0000)"},
   {"{\"collection\": [\"ok\", \"c\\u0000d\"]}",
    "\"collection\": a string must not contain a NUL character (\\u0000)"},
   {"{\"mqtt-password\": \"pw\\u0000tail\"}",
    "\"mqtt-password\": a string must not contain a NUL character (\\u0000)"},
   {"{\"inflight-window\": true}", "\"inflight-window\": expected a number, got a boolean"},
   {"{\"mqtt-tls-insecure\": 1}", "\"mqtt-tls-insecure\": expected true or false, got a number"},
   {"{\"name\": null}", "\"name\": expected a string, got null"},
   {"{\"topic\": {\"a\": 1}}", "\"topic\": expected a string, got an object"},
   {"{\"collection\": [\"a\", 1]}", "\"collection\": expected an array of strings"},
   {"{\"collection\": 3}", "\"collection\": expected a string or an array of strings, got a "
                           "number"},
   {"{\"log-level\": \"verbose\"}",
    "\"log-level\": expected error, warning, info, debug or trace, got 'verbose'"},
   {"{\"mqtt-password\": \"a\", \"mqtt-password-file\": \"/dev/null\"}",
    "give \"mqtt-password\" or \"mqtt-password-file\", not both"},
};

TEST_CASE_INDEXES(file, errors, file_errors_cases)

ParameterizedTest(size_t *idx_p, file, errors)
{
   const file_case_t *c = &file_errors_cases[*idx_p];
   cr_assert_eq(load_file(c->json), RELAY_CONFIG_INVALID, "%s", error.message);
   char *expected = bson_strdup_printf("config file '%s': %s", path, c->message);
   cr_assert_str_eq(error.message, expected);
   bson_free(expected);
}

Test(file, bad_json_names_file)
{
   cr_assert_eq(load_file("{\"qos\": 1,,}"), RELAY_CONFIG_INVALID);
   char *prefix = bson_strdup_printf("config file '%s': ", path);
   cr_assert_eq(strncmp(error.message, prefix, strlen(prefix)), 0, "%s", error.message);
   cr_assert_gt(strlen(error.message), strlen(prefix) + 5);
   bson_free(prefix);
}

Test(file, missing_file)
{
   const char *args[] = {TEST_REQUIRED, "--config=/nonexistent/relay.json", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_INVALID);
   cr_assert_str_eq(error.message,
                    "config file '/nonexistent/relay.json': No such file or directory");
}

/* --- dumps and redaction ----------------------------------------------------------- */

static char *
dump(bool one_line)
{
   bson_string_t *s = bson_string_new(NULL);
   if (one_line) {
      relay_config_dump_line(&cfg, s);
   } else {
      relay_config_dump(&cfg, s);
   }
   return bson_string_free(s, false);
}

Test(dump, secrets_never_shown)
{
   setenv("OUTBOX_MQTT_PASSWORD", "hunter2", 1);
   const char *args[] = {
      TEST_REQUIRED,
      "--mongodb-uri",
      "mongodb://bob:pa55@h1:27017,h2/db?replicaSet=rs&tlsCertificateKeyFilePassword=kpw"
      "&authMechanismProperties=AWS_SESSION_TOKEN:tok",
      "--mqtt-uri",
      "ssl://broker:8883",
      "--mqtt-username",
      "alice",
      NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   for (int line = 0; line < 2; line++) {
      char *d = dump(line);
      cr_assert_null(strstr(d, "hunter2"), "%s", d);
      cr_assert_null(strstr(d, "pa55"), "%s", d);
      cr_assert_null(strstr(d, "kpw"), "%s", d);
      cr_assert_null(strstr(d, "tok"), "%s", d);
      cr_assert_not_null(strstr(d, "alice"), "%s", d);
      cr_assert_not_null(strstr(d, "bob:***@h1:27017,h2"), "%s", d);
      bson_free(d);
   }
   char *d = dump(false);
   cr_assert_not_null(strstr(d, "\nmqtt-password           = ***\n"), "%s", d);
   cr_assert_not_null(strstr(d, "\nmqtt-uri                = ssl://broker:8883\n"), "%s", d);
   cr_assert_not_null(strstr(d, "\nqos                     = 1\n"), "%s", d);
   cr_assert_not_null(strstr(d, "\nconfig                  = (none)\n"), "%s", d);
   bson_free(d);
}

Test(dump, unset_password_shows_unset)
{
   const char *args[] = {TEST_REQUIRED, NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   char *d = dump(false);
   cr_assert_not_null(strstr(d, "\nmqtt-password           = (unset)\n"), "%s", d);
   bson_free(d);
}

Test(dump, line_quotes_and_skips_unset)
{
   const char *args[] = {TEST_REQUIRED, "--topic", "a b/\"{id}\"", NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   char *d = dump(true);
   cr_assert_eq(strncmp(d, "mongodb-uri=mongodb://localhost/ database=app collection=c1 ", 60), 0,
                "%s", d);
   cr_assert_not_null(strstr(d, " topic=\"a b/\\\"{id}\\\"\" "), "%s", d);
   cr_assert_null(strstr(d, "mqtt-password"), "%s", d);
   cr_assert_null(strchr(d, '\n'), "%s", d);
   bson_free(d);
}

typedef struct {
   const char *in;
   const char *out;
} redact_case_t;

static const redact_case_t dump_redact_uri_cases[] = {
   {"mongodb://localhost/", "mongodb://localhost/"},
   {"mongodb://user@h/?authMechanism=MONGODB-X509", "mongodb://user@h/?authMechanism=MONGODB-X509"},
   {"mongodb://u:p@h/", "mongodb://u:***@h/"},
   {"mongodb+srv://u:p%40ss@cluster0.example.net/app?w=majority",
    "mongodb+srv://u:***@cluster0.example.net/app?w=majority"},
   {"mongodb://u:p@ss/w@h1,h2/?replicaSet=x", "mongodb://u:***@h1,h2/?replicaSet=x"},
   {"mongodb://h/?password=x&w=1", "mongodb://h/?password=***&w=1"},
   {"mongodb://h/?sslclientcertificatekeypassword=x",
    "mongodb://h/?sslclientcertificatekeypassword=***"},
   {"tcp://broker:1883", "tcp://broker:1883"},
   {"wss://a:b@broker/mqtt", "wss://a:***@broker/mqtt"},
   {"not a uri", "not a uri"},
};

TEST_CASE_INDEXES(dump, redact_uri, dump_redact_uri_cases)

ParameterizedTest(size_t *idx_p, dump, redact_uri)
{
   const redact_case_t *c = &dump_redact_uri_cases[*idx_p];
   char *r = relay_config_redact_uri(c->in);
   cr_assert_str_eq(r, c->out);
   bson_free(r);
}

Test(dump, redact_null)
{
   cr_assert_null(relay_config_redact_uri(NULL));
}

Test(dump, usage_lists_every_option)
{
   char *buf = NULL;
   size_t len = 0;
   FILE *f = open_memstream(&buf, &len);
   relay_config_usage(f);
   fclose(f);
   const char *must[] = {"--mongodb-uri URI",
                         "OUTBOX_MONGODB_URI",
                         "--collection NAME",
                         "OUTBOX_COLLECTIONS",
                         "--qos N",
                         "default 1",
                         "OUTBOX_MQTT_PASSWORD_FILE",
                         "--check-config",
                         "--version",
                         "OUTBOX_CONFIG",
                         "--log-file FILE",
                         "default 127.0.0.1:9464"};
   for (size_t i = 0; i < sizeof must / sizeof must[0]; i++) {
      cr_assert_not_null(strstr(buf, must[i]), "missing %s", must[i]);
   }
   free(buf);
}

/* A config file or password file that other users can read, holding a password: a warning
 * naming the file and its mode (issue 14, 7); none once it is private, none for a config
 * file without secrets. */
static char *
load_logged(const char *json, const char *pwfile, mode_t mode)
{
   char *log = test_write_temp("");
   bson_error_t log_error;
   cr_assert(relay_log_init(RELAY_LOG_INFO, RELAY_LOG_TEXT, log, &log_error), "%s",
             log_error.message);
   path = test_write_temp(json);
   cr_assert_eq(chmod(path, mode), 0);
   if (pwfile) {
      cr_assert_eq(chmod(pwfile, mode), 0);
   }
   const char *args[] = {TEST_REQUIRED, "--config", path, pwfile ? "--mqtt-password-file" : NULL,
                         pwfile,        NULL};
   cr_assert_eq(test_load(&cfg, &error, args), RELAY_CONFIG_RUN, "%s", error.message);
   relay_log_shutdown();
   char *text = test_read_file(log);
   unlink(log);
   bson_free(log);
   return text;
}

Test(file, readable_secrets_warn)
{
   char *text = load_logged("{\"mqtt-password\": \"pw\"}", NULL, 0644);
   char *want = bson_strdup_printf(
      "config: config file '%s' is readable by other users (mode 0644) and holds a password: "
      "chmod o-r '%s'",
      path, path);
   cr_assert_not_null(strstr(text, want), "%s", text);
   bson_free(want);
   bson_free(text);
}

Test(file, readable_uri_password_warns)
{
   char *text = load_logged("{\"mongodb-uri\": \"mongodb://u:p@h/\"}", NULL, 0604);
   cr_assert_not_null(strstr(text, "(mode 0604)"), "%s", text);
   bson_free(text);
}

Test(file, private_or_secretless_files_do_not_warn)
{
   char *text = load_logged("{\"mqtt-password\": \"pw\"}", NULL, 0640);
   cr_assert_null(strstr(text, "readable"), "%s", text);
   bson_free(text);
   unlink(path);
   bson_free(path);
   text = load_logged("{\"qos\": 1}", NULL, 0644);
   cr_assert_null(strstr(text, "readable"), "%s", text);
   bson_free(text);
}

Test(file, readable_password_file_warns)
{
   char *pw = test_write_temp("secret\n");
   char *text = load_logged("{}", pw, 0644);
   char *want = bson_strdup_printf("--mqtt-password-file: the file '%s' is readable by other "
                                   "users (mode 0644) and holds a password",
                                   pw);
   cr_assert_not_null(strstr(text, want), "%s", text);
   bson_free(want);
   bson_free(text);
   unlink(pw);
   bson_free(pw);
}
