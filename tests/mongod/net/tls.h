/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The TLS listener, on OpenSSL: one context for the server (certificate and key, and the CA
 * that client certificates must chain to), one session per connection. A connection's
 * handshake runs on its own thread (blocking sockets, thread per connection), so a slow or
 * silent client holds up no one. Like mongod with --tlsMode requireTLS: when configured,
 * every connection must speak TLS.
 */
#ifndef MD_TLS_H
#define MD_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct _md_tls_t md_tls_t;
typedef struct _md_tls_conn_t md_tls_conn_t;

/* `cert_file`: PEM with the server certificate (and chain) and its private key.
 * `ca_file` (may be NULL): CA certificates that client certificates must chain to; clients
 * must then present one unless `allow_no_cert` (mongod's
 * --tlsAllowConnectionsWithoutCertificates). Returns NULL with a message in `err`. */
md_tls_t *md_tls_new(const char *cert_file, const char *ca_file, bool allow_no_cert, char *err,
                     size_t err_len);
void md_tls_destroy(md_tls_t *tls);

/* Runs the server handshake on the connected socket `fd` (blocking). NULL with a message in
 * `err` if it fails (the caller closes fd). */
md_tls_conn_t *md_tls_accept(md_tls_t *tls, int fd, char *err, size_t err_len);
/* Like recv(): bytes read, 0 at the end of the stream, -1 on an error. */
ssize_t md_tls_recv(md_tls_conn_t *conn, void *buf, size_t len);
/* Writes all of `buf`; false on an error. */
bool md_tls_send_all(md_tls_conn_t *conn, const void *buf, size_t len);
/* The subject of the client's verified certificate (RFC 2253), or NULL. */
const char *md_tls_peer_subject(const md_tls_conn_t *conn);
void md_tls_conn_destroy(md_tls_conn_t *conn);

#endif
