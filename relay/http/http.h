/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's HTTP endpoint (libmicrohttpd, one internal thread):
 *   GET /metrics  200, Prometheus text format (relay_metrics_render())
 *   GET /healthz  200 "ok" when MongoDB and MQTT are connected, else 503 and the reason
 *   anything else 404; methods other than GET and HEAD 405.
 *
 * The main thread makes and destroys it; requests are answered on libmicrohttpd's thread, which
 * only reads the metrics (atomics).
 */
#ifndef RELAY_HTTP_H
#define RELAY_HTTP_H

#include <stdint.h>

#include <bson/bson.h>

#include "http/metrics.h"

typedef struct relay_http_t relay_http_t;

/* Starts serving on @listen, "HOST:PORT" ("127.0.0.1:9464", "[::1]:9464", "localhost:0";
 * port 0 picks a free port, see relay_http_port()). @metrics is borrowed and must outlive
 * the server. Returns NULL and fills @error if the address is malformed or cannot be bound. */
relay_http_t *relay_http_start(const char *listen, relay_metrics_t *metrics, bson_error_t *error);

/* The port actually bound. */
uint16_t relay_http_port(const relay_http_t *http);

/* Stops the server and waits for its thread; NULL-safe. */
void relay_http_stop(relay_http_t *http);

#endif /* RELAY_HTTP_H */
