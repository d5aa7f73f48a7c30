/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Checking the TLS files before paho reads them: paho 1.3.12 reports a missing file, a key
 * that does not match its certificate or an encrypted key without a passphrase as "TCP/TLS
 * connect failure" at every attempt, and a broker refusing an expired client certificate
 * only as an alert. Read here with OpenSSL, each gets one sentence naming the file and the
 * reason, at start and by --check-config. No state: any thread.
 */
#include "mqtt/tls.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "util/error.h"

/* How a passphrase callback went: OpenSSL calls it only for an encrypted key. */
typedef struct {
   const char *password;
   bool asked;
} pass_t;

static int
on_pass(char *buf, int size, int rwflag, void *u)
{
   pass_t *p = u;
   (void)rwflag;
   p->asked = true;
   if (!p->password) {
      return -1;
   }
   int n = (int)strlen(p->password);
   if (n > size) {
      return -1;
   }
   memcpy(buf, p->password, (size_t)n);
   return n;
}

static bool
fail(bson_error_t *error, const char *opt, const char *path, const char *why)
{
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s '%s': %s", opt, path, why);
   return false;
}

static FILE *
open_file(const char *opt, const char *path, bson_error_t *error)
{
   FILE *f = fopen(path, "r");
   if (!f) {
      fail(error, opt, path, strerror(errno));
   }
   return f;
}

/* The first certificate of a PEM file, or NULL with @error filled. */
static X509 *
read_cert(const char *opt, const char *path, bson_error_t *error)
{
   FILE *f = open_file(opt, path, error);
   if (!f) {
      return NULL;
   }
   X509 *cert = PEM_read_X509(f, NULL, NULL, NULL);
   fclose(f);
   ERR_clear_error();
   if (!cert) {
      fail(error, opt, path, "no PEM certificate in it (\"-----BEGIN CERTIFICATE-----\")");
   }
   return cert;
}

static char *
format_asn1_time(const ASN1_TIME *t)
{
   struct tm tm;
   char buf[32];
   if (!ASN1_TIME_to_tm(t, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm)) {
      return bson_strdup("(unreadable date)");
   }
   return bson_strdup(buf);
}

/* Not yet valid or expired: an error; expiring within @warn_days: a warning in @warnings. */
static bool
check_dates(X509 *cert, const char *opt, const char *path, int warn_days, bson_string_t *warnings,
            bson_error_t *error)
{
   const ASN1_TIME *after = X509_get0_notAfter(cert);
   char *when = format_asn1_time(after);
   char *why = NULL;
   int days = 0, secs = 0;
   if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
      char *from = format_asn1_time(X509_get0_notBefore(cert));
      why = bson_strdup_printf("the certificate is not valid before %s", from);
      bson_free(from);
   } else if (X509_cmp_current_time(after) < 0) {
      why = bson_strdup_printf("the certificate expired on %s", when);
   } else if (warnings && ASN1_TIME_diff(&days, &secs, NULL, after) && days < warn_days) {
      bson_string_append_printf(warnings,
                                "%s '%s': the certificate expires on %s (in %d day%s, %d h): "
                                "renew it; the relay reads it again at its next connect\n",
                                opt, path, when, days, days == 1 ? "" : "s", secs / 3600);
   }
   bool ok = !why || fail(error, opt, path, why);
   bson_free(why);
   bson_free(when);
   return ok;
}

/* The private key (in @path, which may be the certificate file too) must open with the
 * passphrase given, if any, and match @cert. */
static bool
check_key(const relay_config_t *cfg, X509 *cert, const char *opt, const char *path,
          bson_error_t *error)
{
   FILE *f = open_file(opt, path, error);
   if (!f) {
      return false;
   }
   pass_t pass = {cfg->mqtt_key_password, false};
   EVP_PKEY *key = PEM_read_PrivateKey(f, NULL, on_pass, &pass);
   fclose(f);
   ERR_clear_error();
   bool ok = false;
   if (!key && pass.asked && !cfg->mqtt_key_password) {
      fail(error, opt, path,
           "the private key is encrypted: give its passphrase in mqtt-key-password-file "
           "(OUTBOX_MQTT_KEY_PASSWORD_FILE) or OUTBOX_MQTT_KEY_PASSWORD, never as a flag");
   } else if (!key && pass.asked) {
      fail(error, opt, path, "the private key cannot be decrypted with the passphrase given");
   } else if (!key) {
      fail(error, opt, path, "no PEM private key in it (\"-----BEGIN ... PRIVATE KEY-----\")");
   } else if (X509_check_private_key(cert, key) != 1) {
      ERR_clear_error();
      char *why = bson_strdup_printf("the private key does not match the certificate in "
                                     "mqtt-cert-file '%s'",
                                     cfg->mqtt_cert_file);
      fail(error, opt, path, why);
      bson_free(why);
   } else {
      ok = true;
   }
   EVP_PKEY_free(key);
   return ok;
}

bool
relay_tls_check_files(const relay_config_t *cfg, int warn_days, bson_string_t *warnings,
                      bson_error_t *error)
{
   if (!cfg->mqtt_uri || !relay_tls_uri(cfg->mqtt_uri)) {
      return true;
   }
   if (cfg->mqtt_ca_file) {
      X509 *ca = read_cert("mqtt-ca-file", cfg->mqtt_ca_file, error);
      if (!ca) {
         return false;
      }
      X509_free(ca);
   }
   if (!cfg->mqtt_cert_file) {
      return true;
   }
   X509 *cert = read_cert("mqtt-cert-file", cfg->mqtt_cert_file, error);
   if (!cert) {
      return false;
   }
   /* Without mqtt-key-file, paho (as OpenSSL) reads the key from the certificate file. */
   const char *key_opt = cfg->mqtt_key_file ? "mqtt-key-file" : "mqtt-cert-file";
   const char *key_path = cfg->mqtt_key_file ? cfg->mqtt_key_file : cfg->mqtt_cert_file;
   bool ok = check_dates(cert, "mqtt-cert-file", cfg->mqtt_cert_file, warn_days, warnings, error) &&
             check_key(cfg, cert, key_opt, key_path, error);
   X509_free(cert);
   return ok;
}
