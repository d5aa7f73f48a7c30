/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * --max-publish-rate's token bucket (relay/publish/pacer.c), driven with a made-up clock.
 */
#include <criterion/criterion.h>

#include "publish/pacer.h"

/* Events taken when asking every @step_us for @total_us at @rate per second. */
static int
taken(int rate, int64_t step_us, int64_t total_us)
{
   relay_pacer_t p;
   int n = 0;
   relay_pacer_init(&p, rate, 0);
   for (int64_t t = 0; t < total_us; t += step_us) {
      while (relay_pacer_ready(&p, t)) {
         relay_pacer_spend(&p);
         n++;
      }
   }
   return n;
}

Test(pacer, no_limit_is_always_ready)
{
   relay_pacer_t p;
   relay_pacer_init(&p, 0, 0);
   for (int i = 0; i < 1000; i++) {
      cr_assert(relay_pacer_ready(&p, 0));
      relay_pacer_spend(&p);
   }
   cr_assert_eq(relay_pacer_wait_us(&p, 0), 0);
}

Test(pacer, holds_the_rate_whatever_the_loop_period)
{
   /* 30 s at 1000/s asked every 1 ms, 20 ms and 50 ms (the loop's longest wait): within 1%. */
   int64_t steps[] = {1000, 20000, 50000};
   for (size_t i = 0; i < 3; i++) {
      int n = taken(1000, steps[i], 30000000);
      cr_assert(n >= 29700 && n <= 30300, "step %lld us: %d events in 30 s", (long long)steps[i],
                n);
   }
   int n = taken(7, 1000, 10000000);
   cr_assert(n >= 69 && n <= 71, "7/s for 10 s: %d", n);
}

Test(pacer, burst_after_a_pause_is_bounded)
{
   relay_pacer_t p;
   int n = 0;
   relay_pacer_init(&p, 1000, 0);
   /* Ten idle seconds, then everything at once: a twentieth of a second's worth. */
   while (relay_pacer_ready(&p, 10000000)) {
      relay_pacer_spend(&p);
      n++;
   }
   cr_assert_eq(n, 50);
   cr_assert_gt(relay_pacer_wait_us(&p, 10000000), 0);
   cr_assert(relay_pacer_wait_us(&p, 10000000) <= 1001);
   cr_assert(relay_pacer_ready(&p, 10000000 + relay_pacer_wait_us(&p, 10000000)));
}
