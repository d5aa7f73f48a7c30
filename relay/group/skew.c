/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See skew.h: measuring the primary's clock against the relay's. The table of members seen
 * is the lease thread's; the gauges are atomics any thread renders.
 */
#include "group/skew.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "util/log.h"

#define SKEW_KEEP_NS (3600LL * 1000000000LL)

static int64_t
clock_us(clockid_t id)
{
   struct timespec ts;
   clock_gettime(id, &ts);
   return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void
relay_skew_init(relay_skew_t *s, int64_t margin_ms)
{
   memset(s, 0, sizeof *s);
   s->margin_ms = margin_ms;
   atomic_init(&s->measured, false);
   atomic_init(&s->skew_us, 0);
   atomic_init(&s->spread_us, 0);
   atomic_init(&s->uncertainty_us, 0);
}

void
relay_skew_cleanup(relay_skew_t *s)
{
   for (int i = 0; i < RELAY_SKEW_MEMBERS; i++) {
      bson_free(s->seen[i].name);
      s->seen[i].name = NULL;
   }
}

/* Records @skew_us for member @name (the oldest entry makes room) and returns the spread
 * of the entries younger than an hour. */
static int64_t
remember(relay_skew_t *s, const char *name, int64_t skew_us)
{
   int64_t now = clock_us(CLOCK_BOOTTIME) * 1000, lo = INT64_MAX, hi = INT64_MIN;
   int slot = 0;

   for (int i = 0; i < RELAY_SKEW_MEMBERS; i++) {
      if (s->seen[i].name && !strcmp(s->seen[i].name, name)) {
         slot = i;
         break;
      }
      if (!s->seen[i].name || s->seen[i].at_ns < s->seen[slot].at_ns) {
         slot = i;
      }
   }
   if (!s->seen[slot].name || strcmp(s->seen[slot].name, name)) {
      bson_free(s->seen[slot].name);
      s->seen[slot].name = bson_strdup(name);
   }
   s->seen[slot].skew_us = skew_us;
   s->seen[slot].at_ns = now;
   for (int i = 0; i < RELAY_SKEW_MEMBERS; i++) {
      if (s->seen[i].name && now - s->seen[i].at_ns < SKEW_KEEP_NS) {
         lo = s->seen[i].skew_us < lo ? s->seen[i].skew_us : lo;
         hi = s->seen[i].skew_us > hi ? s->seen[i].skew_us : hi;
      }
   }
   return hi - lo;
}

static void
warn_if_near(relay_skew_t *s, const char *name, int64_t skew_us, int64_t unc_us, int64_t spread)
{
   int64_t half_us = s->margin_ms * 500;
   int64_t worst = (skew_us < 0 ? -skew_us : skew_us) + unc_us;
   bool near = worst >= half_us || spread >= half_us;

   if (near && !s->warned) {
      relay_log(RELAY_LOG_WARNING, "group",
                "the clock of MongoDB primary %s is %+.3f s off this relay's (+/- %.3f s); "
                "primaries seen differ by up to %.3f s. Leases are judged by the primary's "
                "clock: the largest skew between members must stay below --lease-margin-ms "
                "(%.3f s), or a failover can let two members publish one partition for a "
                "while (duplicates, never a loss). Fix the members' time synchronisation or "
                "raise the margin",
                name, (double)skew_us / 1e6, (double)unc_us / 1e6, (double)spread / 1e6,
                (double)s->margin_ms / 1e3);
   } else if (!near && s->warned) {
      relay_log(RELAY_LOG_INFO, "group",
                "MongoDB clocks within half of --lease-margin-ms again (primary %s %+.3f s)", name,
                (double)skew_us / 1e6);
   }
   s->warned = near;
}

void
relay_skew_measure(relay_skew_t *s, mongoc_client_t *client)
{
   bson_t cmd = BSON_INITIALIZER, reply;
   bson_iter_t it;
   int64_t mono0 = clock_us(CLOCK_MONOTONIC), wall0 = clock_us(CLOCK_REALTIME), mono1, server_ms;
   const char *name = "?";
   bool ok;

   BSON_APPEND_INT32(&cmd, "hello", 1);
   ok = mongoc_client_command_simple(client, "admin", &cmd, NULL, &reply, NULL);
   mono1 = clock_us(CLOCK_MONOTONIC);
   if (ok && bson_iter_init_find(&it, &reply, "localTime") && BSON_ITER_HOLDS_DATE_TIME(&it)) {
      /* The server read its clock somewhere in the round trip: assume the middle. */
      int64_t rtt_half = (mono1 - mono0) / 2;
      int64_t skew_us, spread;
      server_ms = bson_iter_date_time(&it);
      skew_us = server_ms * 1000 - (wall0 + rtt_half);
      if (bson_iter_init_find(&it, &reply, "me") && BSON_ITER_HOLDS_UTF8(&it)) {
         name = bson_iter_utf8(&it, NULL);
      }
      spread = remember(s, name, skew_us);
      atomic_store(&s->skew_us, skew_us);
      atomic_store(&s->uncertainty_us, rtt_half);
      atomic_store(&s->spread_us, spread);
      atomic_store(&s->measured, true);
      warn_if_near(s, name, skew_us, rtt_half, spread);
   }
   bson_destroy(&reply);
   bson_destroy(&cmd);
}

void
relay_skew_render(const relay_skew_t *s, bson_string_t *out)
{
   bson_string_append_printf(out,
                             "# HELP outbox_relay_lease_margin_seconds --lease-margin-ms: the "
                             "largest clock skew between MongoDB members must stay below it.\n"
                             "# TYPE outbox_relay_lease_margin_seconds gauge\n"
                             "outbox_relay_lease_margin_seconds %.3f\n",
                             (double)s->margin_ms / 1e3);
   if (!atomic_load((atomic_bool *)&s->measured)) {
      return;
   }
   bson_string_append_printf(
      out,
      "# HELP outbox_relay_server_clock_skew_seconds The MongoDB primary's clock (hello "
      "localTime) minus this relay's wall clock at the middle of the round trip, at the last "
      "lease tick.\n"
      "# TYPE outbox_relay_server_clock_skew_seconds gauge\n"
      "outbox_relay_server_clock_skew_seconds %.6f\n"
      "# HELP outbox_relay_server_clock_skew_uncertainty_seconds Half the round trip of that "
      "measurement.\n"
      "# TYPE outbox_relay_server_clock_skew_uncertainty_seconds gauge\n"
      "outbox_relay_server_clock_skew_uncertainty_seconds %.6f\n"
      "# HELP outbox_relay_server_clock_skew_spread_seconds Largest difference between the "
      "skews of the members seen as primary in the last hour.\n"
      "# TYPE outbox_relay_server_clock_skew_spread_seconds gauge\n"
      "outbox_relay_server_clock_skew_spread_seconds %.6f\n",
      (double)atomic_load((_Atomic int64_t *)&s->skew_us) / 1e6,
      (double)atomic_load((_Atomic int64_t *)&s->uncertainty_us) / 1e6,
      (double)atomic_load((_Atomic int64_t *)&s->spread_us) / 1e6);
}
