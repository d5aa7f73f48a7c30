/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Durations (duration.h), in integers throughout: "1.1s" is exactly 1100 ms, where a double
 * would make it 1100.0000000000002. Pure; any thread.
 */
#include "base/duration.h"

#include <string.h>

/* At most this many digits on either side of the '.': 18 keep any value below 10^18 exact
 * in an int64_t, and 9 fraction digits times the largest unit (a week) stay far from
 * overflowing. */
#define INT_DIGITS_MAX 18
#define FRAC_DIGITS_MAX 9

static int64_t
unit_ms(const char *suffix)
{
   static const struct {
      const char *suffix;
      int64_t ms;
   } units[] = {{"ms", 1},       {"s", 1000},      {"m", 60000}, {"h", 3600000},
                {"d", 86400000}, {"w", 604800000}, {"", 1000}};
   for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
      if (!strcmp(suffix, units[i].suffix)) {
         return units[i].ms;
      }
   }
   return 0;
}

/* The first @max digits at @s into @v (and 10^their count into @scale); returns how many
 * digits there were in all (more than @max: the caller refuses). */
static size_t
digits(const char *s, size_t max, int64_t *v, int64_t *scale)
{
   size_t n = 0;
   *v = 0;
   *scale = 1;
   for (; s[n] >= '0' && s[n] <= '9'; n++) {
      if (n < max) {
         *v = *v * 10 + (s[n] - '0');
         *scale *= 10;
      }
   }
   return n;
}

bool
relay_duration_parse(const char *text, int64_t max_ms, int64_t *ms)
{
   int64_t whole, frac = 0, frac_scale = 1, unused;
   size_t n_whole = digits(text, INT_DIGITS_MAX, &whole, &unused), n_frac = 0;
   const char *rest = text + n_whole;

   if (*rest == '.') {
      n_frac = digits(rest + 1, FRAC_DIGITS_MAX, &frac, &frac_scale);
      rest += 1 + n_frac;
   }
   int64_t unit = unit_ms(rest);
   if (n_whole + n_frac == 0 || n_whole > INT_DIGITS_MAX || n_frac > FRAC_DIGITS_MAX || unit == 0 ||
       whole > max_ms / unit || (frac * unit) % frac_scale != 0) {
      return false;
   }
   int64_t total = whole * unit + frac * unit / frac_scale;
   if (total > max_ms) {
      return false;
   }
   *ms = total;
   return true;
}
