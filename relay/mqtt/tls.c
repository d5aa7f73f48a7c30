/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "mqtt/tls.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include "util/log.h"

static pthread_mutex_t reason_mutex = PTHREAD_MUTEX_INITIALIZER;
static char *reason;      /* guarded by reason_mutex; the first reason since the last take */
static char *client_cert; /* guarded by reason_mutex; mqtt-cert-file, for the broker's alerts */
/* paho's automatic reconnects report no failure the relay could log (a TLS 1.3 refusal of the
 * relay's certificate arrives as an alert after the handshake), so while they run each new
 * reason is logged here, again after a minute. Guarded by reason_mutex. */
static bool direct;
static char *last_logged;
static int64_t last_logged_us;

bool
relay_tls_uri(const char *uri)
{
   return !strncasecmp(uri, "ssl://", 6) || !strncasecmp(uri, "mqtts://", 8) ||
          !strncasecmp(uri, "wss://", 6);
}

/* Keeps @text unless a reason is kept already: the first one is the cause (OpenSSL's
 * queue and paho's later lines repeat it in vaguer words). */
static void
keep(char *text, bool log_now)
{
   pthread_mutex_lock(&reason_mutex);
   int64_t now = bson_get_monotonic_time();
   if (direct && log_now &&
       (!last_logged || strcmp(last_logged, text) || now - last_logged_us > 60 * 1000000)) {
      relay_log(RELAY_LOG_WARNING, "mqtt", "reconnect failed: %s", text);
      bson_free(last_logged);
      last_logged = bson_strdup(text);
      last_logged_us = now;
   }
   if (!reason) {
      reason = text;
      text = NULL;
   }
   pthread_mutex_unlock(&reason_mutex);
   bson_free(text);
}

/* A few words OpenSSL uses in an alert the relay sent (it refused the broker's certificate),
 * with what the operator should check. */
static const char *
hint_sent(const char *desc)
{
   if (strstr(desc, "unknown CA") || strstr(desc, "unable to get local issuer")) {
      return " (is the broker's certificate signed by a CA in --mqtt-ca-file, or in the system "
             "store when none is given?)";
   }
   if (strstr(desc, "expired")) {
      return " (the broker's certificate is out of date)";
   }
   return "";
}

/* The same for an alert the broker sent: it refused the relay's own certificate (or its
 * absence), so the hint names mqtt-cert-file, never the broker's certificate. */
static char *
hint_received(const char *desc)
{
   pthread_mutex_lock(&reason_mutex);
   char *cert = bson_strdup(client_cert);
   pthread_mutex_unlock(&reason_mutex);
   char *hint;
   /* TLS 1.3's certificate_required alert (116) is "unknown" to OpenSSL 3.0's names. */
   if (strstr(desc, "certificate required") ||
       (!cert && (strstr(desc, "handshake failure") || !strncmp(desc, "unknown", 7)))) {
      hint = bson_strdup(" (the broker wants a client certificate: --mqtt-cert-file, "
                         "--mqtt-key-file)");
   } else if (!cert) {
      hint = bson_strdup("");
   } else if (strstr(desc, "unknown CA") || strstr(desc, "bad certificate") ||
              strstr(desc, "unsupported certificate") || strstr(desc, "decrypt error")) {
      hint = bson_strdup_printf(" (the broker refused the relay's certificate, mqtt-cert-file "
                                "'%s': is it signed by a CA in the broker's cafile?)",
                                cert);
   } else if (strstr(desc, "expired")) {
      hint = bson_strdup_printf(" (the broker refused the relay's certificate, mqtt-cert-file "
                                "'%s', as out of date: renew it; the relay reads it again at its "
                                "next connect)",
                                cert);
   } else {
      hint = bson_strdup_printf(" (the broker refused the relay's certificate, mqtt-cert-file "
                                "'%s')",
                                cert);
   }
   bson_free(cert);
   return hint;
}

void
relay_tls_observe(const char *line)
{
   static const char wrote[] = "SSL alert write:fatal:";
   static const char read[] = "SSL alert read:fatal:";
   static const char host[] = "X509_check_host for hostname ";
   const char *p;

   if ((p = strstr(line, wrote))) {
      p += strlen(wrote);
      keep(bson_strdup_printf("the relay ended the TLS handshake: %s%s", p, hint_sent(p)), true);
   } else if ((p = strstr(line, read))) {
      p += strlen(read);
      char *h = hint_received(p);
      keep(bson_strdup_printf("the broker ended the TLS handshake: %s%s", p, h), true);
      bson_free(h);
   } else if ((p = strstr(line, host)) && strstr(p, " failed")) {
      p += strlen(host);
      keep(bson_strdup_printf("the broker's certificate is not valid for the host name '%.*s' "
                              "(names and IP addresses in it do not match; "
                              "--mqtt-tls-insecure skips this check, for testing only)",
                              (int)(strstr(p, " failed") - p), p),
           true);
   }
}

/* OpenSSL's error queue, one line per error: "<thread>:error:<code>:<library>:<function>:
 * <reason>:<file>:<line>:<data>". The reason is what an operator can act on. */
static int
on_ssl_error(const char *str, size_t len, void *u)
{
   const char *p = strstr(str, "error:");
   for (int field = 0; p && field < 4; field++) {
      p = strchr(p, ':');
      p = p ? p + 1 : NULL;
   }
   if (p && *p) {
      size_t n = strcspn(p, ":\n");
      keep(bson_strdup_printf("OpenSSL: %.*s", (int)n, p), false);
   }
   return 0;
}

void
relay_tls_fill(const relay_config_t *cfg, MQTTAsync_SSLOptions *ssl)
{
   ssl->trustStore = cfg->mqtt_ca_file;
   ssl->keyStore = cfg->mqtt_cert_file;
   ssl->privateKey = cfg->mqtt_key_file;
   ssl->privateKeyPassword = cfg->mqtt_key_password;
   pthread_mutex_lock(&reason_mutex);
   bson_free(client_cert);
   client_cert = bson_strdup(cfg->mqtt_cert_file);
   pthread_mutex_unlock(&reason_mutex);
   ssl->enableServerCertAuth = 1;
   /* paho's default is no hostname check. */
   ssl->verify = cfg->mqtt_tls_insecure ? 0 : 1;
   ssl->ssl_error_cb = on_ssl_error;
   ssl->ssl_error_context = NULL;
}

void
relay_tls_warn_insecure(const relay_config_t *cfg)
{
   if (cfg->mqtt_tls_insecure && relay_tls_uri(cfg->mqtt_uri)) {
      relay_log(RELAY_LOG_WARNING, "mqtt",
                "mqtt-tls-insecure is set: the broker's host name is not checked against its "
                "certificate, so anyone holding a certificate from a trusted CA can pose as the "
                "broker; use it for testing only");
   }
}

void
relay_tls_watch(bool on)
{
   relay_log_observe_paho(on ? relay_tls_observe : NULL);
   relay_log_paho_detail(on);
   if (!on) {
      bson_free(relay_tls_take_reason());
      pthread_mutex_lock(&reason_mutex);
      direct = false;
      bson_free(last_logged);
      last_logged = NULL;
      pthread_mutex_unlock(&reason_mutex);
   }
}

void
relay_tls_watch_reconnects(void)
{
   relay_tls_watch(true);
   pthread_mutex_lock(&reason_mutex);
   direct = true;
   pthread_mutex_unlock(&reason_mutex);
}

char *
relay_tls_take_reason(void)
{
   pthread_mutex_lock(&reason_mutex);
   char *r = reason;
   reason = NULL;
   pthread_mutex_unlock(&reason_mutex);
   return r;
}
