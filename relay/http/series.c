/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Per-collection histograms and stored-state gauges (see series.h). A histogram keeps one
 * non-cumulative count per bucket and the sum in microseconds, all atomics; rendering makes
 * the counts cumulative, as Prometheus wants. The render may see an observation in a bucket
 * but not yet in _count (or the reverse); Prometheus tolerates that skew of one scrape.
 */
#include "http/series.h"

#include <stdatomic.h>
#include <string.h>

/* 1 ms to 10 min: sub-millisecond publishing on a quiet loopback up to an outage's backlog. */
const double relay_series_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                      1,     2.5,    5,     10,   30,    60,   120, 300,  600};
const size_t relay_series_n_bounds = sizeof relay_series_bounds / sizeof relay_series_bounds[0];
#define N_BUCKETS (sizeof relay_series_bounds / sizeof relay_series_bounds[0] + 1)

typedef struct {
   _Atomic uint64_t buckets[N_BUCKETS]; /* the last one is +Inf */
   _Atomic uint64_t sum_us;
   _Atomic uint64_t count;
} histogram_t;

typedef struct {
   char *name;
   histogram_t h[RELAY_H_COUNT_];
   _Atomic double stored[RELAY_S_COUNT_];
   _Atomic int64_t oldest_ms;
} coll_series_t;

struct relay_series_t {
   coll_series_t *colls;
   size_t n;
};

static const struct {
   const char *name, *help;
} histogram_descs[RELAY_H_COUNT_] = {
   {"outbox_relay_commit_to_ack_seconds",
    "Time from an event's commit (its stored time, the writer's clock) to the broker's "
    "acknowledgement."},
   {"outbox_relay_publish_round_trip_seconds",
    "Time from handing a message to the MQTT client to the broker's acknowledgement."},
   {"outbox_relay_archive_write_seconds",
    "Duration of one archive write (the batch of a collection, --archive-collection)."},
};

static const struct {
   const char *name, *help;
} stored_descs[RELAY_S_COUNT_] = {
   {"outbox_relay_stored_pending_events",
    "Pending events stored in the collection, as the last scan of the partial index found."},
   {"outbox_relay_stored_dead_letters",
    "Dead letters stored in the collection, as the last scan found."},
   {"outbox_relay_stored_malformed_documents",
    "Documents whose events or dead letters field is not an array (written without "
    "liboutbox): their events are neither counted nor published."},
};

relay_series_t *
relay_series_new(char *const *names, size_t n)
{
   relay_series_t *s = bson_malloc0(sizeof *s);
   s->colls = bson_malloc0((n ? n : 1) * sizeof *s->colls);
   s->n = n;
   for (size_t i = 0; i < n; i++) {
      s->colls[i].name = bson_strdup(names[i]);
      /* Zeroed memory is a valid initial state for these lock-free atomics on every
       * platform the relay builds on; atomic_init makes that explicit where it matters. */
      atomic_init(&s->colls[i].oldest_ms, 0);
   }
   return s;
}

void
relay_series_destroy(relay_series_t *s)
{
   if (!s) {
      return;
   }
   for (size_t i = 0; i < s->n; i++) {
      bson_free(s->colls[i].name);
   }
   bson_free(s->colls);
   bson_free(s);
}

void
relay_series_observe(relay_series_t *s, relay_histogram_t h, size_t coll, double seconds)
{
   if (!s || coll >= s->n || (unsigned)h >= RELAY_H_COUNT_) {
      return;
   }
   histogram_t *hist = &s->colls[coll].h[h];
   size_t b = 0;
   if (seconds < 0) {
      seconds = 0;
   }
   while (b < relay_series_n_bounds && seconds > relay_series_bounds[b]) {
      b++;
   }
   atomic_fetch_add_explicit(&hist->buckets[b], 1, memory_order_relaxed);
   atomic_fetch_add_explicit(&hist->sum_us, (uint64_t)(seconds * 1e6), memory_order_relaxed);
   atomic_fetch_add_explicit(&hist->count, 1, memory_order_relaxed);
}

