/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Durations (relay/base/duration.c): the one grammar of the relay's and outbox-admin's
 * duration options, exact in milliseconds, strict about everything else.
 */
#include <criterion/criterion.h>

#include "base/duration.h"

#define MAX (9200000000000000000LL)

Test(duration, units_and_fractions_are_exact)
{
   static const struct {
      const char *text;
      int64_t ms;
   } good[] = {{"250ms", 250},    {"90s", 90000},      {"90", 90000},       {"15m", 900000},
               {"12h", 43200000}, {"7d", 604800000},   {"2w", 1209600000},  {"1.5h", 5400000},
               {"1.1s", 1100},    {".5s", 500},        {"5.", 5000},        {"0", 0},
               {"0.001s", 1},     {"1.5d", 129600000}, {"000030m", 1800000}};
   for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
      int64_t ms = -1;
      cr_assert(relay_duration_parse(good[i].text, MAX, &ms), "%s refused", good[i].text);
      cr_assert_eq(ms, good[i].ms, "%s: %lld ms", good[i].text, (long long)ms);
   }
}

Test(duration, anything_else_is_refused)
{
   static const char *const bad[] = {"",
                                     "s",
                                     ".",
                                     "..5",
                                     "1.2.3s",
                                     "-1s",
                                     "+1s",
                                     " 1s",
                                     "1s ",
                                     "1 s",
                                     "1e3",
                                     "0x10",
                                     "nan",
                                     "inf",
                                     "5y",
                                     "5S",
                                     "1sec",
                                     "1,5s",
                                     "0.0001s",
                                     "1.5ms",
                                     "1000000000000000000000",
                                     "0.0000000001s",
                                     "0.000000001w" /* 0.6048 ms */};
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      int64_t ms = 42;
      cr_assert_not(relay_duration_parse(bad[i], MAX, &ms), "'%s' accepted as %lld ms", bad[i],
                    (long long)ms);
      cr_assert_eq(ms, 42, "'%s' touched the result", bad[i]);
   }
}

Test(duration, the_limit_holds_without_overflow)
{
   int64_t ms = 0;
   cr_assert(relay_duration_parse("1000s", 1000000, &ms));
   cr_assert_eq(ms, 1000000);
   cr_assert_not(relay_duration_parse("1000.001s", 1000000, &ms));
   cr_assert_not(relay_duration_parse("1001s", 1000000, &ms));
   /* Near INT64_MAX: a value whose milliseconds would overflow is refused, not wrapped. */
   cr_assert_not(relay_duration_parse("999999999999999999w", MAX, &ms));
   cr_assert(relay_duration_parse("15250w", MAX, &ms));
   cr_assert_eq(ms, 15250LL * 604800000);
}
