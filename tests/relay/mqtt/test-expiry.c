/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Message Expiry Interval of an event (relay/mqtt/expiry.c): pure, made-up clocks.
 */
#include <criterion/criterion.h>

#include "mqtt/expiry.h"

Test(expiry, interval_from_expires_at_or_the_option)
{
   relay_config_t cfg = {.mqtt_version = 5, .message_expiry_s = 90};
   relay_event_t ev = {0};
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 1000), 90);
   ev.has_expires = true;
   ev.expires_ms = 61000;
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 1000), 60);
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 1001), 60); /* rounded up, never shorter */
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 60999), 1);
   cr_assert(!relay_expiry_passed(&ev, 60999));
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 61000), 0);
   cr_assert(relay_expiry_passed(&ev, 61000));
   cfg.mqtt_version = 4;
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 1000), 0);
}