void
relay_series_set(relay_series_t *s, relay_stored_gauge_t g, size_t coll, double value)
{
   if (s && coll < s->n && (unsigned)g < RELAY_S_COUNT_) {
      atomic_store_explicit(&s->colls[coll].stored[g], value, memory_order_relaxed);
   }
}

void
relay_series_set_oldest(relay_series_t *s, size_t coll, int64_t time_ms)
{
   if (s && coll < s->n) {
      atomic_store_explicit(&s->colls[coll].oldest_ms, time_ms, memory_order_relaxed);
   }
}

int64_t
relay_series_oldest(const relay_series_t *s)
{
   int64_t oldest = 0;
   for (size_t i = 0; s && i < s->n; i++) {
      int64_t t =
         atomic_load_explicit(&((relay_series_t *)s)->colls[i].oldest_ms, memory_order_relaxed);
      if (t && (!oldest || t < oldest)) {
         oldest = t;
      }
   }
   return oldest;
}

/* {collection="NAME"} with the exposition format's escapes. */
static void
append_label(bson_string_t *out, const char *coll, const char *le)
{
   bson_string_append(out, "{collection=\"");
   for (const char *p = coll; *p; p++) {
      if (*p == '\\' || *p == '"') {
         bson_string_append_c(out, '\\');
      }
      bson_string_append_c(out, *p);
   }
   bson_string_append_c(out, '"');
   if (le) {
      bson_string_append_printf(out, ",le=\"%s\"", le);
   }
   bson_string_append_c(out, '}');
}

static void
render_histogram(const relay_series_t *s, relay_histogram_t h, bson_string_t *out)
{
   const char *name = histogram_descs[h].name;
   bson_string_append_printf(out, "# HELP %s %s\n# TYPE %s histogram\n", name,
                             histogram_descs[h].help, name);
   for (size_t i = 0; i < s->n; i++) {
      histogram_t *hist = &s->colls[i].h[h];
      uint64_t cumulative = 0;
      for (size_t b = 0; b < N_BUCKETS; b++) {
         char le[32];
         cumulative += atomic_load_explicit(&hist->buckets[b], memory_order_relaxed);
         if (b < relay_series_n_bounds) {
            bson_snprintf(le, sizeof le, "%g", relay_series_bounds[b]);
         } else {
            bson_strncpy(le, "+Inf", sizeof le);
         }
         bson_string_append_printf(out, "%s_bucket", name);
         append_label(out, s->colls[i].name, le);
         bson_string_append_printf(out, " %" PRIu64 "\n", cumulative);
      }
      bson_string_append_printf(out, "%s_sum", name);
      append_label(out, s->colls[i].name, NULL);
      bson_string_append_printf(
         out, " %.6f\n", (double)atomic_load_explicit(&hist->sum_us, memory_order_relaxed) / 1e6);
      bson_string_append_printf(out, "%s_count", name);
      append_label(out, s->colls[i].name, NULL);
      bson_string_append_printf(out, " %" PRIu64 "\n",
                                atomic_load_explicit(&hist->count, memory_order_relaxed));
   }
}

void
relay_series_render(const relay_series_t *s, bson_string_t *out)
{
   if (!s) {
      return;
   }
   for (int h = 0; h < RELAY_H_COUNT_; h++) {
      render_histogram(s, (relay_histogram_t)h, out);
   }
   for (int g = 0; g < RELAY_S_COUNT_; g++) {
      const char *name = stored_descs[g].name;
      bson_string_append_printf(out, "# HELP %s %s\n# TYPE %s gauge\n", name, stored_descs[g].help,
                                name);
      for (size_t i = 0; i < s->n; i++) {
         bson_string_append(out, name);
         append_label(out, s->colls[i].name, NULL);
         bson_string_append_printf(
            out, " %.0f\n",
            atomic_load_explicit(&((relay_series_t *)s)->colls[i].stored[g], memory_order_relaxed));
      }
   }
}
