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

uint32_t
relay_expiry_interval(const relay_config_t *cfg, const relay_event_t *ev, int64_t now_ms)
{
   if (cfg->mqtt_version != 5) {
      return 0;
   }
   if (!ev->has_expires) {
      return (uint32_t)cfg->message_expiry_s; /* at most 2^32 - 1: config/expiry.c */
   }
   if (ev->expires_ms <= now_ms) {
      return 0; /* expired: --expired-events publish sends it without an interval */
   }
   int64_t left = (ev->expires_ms - now_ms + 999) / 1000;
   return left > (int64_t)UINT32_MAX ? UINT32_MAX : (uint32_t)left;
}
