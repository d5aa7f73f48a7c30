/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The times and durations of outbox-admin's command line (--older-than, --max-age, --since,
 * --until): one strict parser for each, so that what is not exactly a time or a duration is a
 * usage error before anything connects. No state.
 */
#include "admin/args.h"
#include "base/duration.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Ages are kept in int64 milliseconds and subtracted from the server's clock: anything near
 * INT64_MAX would overflow there (about 106 million years). */
#define AGE_MAX_MS 9200000000000000000LL

bool
admin_parse_age(const char *text, int64_t *ms)
{
   return relay_duration_parse(text, AGE_MAX_MS, ms);
}

static bool
is_leap(int y)
{
   return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* @n digits at @s as a number, or -1. */
static int
digits(const char *s, int n)
{
   int v = 0;
   for (int i = 0; i < n; i++) {
      if (s[i] < '0' || s[i] > '9') {
         return -1;
      }
      v = v * 10 + (s[i] - '0');
   }
   return v;
}

/* "2026-11-20T10:00:00Z" with an optional fraction, every field in range for its month
 * (2026-02-31 is refused, where timegm() would have made it March 3). */
static bool
parse_rfc3339(const char *t, int64_t *ms)
{
   static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
   struct tm tm = {0};
   int64_t frac = 0, scale = 1000;

   if (strlen(t) < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' ||
       t[16] != ':') {
      return false;
   }
   int y = digits(t, 4), mo = digits(t + 5, 2), d = digits(t + 8, 2);
   int h = digits(t + 11, 2), mi = digits(t + 14, 2), s = digits(t + 17, 2);
   if (y < 1970 || mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 ||
       s > 59 || d > mdays[mo - 1] + (mo == 2 && is_leap(y))) {
      return false;
   }
   const char *rest = t + 19;
   if (*rest == '.') {
      if (rest[1] < '0' || rest[1] > '9') {
         return false;
      }
      for (rest++; *rest >= '0' && *rest <= '9'; rest++) {
         if (scale > 1) {
            scale /= 10;
            frac += (*rest - '0') * scale;
         }
      }
   }
   if (strcmp(rest, "Z") != 0) {
      return false;
   }
   tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
   tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = s;
   *ms = (int64_t)timegm(&tm) * 1000 + frac;
   return true;
}

bool
admin_parse_time(const char *text, int64_t now, int64_t *ms)
{
   int64_t age;
   if (parse_rfc3339(text, ms)) {
      return true;
   }
   if (admin_parse_age(text, &age)) {
      *ms = now - age;
      return true;
   }
   return false;
}
