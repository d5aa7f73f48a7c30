/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The topic alias table of --topic-aliases (relay/mqtt/aliases.c): defined once per
 * connection, reused, the least recently used reassigned, forgotten on a new connection.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "mqtt/aliases.h"

Test(aliases, define_then_reuse_then_forget_on_a_new_connection)
{
   relay_aliases_t *a = relay_aliases_new();
   bool known;
   uint16_t x = relay_aliases_use(a, 1, 2, "t/x", &known);
   cr_assert(x >= 1 && x <= 2 && !known, "the first use defines it");
   cr_assert_eq(relay_aliases_use(a, 1, 2, "t/x", &known), x);
   cr_assert(known, "the second use is the alias alone");
   uint16_t y = relay_aliases_use(a, 1, 2, "t/y", &known);
   cr_assert(y != x && !known);
   /* A third topic takes the least recently used: x (y was used after it). */
   cr_assert_eq(relay_aliases_use(a, 1, 2, "t/z", &known), x);
   cr_assert_not(known);
   cr_assert_eq(relay_aliases_use(a, 1, 2, "t/y", &known), y);
   cr_assert(known);
   /* A new connection knows nothing: defined again. */
   relay_aliases_use(a, 2, 2, "t/y", &known);
   cr_assert_not(known);
   relay_aliases_destroy(a);
}

Test(aliases, none_when_the_broker_allows_none)
{
   relay_aliases_t *a = relay_aliases_new();
   bool known = true;
   cr_assert_eq(relay_aliases_use(a, 1, 0, "t/x", &known), 0);
   cr_assert_not(known);
   /* More than the table holds: capped. */
   for (int i = 0; i < 200; i++) {
      char t[16];
      snprintf(t, sizeof t, "t/%d", i);
      uint16_t n = relay_aliases_use(a, 1, 65535, t, &known);
      cr_assert(n >= 1 && n <= RELAY_ALIASES_MAX, "%d", n);
   }
   relay_aliases_destroy(a);
}
