/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: the MQTT side's pure helpers (relay/mqtt/mqtt.h).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "mqtt/mqtt.h"
#include "mqtt/tls.h"

/* F7 (chaos wrong_credentials): a broker refusing the credentials was logged as "code 135,
 * reason 0: CONNACK return code"; the log must say why in words. paho 1.3.12 reports an MQTT 5
 * refusal in the failure's code with reason 0. */
Test(connack, mqtt5_refusals_in_words)
{
   cr_assert_str_eq(relay_mqtt_connack_text(5, 135, 0), "not authorized");
   cr_assert_str_eq(relay_mqtt_connack_text(5, 134, 0), "bad user name or password");
   cr_assert_str_eq(relay_mqtt_connack_text(5, -1, 0x87), "not authorized");
   cr_assert_str_eq(relay_mqtt_connack_text(5, 0x8A, 0), "banned");
   cr_assert_str_eq(relay_mqtt_connack_text(5, 0x9F, 0), "connection rate exceeded");
}

Test(connack, mqtt311_refusals_in_words)
{
   cr_assert_str_eq(relay_mqtt_connack_text(4, 5, 0), "not authorized");
   cr_assert_str_eq(relay_mqtt_connack_text(4, 4, 0), "bad user name or password");
   cr_assert_str_eq(relay_mqtt_connack_text(4, 1, 0), "unacceptable protocol version");
}

Test(connack, other_failures_are_not_refusals)
{
   cr_assert_null(relay_mqtt_connack_text(5, -1, 0)); /* MQTTASYNC_FAILURE: no broker */
   cr_assert_null(relay_mqtt_connack_text(5, 0, 0));
   cr_assert_null(relay_mqtt_connack_text(4, -1, 0));
   cr_assert_null(relay_mqtt_connack_text(4, 135, 0)); /* not a 3.1.1 code */
}

/* The size of a PUBLISH packet, checked against what mosquitto counts for max_packet_size
 * (remaining length + 1 + the length bytes). */
/* Issue 29, 14: the broker's DISCONNECT reason in words. */
Test(disconnect, reasons_in_words)
{
   cr_assert_str_eq(relay_mqtt_disconnect_text(0x8E), "session taken over");
   cr_assert_str_eq(relay_mqtt_disconnect_text(0x90), "topic name invalid");
   cr_assert_str_eq(relay_mqtt_disconnect_text(0x95), "packet too large");
   cr_assert_str_eq(relay_mqtt_disconnect_text(0x00), "normal disconnection");
   cr_assert_null(relay_mqtt_disconnect_text(0x84)); /* CONNACK only */
   cr_assert_null(relay_mqtt_disconnect_text(0x8C));
}

Test(packet, size_of_publish)
{
   static const char payload[200000] = {0};
   const char *props[] = {"event-id", "0123", "seq", "7"};
   relay_mqtt_message_t msg = {.topic = "outbox/c/1", .payload = payload, .payload_len = 100};
   /* 3.1.1, QoS 1: 1 + 1 + (2 + 10 + 2 + 100) */
   cr_assert_eq(relay_mqtt_packet_size(4, 1, &msg), 116);
   cr_assert_eq(relay_mqtt_packet_size(4, 0, &msg), 114);
   /* MQTT 5 adds the properties: content type (1+2+16) and two pairs (1+2+8+2+4, 1+2+3+2+1),
    * after their length (1); the remaining length, 160, takes 2 bytes. */
   msg.content_type = "application/json";
   msg.user_props = props;
   msg.n_user_props = 2;
   cr_assert_eq(relay_mqtt_packet_size(5, 1, &msg), 1 + 2 + 2 + 10 + 2 + 1 + 19 + 17 + 9 + 100);
   /* The remaining length grows to 3 bytes past 16383. */
   msg.payload_len = 200000;
   cr_assert_eq(relay_mqtt_packet_size(4, 1, &msg), 1 + 3 + 2 + 10 + 2 + 200000);
}

/* paho 1.3.12 says only "TCP/TLS connect failure"; the reason comes from its protocol trace
 * (issue 14, 5). Lines as paho 1.3.12 writes them against a mosquitto TLS listener. */
Test(tls, reasons_from_paho_trace)
{
   bson_free(relay_tls_take_reason());
   relay_tls_observe("20261123 204440.918 SSL state connect:SSLv3/TLS write client hello:(NONE)");
   cr_assert_null(relay_tls_take_reason());
   relay_tls_observe("20261123 204440.918 SSL alert write:fatal:unknown CA");
   relay_tls_observe("20261123 204440.918 SSL alert write:fatal:certificate expired");
   char *r = relay_tls_take_reason();
   cr_assert_not_null(r);
   cr_assert_eq(strncmp(r, "the relay ended the TLS handshake: unknown CA (", 47), 0, "%s", r);
   bson_free(r);
   relay_tls_observe("20261123 204446.708 SSL alert write:fatal:certificate expired");
   r = relay_tls_take_reason();
   cr_assert_str_eq(r, "the relay ended the TLS handshake: certificate expired (the broker's "
                       "certificate is out of date)");
   bson_free(r);
   relay_tls_observe("20261123 204450.148 X509_check_host for hostname localhost failed, rc 0");
   r = relay_tls_take_reason();
   cr_assert_eq(
      strncmp(r, "the broker's certificate is not valid for the host name 'localhost' ", 68), 0,
      "%s", r);
   bson_free(r);
   relay_tls_observe("SSL alert read:fatal:certificate required");
   r = relay_tls_take_reason();
   cr_assert_not_null(strstr(r, "the broker ended the TLS handshake: certificate required"), "%s",
                      r);
   bson_free(r);
}

Test(tls, uri_schemes)
{
   cr_assert(relay_tls_uri("ssl://b:8883"));
   cr_assert(relay_tls_uri("MQTTS://b"));
   cr_assert(relay_tls_uri("wss://b/mqtt"));
   cr_assert_not(relay_tls_uri("tcp://b"));
   cr_assert_not(relay_tls_uri("ws://b"));
}

/* The in-flight window the relay and outbox-admin replay share (limits.c): the configured
 * one, at most the broker's Receive Maximum when it acknowledges (QoS 1 and 2). */
Test(window, at_most_the_receive_maximum)
{
   cr_assert_eq(relay_mqtt_window(256, 1, 20), 20); /* mosquitto's default */
   cr_assert_eq(relay_mqtt_window(256, 2, 100), 100);
   cr_assert_eq(relay_mqtt_window(8, 1, 100), 8);    /* the configured one is smaller */
   cr_assert_eq(relay_mqtt_window(256, 1, 0), 256);  /* not told (MQTT 3.1.1) */
   cr_assert_eq(relay_mqtt_window(256, 0, 20), 256); /* QoS 0: nothing to acknowledge */
   cr_assert_eq(relay_mqtt_window(0, 1, 0), 1);      /* never an empty window */
}
