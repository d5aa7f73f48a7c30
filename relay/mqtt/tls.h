/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * TLS for the MQTT connection: the options handed to paho, a warning when verification is
 * relaxed, and the reason a TLS connect failed. paho 1.3.12 reports every TLS failure as
 * "TCP/TLS connect failure"; the reason (a certificate OpenSSL refused and why, a host name the
 * certificate does not name) appears only in its protocol-level trace and in OpenSSL's error
 * queue. While a TLS connection is down, paho's trace is raised to protocol level (nothing is
 * sent then, so it costs nothing) and the first reason seen is kept for the failure's log line.
 *
 * The kept reason is process-wide (paho's trace is) and guarded by a mutex: every function may
 * be called from any thread.
 */
#ifndef RELAY_MQTT_TLS_H
#define RELAY_MQTT_TLS_H

#include <stdbool.h>

#include <MQTTAsync.h>
#include <bson/bson.h>

#include "config/config.h"

/* True for ssl://, mqtts:// and wss:// (any case). */
bool relay_tls_uri(const char *uri);

/* Fills @ssl from @cfg: CA, client certificate and key, verification (chain always; host name
 * unless mqtt-tls-insecure), and the OpenSSL error callback. @cfg is borrowed for as long as
 * paho may use @ssl. */
void relay_tls_fill(const relay_config_t *cfg, MQTTAsync_SSLOptions *ssl);

/* Warns at start when @cfg relaxes verification (mqtt-tls-insecure). */
void relay_tls_warn_insecure(const relay_config_t *cfg);

/* @on: the connection is down (connecting or reconnecting): collect failure reasons. Off once
 * connected (and the kept reason is dropped). */
void relay_tls_watch(bool on);

/* As relay_tls_watch(true), for paho's automatic reconnects after a lost connection: they
 * report no failure, so each new reason is logged at once ("reconnect failed: the broker
 * ended the TLS handshake: ..."), the same one again after a minute. */
void relay_tls_watch_reconnects(void);

/* The first TLS failure reason seen since the last call, e.g. "the relay rejected the
 * broker's certificate: certificate expired", or NULL. Free with bson_free(). */
char *relay_tls_take_reason(void);

/* Days before a client certificate's expiry from which the start and --check-config warn. */
#define RELAY_TLS_WARN_DAYS 14

/* Checks the TLS files of @cfg with OpenSSL (nothing without a TLS mqtt-uri): the CA file
 * and the client certificate readable and PEM, the certificate within its dates, its private
 * key readable, decrypted by mqtt-key-password when encrypted, and matching it. Returns false
 * with @error naming the option, the file and the reason; a certificate that expires within
 * @warn_days adds a line to @warnings (may be NULL). Pure apart from reading the files. */
bool relay_tls_check_files(const relay_config_t *cfg, int warn_days, bson_string_t *warnings,
                           bson_error_t *error);

/* Reads one line of paho's trace (see relay_log_observe_paho()); exposed for tests. */
void relay_tls_observe(const char *line);

#endif /* RELAY_MQTT_TLS_H */
