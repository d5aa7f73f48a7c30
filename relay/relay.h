/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay core: change streams in, MQTT messages out, acknowledged events cleared, resume
 * token checkpointed. main() builds a relay_config_t, calls relay_new(), relay_run() and
 * relay_destroy(); a signal handler calls relay_request_stop().
 */
#ifndef RELAY_H
#define RELAY_H

#include <bson/bson.h>

#include "config/config.h"
#include "http/metrics.h"

typedef struct relay_t relay_t;

/* The relay's version ("0.1.0"), a static string (also declared in version.h). */
const char *relay_version(void);

/* Creates a relay for @cfg. @cfg and @metrics are borrowed and must outlive the relay;
 * @metrics may be NULL. Nothing is connected yet: connections are made by relay_run(), so
 * a server that is down at start is retried, not fatal. Returns NULL and fills @error when
 * @cfg cannot work (an unparsable MongoDB or MQTT URI, a bad template). mongoc_init() must
 * have been called. Free with relay_destroy(). */
relay_t *relay_new(const relay_config_t *cfg, relay_metrics_t *metrics, bson_error_t *error);

/* Runs the relay on the calling thread until relay_request_stop() is called, then drains
 * (bounded by cfg->shutdown_timeout_ms), checkpoints and disconnects. Servers that are down
 * or refuse something are logged and retried with backoff, never fatal: a daemon recovers by
 * itself. Returns a <sysexits.h> code, EX_OK after a requested stop. Call at most once per
 * relay. */
int relay_run(relay_t *relay);

/* Asks relay_run() to stop. Async-signal-safe and thread-safe: it only sets a flag, which
 * relay_run() notices within ~100 ms. */
void relay_request_stop(relay_t *relay);

/* Frees @relay; NULL-safe. Must not be called while relay_run() is running. */
void relay_destroy(relay_t *relay);

#endif /* RELAY_H */
