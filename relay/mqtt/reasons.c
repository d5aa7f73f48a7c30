/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * MQTT reason codes in words, for the log lines that explain a refused connect or a broker's
 * DISCONNECT (callbacks.c), so an operator does not have to look codes up. Pure tables: safe from
 * any thread.
 */
#include "mqtt/mqtt.h"

#include <stddef.h>

const char *
relay_mqtt_connack_text(int mqtt_version, int code, int reason)
{
   /* MQTT 5 CONNACK reason codes (paho 1.3.12 reports them in code, with reason 0). */
   static const struct {
      int rc;
      const char *text;
   } v5[] = {{0x80, "unspecified error"},
             {0x81, "malformed packet"},
             {0x82, "protocol error"},
             {0x83, "implementation specific error"},
             {0x84, "unsupported protocol version"},
             {0x85, "client identifier not valid"},
             {0x86, "bad user name or password"},
             {0x87, "not authorized"},
             {0x88, "server unavailable"},
             {0x89, "server busy"},
             {0x8A, "banned"},
             {0x8C, "bad authentication method"},
             {0x95, "packet too large"},
             {0x97, "quota exceeded"},
             {0x99, "payload format invalid"},
             {0x9A, "retain not supported"},
             {0x9B, "QoS not supported"},
             {0x9C, "use another server"},
             {0x9D, "server moved"},
             {0x9F, "connection rate exceeded"}};
   /* MQTT 3.1.1 CONNACK return codes. */
   static const char *const v3[] = {NULL,
                                    "unacceptable protocol version",
                                    "identifier rejected",
                                    "server unavailable",
                                    "bad user name or password",
                                    "not authorized"};

   if (mqtt_version == 5) {
      int rc = reason >= 0x80 ? reason : code;
      for (size_t i = 0; i < sizeof v5 / sizeof v5[0]; i++) {
         if (v5[i].rc == rc) {
            return v5[i].text;
         }
      }
   } else if (code >= 1 && code <= 5) {
      return v3[code];
   }
   return NULL;
}

const char *
relay_mqtt_disconnect_text(int reason)
{
   /* MQTT 5 3.14.2.1: the DISCONNECT reason codes a server may send. */
   static const struct {
      int rc;
      const char *text;
   } codes[] = {{0x00, "normal disconnection"},
                {0x80, "unspecified error"},
                {0x81, "malformed packet"},
                {0x82, "protocol error"},
                {0x83, "implementation specific error"},
                {0x87, "not authorized"},
                {0x89, "server busy"},
                {0x8B, "server shutting down"},
                {0x8D, "keep alive timeout"},
                {0x8E, "session taken over"},
                {0x8F, "topic filter invalid"},
                {0x90, "topic name invalid"},
                {0x93, "receive maximum exceeded"},
                {0x94, "topic alias invalid"},
                {0x95, "packet too large"},
                {0x96, "message rate too high"},
                {0x97, "quota exceeded"},
                {0x98, "administrative action"},
                {0x99, "payload format invalid"},
                {0x9A, "retain not supported"},
                {0x9B, "QoS not supported"},
                {0x9C, "use another server"},
                {0x9D, "server moved"},
                {0x9E, "shared subscriptions not supported"},
                {0x9F, "connection rate exceeded"},
                {0xA0, "maximum connect time"},
                {0xA1, "subscription identifiers not supported"},
                {0xA2, "wildcard subscriptions not supported"}};
   for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
      if (codes[i].rc == reason) {
         return codes[i].text;
      }
   }
   return NULL;
}
