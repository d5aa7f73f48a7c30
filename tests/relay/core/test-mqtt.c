/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: the MQTT side's pure helpers (relay/mqtt/mqtt.h).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "mqtt/mqtt.h"

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
   cr_assert_null(relay_mqtt_connack_text(5, -1, 0));  /* MQTTASYNC_FAILURE: no broker */
   cr_assert_null(relay_mqtt_connack_text(5, 0, 0));
   cr_assert_null(relay_mqtt_connack_text(4, -1, 0));
   cr_assert_null(relay_mqtt_connack_text(4, 135, 0)); /* not a 3.1.1 code */
}
