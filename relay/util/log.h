/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's logger: one line per call, text or JSON, to stderr or a file. mongoc's and
 * paho's logs are routed into it so an operator reads one stream.
 *
 * Thread safety: every function here may be called from any thread once relay_log_init()
 * has returned, except relay_log_init() and relay_log_shutdown() themselves (main thread,
 * no other thread logging). relay_log_request_reopen() is also async-signal-safe. Before
 * relay_log_init(), relay_log() writes text lines at INFO level to stderr, so code under
 * test can log without setting anything up.
 */
#ifndef RELAY_LOG_H
#define RELAY_LOG_H

#include <stdbool.h>

#include <bson/bson.h>

/* Ordered from most to least severe: a level enables itself and everything before it. */
typedef enum {
   RELAY_LOG_ERROR = 0,
   RELAY_LOG_WARNING,
   RELAY_LOG_INFO,
   RELAY_LOG_DEBUG,
   RELAY_LOG_TRACE,
} relay_log_level_t;

typedef enum {
   RELAY_LOG_TEXT = 0, /* 2026-11-22T10:00:00.123Z INFO  stream: message */
   RELAY_LOG_JSON,     /* {"time":"...","level":"info","component":"stream","msg":"..."} */
} relay_log_format_t;

/* Sets the level and format and opens @path for appending (NULL or "" = stderr). Returns
 * false and fills @error if the file cannot be opened; the previous settings stay. May be
 * called again (e.g. in tests) to switch files. */
bool relay_log_init(relay_log_level_t level, relay_log_format_t format, const char *path,
                    bson_error_t *error);

/* Closes the log file, if any; later calls log to stderr. */
void relay_log_shutdown(void);

/* Reopens the log file now (after logrotate moved it). Returns false if it cannot be
 * reopened; logging then continues on the old file descriptor. */
bool relay_log_reopen(void);

/* Async-signal-safe (SIGHUP): the next relay_log() call reopens the file. */
void relay_log_request_reopen(void);

/* True if a message at @level would be written: guard expensive formatting with it. */
bool relay_log_enabled(relay_log_level_t level);

/* Writes one line. @component is a short word naming the subsystem ("stream", "mqtt",
 * "mongoc", "config"); @fmt is printf-style. Newlines and control characters in the
 * message are escaped so one call is always exactly one line. */
void relay_log(relay_log_level_t level, const char *component, const char *fmt, ...)
   BSON_GNUC_PRINTF(3, 4);

/* Routes mongoc's log handler and paho's trace into relay_log() at the current level.
 * Must be called before mongoc_init() (mongoc reads the handler once) and after
 * relay_log_init(); calling relay_log_init() again afterwards updates paho's trace level. */
void relay_log_route_dependencies(void);

/* Sets paho's trace level to match the log level, in paho's cheapest mode below debug.
 * Called by the logger when the level changes, and after creating an MQTT client (paho
 * initialises its trace settings then). */
void relay_log_sync_paho(void);

/* Calls @observer (from paho's threads) with every line paho traces, before the log level
 * filters it; NULL removes it. mqtt/tls.c reads TLS failure reasons from these lines. */
void relay_log_observe_paho(void (*observer)(const char *line));

/* While @on, paho traces protocol-level lines (TLS alerts, host name checks) whatever the log
 * level, so the observer sees them; relay_log() still writes only what the level allows.
 * Costly per message, so on only while the MQTT connection is down. */
void relay_log_paho_detail(bool on);

/* "error", "warning", "info", "debug", "trace" (case-insensitive; "warn" too). */
bool relay_log_level_parse(const char *s, relay_log_level_t *out);

/* "error", "warning", ... for @level. */
const char *relay_log_level_name(relay_log_level_t level);

/* "text" or "json" (case-insensitive). */
bool relay_log_format_parse(const char *s, relay_log_format_t *out);

const char *relay_log_format_name(relay_log_format_t format);

#endif /* RELAY_LOG_H */
