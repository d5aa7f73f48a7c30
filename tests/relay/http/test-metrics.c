/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Metrics: values, the Prometheus text format and the health summary.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "http/metrics.h"
#include "outbox/contract.h"

static char *
render(const relay_metrics_t *m)
{
   bson_string_t *s = bson_string_new(NULL);
   relay_metrics_render(m, s);
   return bson_string_free(s, false);
}

static void
assert_contains(const char *text, const char *needle)
{
   cr_assert_not_null(strstr(text, needle), "missing '%s' in:\n%s", needle, text);
}

Test(metrics, starts_at_zero_with_help_and_type)
{
   relay_metrics_t *m = relay_metrics_new();
   char *text = render(m);
   assert_contains(text, "# HELP outbox_relay_events_published_total ");
   assert_contains(text, "\n# TYPE outbox_relay_events_published_total counter\n"
                         "outbox_relay_events_published_total 0\n");
   assert_contains(text, "\n# TYPE outbox_relay_events_cleared_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_events_dead_lettered_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_publish_failures_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_mqtt_reconnects_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_mongodb_reconnects_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_resumes_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_sweeps_total counter\n");
   assert_contains(text, "\n# TYPE outbox_relay_inflight_messages gauge\n"
                         "outbox_relay_inflight_messages 0\n");
   assert_contains(text, "\n# TYPE outbox_relay_buffered_events gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_buffered_bytes gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_entities gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_oldest_pending_event_age_seconds gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_change_stream_lag_seconds gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_mqtt_connected gauge\n");
   assert_contains(text, "\n# TYPE outbox_relay_mongodb_connected gauge\n");
   bson_free(text);
   relay_metrics_destroy(m);
}

/* Every line is a comment or "name[{labels}] value"; every sample's metric has exactly one
 * HELP and one TYPE line before it. */
Test(metrics, exposition_format_is_well_formed)
{
   relay_metrics_t *m = relay_metrics_new();
   relay_metrics_set(m, RELAY_G_STREAM_LAG_S, 0.25);
   char *text = render(m);
   cr_assert_eq(text[strlen(text) - 1], '\n');
   int samples = 0;
   char last_type[128] = "";
   for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
      *nl = '\0';
      if (!strncmp(line, "# TYPE ", 7)) {
         cr_assert_eq(sscanf(line + 7, "%127s", last_type), 1);
         continue;
      }
      if (!strncmp(line, "# HELP ", 7)) {
         continue;
      }
      cr_assert_neq(line[0], '#', "unexpected comment: %s", line);
      size_t name_len = strcspn(line, "{ ");
      cr_assert_eq(strlen(last_type), name_len, "sample without TYPE: %s", line);
      cr_assert_eq(strncmp(line, last_type, name_len), 0, "sample without TYPE: %s", line);
      const char *space = strrchr(line, ' ');
      cr_assert_not_null(space);
      char *end;
      strtod(space + 1, &end);
      cr_assert_eq(*end, '\0', "bad value in: %s", line);
      samples++;
   }
   /* Plus one sample per rule of the event contract whose outcome is "left out". */
   const outbox_contract_rule_t *rules;
   int left_out = 0;
   for (size_t i = 0, n = outbox_contract_rules(&rules); i < n; i++) {
      left_out += rules[i].outcome == OUTBOX_CONTRACT_LEFT_OUT;
   }
   cr_assert_eq(samples, RELAY_M_COUNTER_COUNT_ + RELAY_G_GAUGE_COUNT_ + 1 /* info */ + left_out);
   bson_free(text);
   relay_metrics_destroy(m);
}

Test(metrics, values_render)
{
   relay_metrics_t *m = relay_metrics_new();
   relay_metrics_add(m, RELAY_M_PUBLISHED, 5);
   relay_metrics_add(m, RELAY_M_PUBLISHED, 7);
   relay_metrics_add(m, RELAY_M_SWEEPS, 1);
   relay_metrics_set(m, RELAY_G_INFLIGHT, 3);
   relay_metrics_set(m, RELAY_G_STREAM_LAG_S, 0.5);
   relay_metrics_set(m, RELAY_G_OLDEST_PENDING_AGE_S, 1234567.125);
   cr_assert_eq(relay_metrics_get(m, RELAY_M_PUBLISHED), 12);
   cr_assert_eq(relay_metrics_get_gauge(m, RELAY_G_INFLIGHT), 3.0);
   char *text = render(m);
   assert_contains(text, "\noutbox_relay_events_published_total 12\n");
   assert_contains(text, "\noutbox_relay_sweeps_total 1\n");
   assert_contains(text, "\noutbox_relay_inflight_messages 3\n");
   assert_contains(text, "\noutbox_relay_change_stream_lag_seconds 0.5\n");
   assert_contains(text, "\noutbox_relay_oldest_pending_event_age_seconds 1234567.125\n");
   bson_free(text);
   relay_metrics_destroy(m);
}

