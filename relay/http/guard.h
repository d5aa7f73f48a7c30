/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Bounds what slow and idle HTTP clients can hold of a libmicrohttpd daemon. Its connection
 * timeout counts idle time only: a client sending a byte a second keeps its connection for
 * ever, and enough of them take every connection slot (16 took the relay's /healthz off line,
 * 1,000 the contacts service). The guard adds two rules:
 *  - a deadline per request: it must have arrived whole within @deadline_ms of the
 *    connection's accept (or of the end of the previous request on a kept-alive connection),
 *    or the connection is shut down;
 *  - at most @max_waiting connections waiting on their clients: one more shuts down the one
 *    that has waited longest, so a new connection (a liveness probe) always gets in; an
 *    attacker would have to open connections faster than a probe is answered.
 * From relay_http_guard_received() to the end of the request the application works on it:
 * its connection is neither timed nor evicted (sending the response is bounded by
 * libmicrohttpd's idle timeout, MHD_OPTION_CONNECTION_TIMEOUT).
 *
 * Connections are cut with shutdown(), never close(): libmicrohttpd sees the end of the socket
 * and closes it itself, and it reports the close (MHD_CONNECTION_NOTIFY_CLOSED, which takes
 * the connection off the guard's list under its mutex) before it closes the descriptor, so
 * the guard never touches a descriptor that was reused.
 *
 * Threads: the guard runs a watchdog thread of its own; libmicrohttpd's threads (any number)
 * call the notification and the request functions; a mutex guards the list. Shared with the
 * contacts example (examples/contacts/http.c), so it depends on libmicrohttpd and libbson
 * only.
 */
#ifndef RELAY_HTTP_GUARD_H
#define RELAY_HTTP_GUARD_H

#include <stdint.h>

#include <microhttpd.h>

typedef struct relay_http_guard_t relay_http_guard_t;

/* Starts a guard (and its watchdog thread). Pass relay_http_guard_notify and the guard as
 * MHD_OPTION_NOTIFY_CONNECTION, set MHD_OPTION_CONNECTION_LIMIT above @max_waiting (new
 * connections must be accepted to displace old ones), and call relay_http_guard_received() and
 * relay_http_guard_done() from the handlers. NULL if the thread cannot start. */
relay_http_guard_t *relay_http_guard_new(unsigned max_waiting, unsigned deadline_ms);

/* Stops the watchdog and frees the guard; call after MHD_stop_daemon(). NULL-safe. */
void relay_http_guard_destroy(relay_http_guard_t *guard);

/* The MHD_OPTION_NOTIFY_CONNECTION callback; @cls is the guard. */
void relay_http_guard_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                             enum MHD_ConnectionNotificationCode code);

/* The request on @connection has arrived whole: the application works on it now. Idempotent. */
void relay_http_guard_received(relay_http_guard_t *guard, struct MHD_Connection *connection);

/* The request on @connection ended (from MHD_OPTION_NOTIFY_COMPLETED): the next one on a
 * kept-alive connection gets a new deadline. */
void relay_http_guard_done(relay_http_guard_t *guard, struct MHD_Connection *connection);

/* An MHD_OPTION_UNESCAPE_CALLBACK: percent-decodes like libmicrohttpd, except a value that
 * holds "%00", which stays encoded: a decoded NUL cut "/metrics%00anything" (or
 * "/contacts/<id>%00anything") down to a path that matched. */
size_t relay_http_guard_unescape(void *cls, struct MHD_Connection *connection, char *s);

#endif /* RELAY_HTTP_GUARD_H */
