/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The logger: line format (text and JSON), escaping, levels, reopening, concurrent writers,
 * and mongoc/paho routing.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <MQTTAsync.h>
#include <mongoc/mongoc.h>

#include "util/log.h"
#include "util/redact.h"
#include "test-util.h"

static char *path;

static void
setup(void)
{
   path = test_write_temp("");
}

static void
teardown(void)
{
   relay_log_shutdown();
   unlink(path);
   bson_free(path);
}

TestSuite(log, .init = setup, .fini = teardown);

static void
init(relay_log_level_t level, relay_log_format_t format)
{
   bson_error_t error;
   cr_assert(relay_log_init(level, format, path, &error), "%s", error.message);
}

/* "2026-11-22T10:00:00.123Z": digits where digits belong, separators where they belong. */
static void
assert_timestamp(const char *s)
{
   const char *pattern = "dddd-dd-ddTdd:dd:dd.dddZ";
   for (size_t i = 0; pattern[i]; i++) {
      if (pattern[i] == 'd') {
         cr_assert(s[i] >= '0' && s[i] <= '9', "bad timestamp at %zu in '%s'", i, s);
      } else {
         cr_assert_eq(s[i], pattern[i], "bad timestamp at %zu in '%s'", i, s);
      }
   }
}

Test(log, text_line)
{
   init(RELAY_LOG_INFO, RELAY_LOG_TEXT);
   relay_log(RELAY_LOG_INFO, "stream", "resumed %d collections", 3);
   relay_log(RELAY_LOG_WARNING, "mqtt", "lost");
   char *text = test_read_file(path);
   assert_timestamp(text);
   cr_assert_eq(strncmp(text + 24, " INFO  stream: resumed 3 collections\n", 37), 0, "%s", text);
   const char *second = strchr(text, '\n') + 1;
   assert_timestamp(second);
   cr_assert_str_eq(second + 24, " WARN  mqtt: lost\n");
   bson_free(text);
}

Test(log, text_escapes_control_characters)
{
   init(RELAY_LOG_INFO, RELAY_LOG_TEXT);
   relay_log(RELAY_LOG_ERROR, "x", "a\nb\r\tc\x01 \xc3\xa9");
   char *text = test_read_file(path);
   cr_assert_str_eq(text + 24, " ERROR x: a\\nb\\r\\tc\\x01 \xc3\xa9\n");
   bson_free(text);
}

Test(log, levels_filter)
{
   init(RELAY_LOG_WARNING, RELAY_LOG_TEXT);
   cr_assert(relay_log_enabled(RELAY_LOG_ERROR));
   cr_assert(relay_log_enabled(RELAY_LOG_WARNING));
   cr_assert_not(relay_log_enabled(RELAY_LOG_INFO));
   relay_log(RELAY_LOG_INFO, "x", "hidden");
   relay_log(RELAY_LOG_DEBUG, "x", "hidden");
   relay_log(RELAY_LOG_ERROR, "x", "shown");
   char *text = test_read_file(path);
   cr_assert_null(strstr(text, "hidden"), "%s", text);
   cr_assert_not_null(strstr(text, "shown"), "%s", text);
   bson_free(text);
}

