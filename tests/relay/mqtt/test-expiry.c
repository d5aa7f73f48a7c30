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

/* Found by tests/fuzz: an expiresAt in the year 9999 (or --message-expiry above 68 years) was
 * sent as 2^32 - 1, which paho 1.3.12 writes with signed arithmetic as 255: the broker then
 * dropped the message after four minutes. Intervals stop at 2^31 - 1, which it writes right;
 * an expiresAt at INT64_MAX ms must not overflow either. */
Test(expiry, intervals_stop_at_what_paho_writes)
{
   relay_config_t cfg = {.mqtt_version = 5, .message_expiry_s = INT64_C(4294967295)};
   relay_event_t ev = {0};
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 0), 2147483647u);
   cfg.message_expiry_s = 2147483647;
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 0), 2147483647u);
   ev.has_expires = true;
   ev.expires_ms = INT64_C(253402300799999); /* 9999-12-31T23:59:59.999Z */
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, INT64_C(1796500000000)), 2147483647u);
   ev.expires_ms = INT64_MAX;
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 1000), 2147483647u);
   ev.expires_ms = INT64_C(2147483647000) + 5000;
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 5000), 2147483647u);
   cr_assert_eq(relay_expiry_interval(&cfg, &ev, 5001), 2147483647u); /* rounded up */
}
