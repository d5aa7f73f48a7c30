/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Message Expiry Interval of an event (expiry.h). Pure: any thread.
 */
#include "mqtt/expiry.h"

bool
relay_expiry_passed(const relay_event_t *ev, int64_t now_ms)
{
   return ev->has_expires && ev->expires_ms <= now_ms;
}

/* The longest interval sent: 2^31 - 1 s (68 years), not MQTT's 2^32 - 1. paho 1.3.12 writes
 * a Four Byte Integer property with signed arithmetic (writeInt4(char **, int) in
 * MQTTPacket.c divides an int by 16777216, 65536 and 256): a value of 2^31 or more comes out
 * garbled, 2^32 - 1 as 255 and 2^32 - 2 as 254 (found by tests/fuzz: an event expiring in
 * the year 9999 was sent with 255 s and dropped by a broker after four minutes). */
#define INTERVAL_MAX_S INT64_C(2147483647)

uint32_t
relay_expiry_interval(const relay_config_t *cfg, const relay_event_t *ev, int64_t now_ms)
{
   int64_t left;

   if (cfg->mqtt_version != 5) {
      return 0;
   }
   if (!ev->has_expires) {
      left = cfg->message_expiry_s; /* at most 2^32 - 1: config/expiry.c */
   } else if (ev->expires_ms <= now_ms) {
      return 0; /* expired: --expired-events publish sends it without an interval */
   } else {
      /* Rounded up; computed without overflow for any expiresAt (up to INT64_MAX ms). */
      int64_t ms = ev->expires_ms - now_ms;
      left = ms / 1000 + (ms % 1000 != 0);
   }
   return (uint32_t)(left > INTERVAL_MAX_S ? INTERVAL_MAX_S : left);
}