Test(log, json_line_is_valid_json)
{
   const char *msg = "quote \" backslash \\ newline \n tab \t ctl \x01\x1f del \x7f "
                     "utf8 \xc3\xa9\xe2\x82\xac bad \xff\xc3 end";
   init(RELAY_LOG_TRACE, RELAY_LOG_JSON);
   relay_log(RELAY_LOG_TRACE, "stre\"am", "%s", msg);
   char *text = test_read_file(path);
   size_t len = strlen(text);
   cr_assert_gt(len, 2);
   cr_assert_eq(text[len - 1], '\n');
   cr_assert_null(memchr(text, '\n', len - 1), "one line: %s", text);
   cr_assert_eq(strncmp(text, "{\"time\":\"", 9), 0, "%s", text);
   assert_timestamp(text + 9);

   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)text, (ssize_t)len, &error);
   cr_assert_not_null(doc, "%s: %s", error.message, text);
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, doc, "level"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "trace");
   cr_assert(bson_iter_init_find(&it, doc, "component"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "stre\"am");
   cr_assert(bson_iter_init_find(&it, doc, "msg"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL),
                    "quote \" backslash \\ newline \n tab \t ctl \x01\x1f del \x7f "
                    "utf8 \xc3\xa9\xe2\x82\xac bad \xef\xbf\xbd\xef\xbf\xbd end");
   cr_assert(bson_iter_init_find(&it, doc, "time"));
   cr_assert_eq(strlen(bson_iter_utf8(&it, NULL)), 24);
   cr_assert_not_null(strstr(text, "ctl \\u0001\\u001f del \\u007f"), "%s", text);
   bson_destroy(doc);
   bson_free(text);
}

Test(log, reopen_after_rotation)
{
   init(RELAY_LOG_INFO, RELAY_LOG_TEXT);
   relay_log(RELAY_LOG_INFO, "x", "before");
   char *rotated = bson_strdup_printf("%s.1", path);
   cr_assert_eq(rename(path, rotated), 0);
   relay_log_request_reopen(); /* what the SIGHUP handler does */
   relay_log(RELAY_LOG_INFO, "x", "after");
   char *old_text = test_read_file(rotated);
   char *new_text = test_read_file(path);
   cr_assert_not_null(new_text, "log file not recreated");
   cr_assert_not_null(strstr(old_text, "before"));
   cr_assert_null(strstr(old_text, "after"));
   cr_assert_not_null(strstr(new_text, "after"));
   cr_assert(relay_log_reopen());
   unlink(rotated);
   bson_free(rotated);
   bson_free(old_text);
   bson_free(new_text);
}

Test(log, init_fails_on_unwritable_path)
{
   bson_error_t error;
   cr_assert_not(relay_log_init(RELAY_LOG_INFO, RELAY_LOG_TEXT, "/nonexistent/dir/x.log", &error));
   cr_assert_str_eq(error.message,
                    "cannot open log file '/nonexistent/dir/x.log': No such file or directory");
}

#define THREADS 4
#define LINES 500

static void *
writer(void *arg)
{
   for (int i = 0; i < LINES; i++) {
      relay_log(RELAY_LOG_INFO, "t", "thread %ld line %d padding-padding-padding-padding",
                (long)(intptr_t)arg, i);
   }
   return NULL;
}

Test(log, concurrent_lines_stay_whole)
{
   init(RELAY_LOG_INFO, RELAY_LOG_JSON);
   pthread_t t[THREADS];
   for (long i = 0; i < THREADS; i++) {
      pthread_create(&t[i], NULL, writer, (void *)(intptr_t)i);
   }
   for (int i = 0; i < THREADS; i++) {
      pthread_join(t[i], NULL);
   }
   char *text = test_read_file(path);
   int lines = 0;
   for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
      bson_error_t error;
      bson_t *doc = bson_new_from_json((const uint8_t *)line, nl - line, &error);
      cr_assert_not_null(doc, "line %d torn: %.*s", lines, (int)(nl - line), line);
      bson_destroy(doc);
      lines++;
   }
   cr_assert_eq(lines, THREADS * LINES);
   bson_free(text);
}

Test(log, names_parse_round_trip)
{
   relay_log_level_t level;
   relay_log_format_t format;
   for (int i = RELAY_LOG_ERROR; i <= RELAY_LOG_TRACE; i++) {
      cr_assert(relay_log_level_parse(relay_log_level_name((relay_log_level_t)i), &level));
      cr_assert_eq((int)level, i);
   }
   cr_assert(relay_log_level_parse("WARN", &level));
   cr_assert_eq(level, RELAY_LOG_WARNING);
   cr_assert_not(relay_log_level_parse("verbose", &level));
   cr_assert_not(relay_log_level_parse(NULL, &level));
   cr_assert(relay_log_format_parse("JSON", &format));
   cr_assert_eq(format, RELAY_LOG_JSON);
   cr_assert_str_eq(relay_log_format_name(RELAY_LOG_TEXT), "text");
   cr_assert_not(relay_log_format_parse("xml", &format));
}

