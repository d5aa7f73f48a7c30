/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * TLS on OpenSSL (see tls.h). The context is built once before the listener starts and only
 * read afterwards; each SSL session is used by its connection's thread alone.
 */
#include "net/tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

struct _md_tls_t {
   SSL_CTX *ctx;
};

struct _md_tls_conn_t {
   SSL *ssl;
   char *subject;
};

static void
openssl_error(const char *what, char *err, size_t len)
{
   unsigned long e = ERR_get_error();
   char buf[256] = "";
   if (e) {
      ERR_error_string_n(e, buf, sizeof buf);
   }
   snprintf(err, len, "%s%s%s", what, e ? ": " : "", buf);
   ERR_clear_error();
}

md_tls_t *
md_tls_new(const char *cert_file, const char *ca_file, bool allow_no_cert, char *err,
           size_t err_len)
{
   SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
   if (!ctx) {
      openssl_error("cannot create a TLS context", err, err_len);
      return NULL;
   }
   SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
   SSL_CTX_set_mode(ctx, SSL_MODE_AUTO_RETRY);
   if (SSL_CTX_use_certificate_chain_file(ctx, cert_file) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx, cert_file, SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(ctx) != 1) {
      char what[4200];
      snprintf(what, sizeof what, "--tls-cert-file %s (certificate and key, PEM)", cert_file);
      openssl_error(what, err, err_len);
      SSL_CTX_free(ctx);
      return NULL;
   }
   if (ca_file) {
      if (SSL_CTX_load_verify_locations(ctx, ca_file, NULL) != 1) {
         char what[4200];
         snprintf(what, sizeof what, "--tls-ca-file %s", ca_file);
         openssl_error(what, err, err_len);
         SSL_CTX_free(ctx);
         return NULL;
      }
      /* Ask for a client certificate; a presented one must verify against the CA. */
      SSL_CTX_set_verify(
         ctx, SSL_VERIFY_PEER | (allow_no_cert ? 0 : SSL_VERIFY_FAIL_IF_NO_PEER_CERT), NULL);
      STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca_file);
      if (names) {
         SSL_CTX_set_client_CA_list(ctx, names);
      }
   }
   md_tls_t *tls = calloc(1, sizeof *tls);
   tls->ctx = ctx;
   return tls;
}

void
md_tls_destroy(md_tls_t *tls)
{
   if (tls) {
      SSL_CTX_free(tls->ctx);
      free(tls);
   }
}

md_tls_conn_t *
md_tls_accept(md_tls_t *tls, int fd, char *err, size_t err_len)
{
   SSL *ssl = SSL_new(tls->ctx);
   if (!ssl || SSL_set_fd(ssl, fd) != 1) {
      openssl_error("cannot set up TLS", err, err_len);
      SSL_free(ssl);
      return NULL;
   }
   if (SSL_accept(ssl) != 1) {
      openssl_error("TLS handshake failed", err, err_len);
      SSL_free(ssl);
      return NULL;
   }
   md_tls_conn_t *conn = calloc(1, sizeof *conn);
   conn->ssl = ssl;
   X509 *peer = SSL_get1_peer_certificate(ssl);
   if (peer) {
      BIO *bio = BIO_new(BIO_s_mem());
      X509_NAME_print_ex(bio, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253);
      char *text;
      long n = BIO_get_mem_data(bio, &text);
      conn->subject = strndup(text, (size_t)n);
      BIO_free(bio);
      X509_free(peer);
   }
   return conn;
}

ssize_t
md_tls_recv(md_tls_conn_t *conn, void *buf, size_t len)
{
   size_t n = 0;
   int rc = SSL_read_ex(conn->ssl, buf, len, &n);
   if (rc == 1) {
      return (ssize_t)n;
   }
   int e = SSL_get_error(conn->ssl, rc);
   ERR_clear_error();
   return e == SSL_ERROR_ZERO_RETURN ? 0 : -1;
}

bool
md_tls_send_all(md_tls_conn_t *conn, const void *buf, size_t len)
{
   size_t n = 0;
   /* SSL_write_ex with SSL_MODE_AUTO_RETRY on a blocking socket writes everything or fails;
    * partial writes are off by default. */
   bool ok = len == 0 || SSL_write_ex(conn->ssl, buf, len, &n) == 1;
   if (!ok) {
      ERR_clear_error();
   }
   return ok;
}

const char *
md_tls_peer_subject(const md_tls_conn_t *conn)
{
   return conn->subject;
}

void
md_tls_conn_destroy(md_tls_conn_t *conn)
{
   if (!conn) {
      return;
   }
   SSL_shutdown(conn->ssl); /* close_notify, best effort: the socket closes next anyway */
   SSL_free(conn->ssl);
   free(conn->subject);
   free(conn);
}