/* Issue 33: headers left out are counted by the contract rule that left them out. */
Test(metrics, headers_left_out_by_rule)
{
   relay_metrics_t *m = relay_metrics_new();
   const outbox_contract_rule_t *reserved =
      outbox_contract_find(OUTBOX_CONTRACT_HEADER, "reserved name");
   const outbox_contract_rule_t *not_doc = outbox_contract_find(OUTBOX_CONTRACT_EVENT, "headers");
   relay_metrics_add_left_out(m, reserved->reason, 2);
   relay_metrics_add_left_out(m, reserved->reason, 1);
   relay_metrics_add_left_out(m, not_doc->reason, 1);
   relay_metrics_add_left_out(m, "a reason of no rule", 5);
   char *text = render(m);
   assert_contains(text,
                   "\noutbox_relay_headers_dropped_by_rule_total{rule=\"reserved name\"} 3\n");
   assert_contains(text, "\noutbox_relay_headers_dropped_by_rule_total{rule=\"headers\"} 1\n");
   assert_contains(text, "\noutbox_relay_headers_dropped_by_rule_total{rule=\"value\"} 0\n");
   bson_free(text);
   relay_metrics_destroy(m);
}

Test(metrics, info_labels_escaped)
{
   relay_metrics_t *m = relay_metrics_new();
   relay_metrics_set_name(m, "a\"b\\c\nd");
   char *text = render(m);
   assert_contains(text, "# TYPE outbox_relay_info gauge\n");
   assert_contains(text, ",name=\"a\\\"b\\\\c\\nd\"} 1\n");
   assert_contains(text, "outbox_relay_info{version=\"");
   bson_free(text);
   relay_metrics_destroy(m);
}

Test(metrics, health)
{
   relay_metrics_t *m = relay_metrics_new();
   const char *reason = NULL;
   cr_assert_not(relay_metrics_healthy(m, &reason));
   cr_assert_str_eq(reason, "MongoDB and MQTT broker not connected");
   relay_metrics_set(m, RELAY_G_MONGODB_CONNECTED, 1);
   cr_assert_not(relay_metrics_healthy(m, &reason));
   cr_assert_str_eq(reason, "MQTT broker not connected");
   relay_metrics_set(m, RELAY_G_MQTT_CONNECTED, 1);
   cr_assert(relay_metrics_healthy(m, &reason));
   cr_assert_null(reason);
   relay_metrics_set(m, RELAY_G_MONGODB_CONNECTED, 0);
   cr_assert_not(relay_metrics_healthy(m, NULL));
   relay_metrics_healthy(m, &reason);
   cr_assert_str_eq(reason, "MongoDB not connected");
   relay_metrics_destroy(m);
}

/* A relay that cannot keep its MQTT connection is not healthy, even while connected
 * (issue 14, 4: /healthz said ok through six reconnects in 33 s). */
Test(metrics, health_fails_while_the_connection_keeps_dropping)
{
   relay_metrics_t *m = relay_metrics_new();
   const char *reason = NULL;
   relay_metrics_set(m, RELAY_G_MONGODB_CONNECTED, 1);
   relay_metrics_set(m, RELAY_G_MQTT_CONNECTED, 1);
   relay_metrics_set(m, RELAY_G_MQTT_SHORT_CONNECTIONS, 2);
   cr_assert(relay_metrics_healthy(m, &reason));
   relay_metrics_set(m, RELAY_G_MQTT_SHORT_CONNECTIONS, 3);
   cr_assert_not(relay_metrics_healthy(m, &reason));
   cr_assert_str_eq(reason, "MQTT connection keeps dropping (lost 3 times in a row within 30 s of "
                            "connecting)");
   relay_metrics_destroy(m);
}

Test(metrics, null_safe)
{
   relay_metrics_add(NULL, RELAY_M_PUBLISHED, 1);
   relay_metrics_set(NULL, RELAY_G_INFLIGHT, 1);
   relay_metrics_set_name(NULL, "x");
   cr_assert_eq(relay_metrics_get(NULL, RELAY_M_PUBLISHED), 0);
   cr_assert_eq(relay_metrics_get_gauge(NULL, RELAY_G_INFLIGHT), 0.0);
   cr_assert_not(relay_metrics_healthy(NULL, NULL));
   relay_metrics_destroy(NULL);
}

static void *
adder(void *arg)
{
   for (int i = 0; i < 100000; i++) {
      relay_metrics_add(arg, RELAY_M_CLEARED, 1);
   }
   return NULL;
}

Test(metrics, concurrent_adds_are_not_lost)
{
   relay_metrics_t *m = relay_metrics_new();
   pthread_t t[4];
   for (int i = 0; i < 4; i++) {
      pthread_create(&t[i], NULL, adder, m);
   }
   for (int i = 0; i < 4; i++) {
      pthread_join(t[i], NULL);
   }
   cr_assert_eq(relay_metrics_get(m, RELAY_M_CLEARED), 400000);
   relay_metrics_destroy(m);
}