Test(log, mongoc_routed)
{
   init(RELAY_LOG_INFO, RELAY_LOG_TEXT);
   relay_log_route_dependencies();
   mongoc_log(MONGOC_LOG_LEVEL_WARNING, "cluster", "server %s down", "h:1");
   mongoc_log(MONGOC_LOG_LEVEL_DEBUG, "cluster", "hidden debug");
   char *text = test_read_file(path);
   cr_assert_str_eq(text + 24, " WARN  mongoc: cluster: server h:1 down\n");
   bson_free(text);
}

Test(log, paho_routed_at_trace)
{
   init(RELAY_LOG_TRACE, RELAY_LOG_TEXT);
   relay_log_route_dependencies();
   /* Creating a client emits paho trace entries at MINIMUM level and above. */
   MQTTAsync client;
   cr_assert_eq(MQTTAsync_create(&client, "tcp://127.0.0.1:1", "trace-test",
                                 MQTTCLIENT_PERSISTENCE_NONE, NULL),
                MQTTASYNC_SUCCESS);
   MQTTAsync_destroy(&client);
   char *text = test_read_file(path);
   cr_assert_not_null(strstr(text, " TRACE paho: "), "%s", text);
   bson_free(text);
}

/* mongoc quotes a password it cannot parse; whatever path its message takes into the log, the
 * password does not (issue 14, 6a). */
Test(log, mongoc_password_never_logged)
{
   init(RELAY_LOG_INFO, RELAY_LOG_TEXT);
   relay_log_route_dependencies();
   mongoc_log(MONGOC_LOG_LEVEL_WARNING, "uri",
              "Error parsing URI: 'Password \"pa:\"ss-s3cr3t\" must not have unescaped chars. "
              "Percent-encode username and password according to RFC 3986'");
   char *text = test_read_file(path);
   cr_assert_null(strstr(text, "s3cr3t"), "%s", text);
   cr_assert_not_null(strstr(text, "Password \"***\" must not have unescaped chars"), "%s", text);
   bson_free(text);
}

/* Registered secrets are cut out of every line, as written and percent-decoded. */
Test(log, registered_secrets_cut_from_every_line)
{
   init(RELAY_LOG_DEBUG, RELAY_LOG_TEXT);
   relay_redact_register_uri(
      "mongodb://bob:s3cr%2Fet@h1,h2/db?tlsCertificateKeyFilePassword=kfpw1234&w=1");
   relay_redact_register("mqtt-pw-9876");
   relay_log(RELAY_LOG_INFO, "test", "a s3cr%%2Fet b s3cr/et c kfpw1234 d mqtt-pw-9876 e bob");
   relay_redact_forget_all();
   relay_log(RELAY_LOG_INFO, "test", "after: kfpw1234");
   char *text = test_read_file(path);
   cr_assert_not_null(strstr(text, "test: a *** b *** c *** d *** e bob\n"), "%s", text);
   cr_assert_not_null(strstr(text, "after: kfpw1234"), "%s", text);
   bson_free(text);
}

Test(log, redact_message_with_uri)
{
   char *m = relay_redact_message("bad: u:p%40ss-word and p@ss-word", "mongodb://u:p%40ss-word@h/");
   cr_assert_str_eq(m, "bad: u:*** and ***");
   bson_free(m);
   cr_assert_null(relay_redact_known("nothing secret here"));
   cr_assert_null(relay_redact_message(NULL, "mongodb://u:p@h/"));
}
