/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The scanner: a thread that, every --pending-scan-interval-ms, counts what is stored in each
 * collection through the partial indexes (liboutbox's outbox_collection_count_events(): the
 * pending events, the time of the oldest, the dead letters) and publishes it as gauges. The
 * relay's own age gauge only sees events it has read; this one also sees events its change
 * stream filter cannot (written without raising eventSeq, or stuck behind a partition nobody
 * owns), so the "events stuck" alert fires for every pending event. Its cost is one
 * aggregation per collection and place, over the documents with pending events or dead
 * letters only; outbox_relay_pending_scan_seconds shows it.
 *
 * Thread safety: relay_scanner_new() and relay_scanner_destroy() are for the main thread;
 * the scanner writes only atomics of the metrics.
 */
#ifndef RELAY_SCANNER_H
#define RELAY_SCANNER_H

#include <bson/bson.h>

#include "config/config.h"
#include "http/metrics.h"
#include "stream/namespaces.h"

typedef struct relay_scanner_t relay_scanner_t;

/* Starts the thread (first scan at once). Returns NULL and fills @error on a bad URI.
 * @metrics must have its collections set (relay_metrics_set_collections(): one series per
 * pattern) and outlive the scanner, like the watched set @ns. */
relay_scanner_t *relay_scanner_new(const relay_config_t *cfg, relay_namespaces_t *ns,
                                   relay_metrics_t *metrics, bson_error_t *error);

/* Stops the thread (waits for a scan in progress) and frees everything. NULL-safe. */
void relay_scanner_destroy(relay_scanner_t *s);

#endif /* RELAY_SCANNER_H */
