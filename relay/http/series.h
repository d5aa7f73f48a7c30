/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's per-collection series: latency histograms (commit to broker acknowledgement,
 * publish round trip) and gauges of what is stored (pending events, dead letters, the oldest
 * pending event's time), each labelled {collection="..."}. Owned by relay_metrics_t
 * (metrics.h), which forwards to these functions and renders them on /metrics.
 *
 * Thread safety: the set of collections is fixed at creation; observations and gauges are
 * atomics (the main thread observes, the scanner thread sets the stored gauges, the HTTP
 * thread renders), so no call takes a lock and the hot path costs a few atomic adds.
 */
#ifndef RELAY_SERIES_H
#define RELAY_SERIES_H

#include <stddef.h>
#include <stdint.h>

#include <bson/bson.h>

typedef enum {
   RELAY_H_COMMIT_TO_ACK = 0,  /* outbox_relay_commit_to_ack_seconds: event time to PUBACK */
   RELAY_H_PUBLISH_ROUND_TRIP, /* outbox_relay_publish_round_trip_seconds: send to PUBACK */
   RELAY_H_ARCHIVE_WRITE,      /* outbox_relay_archive_write_seconds: one archive write */
   RELAY_H_COUNT_,
} relay_histogram_t;

typedef enum {
   RELAY_S_PENDING_EVENTS = 0,  /* outbox_relay_stored_pending_events */
   RELAY_S_DEAD_LETTERS,        /* outbox_relay_stored_dead_letters */
   RELAY_S_MALFORMED_DOCUMENTS, /* outbox_relay_stored_malformed_documents */
   RELAY_S_COUNT_,
} relay_stored_gauge_t;

typedef struct relay_series_t relay_series_t;

/* Series for @n collections named @names (copied). */
relay_series_t *relay_series_new(char *const *names, size_t n);
void relay_series_destroy(relay_series_t *s);

/* Counts one observation of @seconds (negative counts as 0) for collection @coll. */
void relay_series_observe(relay_series_t *s, relay_histogram_t h, size_t coll, double seconds);

void relay_series_set(relay_series_t *s, relay_stored_gauge_t g, size_t coll, double value);

/* The time (ms since the epoch) of the oldest pending event the last scan found in @coll,
 * 0 for none; and the oldest over all collections. */
void relay_series_set_oldest(relay_series_t *s, size_t coll, int64_t time_ms);
int64_t relay_series_oldest(const relay_series_t *s);

/* Appends every series in the text exposition format (histograms: _bucket{le}, _sum,
 * _count). */
void relay_series_render(const relay_series_t *s, bson_string_t *out);

/* The histograms' upper bounds in seconds, 1 ms to 10 min, and their number. */
extern const double relay_series_bounds[];
extern const size_t relay_series_n_bounds;

#endif /* RELAY_SERIES_H */
