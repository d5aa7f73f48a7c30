/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-relay entry point: arguments, signals, set-up and exit code only; the work happens
 * in relay_run().
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "http/http.h"
#include "util/log.h"
#include "http/metrics.h"
#include "relay.h"
#include "config/reload.h"
#include "store/concerns.h"
#include "util/redact.h"
#include "util/version.h"
#include "mqtt/tls.h"

/* Signals are handled by one thread that waits for them (sigwait), not by handlers: every
 * thread (paho's, mongoc's, the HTTP server's) inherits the blocked mask, so a signal can
 * never interrupt code holding a lock, and the thread may log and take a mutex. */
static pthread_mutex_t running_mutex = PTHREAD_MUTEX_INITIALIZER;
static relay_t *running_relay; /* guarded by running_mutex */
static int stop_signals;       /* guarded by running_mutex */
static sigset_t handled;
static pthread_t signal_thread;
/* What SIGHUP reloads from: set once before the signal thread starts. */
static const relay_config_t *loaded_cfg;
static int saved_argc;
static char **saved_argv;

static void
on_stop_signal(int sig)
{
   const char *name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
   pthread_mutex_lock(&running_mutex);
   int n = ++stop_signals;
   if (running_relay) {
      relay_request_stop(running_relay);
   }
   pthread_mutex_unlock(&running_mutex);
   /* A second signal means the operator does not want to wait for the drain: exiting now
    * re-publishes the unacknowledged tail on the next start, but loses nothing. */
   if (n > 1) {
      relay_log(RELAY_LOG_WARNING, "main", "%s again: exiting at once", name);
      _exit(128 + sig);
   }
   relay_log(RELAY_LOG_INFO, "main", "%s: stopping (send it again to exit at once)", name);
}

static void *
wait_for_signals(void *arg)
{
   for (;;) {
      int sig;
      if (sigwait(&handled, &sig) != 0) {
         continue;
      }
      if (sig == SIGHUP) {
         /* Not in a handler, so files can be read and reopened right here. */
         relay_reload(loaded_cfg, saved_argc, saved_argv);
      } else {
         on_stop_signal(sig);
      }
   }
   return NULL;
}

/* Must run before any other thread exists, so that all of them inherit the mask. */
static bool
start_signal_thread(void)
{
   struct sigaction ignore = {.sa_handler = SIG_IGN};
   /* paho writes to sockets the broker may have closed (crashes reported on reconnect). */
   sigaction(SIGPIPE, &ignore, NULL);
   sigemptyset(&handled);
   sigaddset(&handled, SIGTERM);
   sigaddset(&handled, SIGINT);
   sigaddset(&handled, SIGHUP);
   pthread_sigmask(SIG_BLOCK, &handled, NULL);
   return pthread_create(&signal_thread, NULL, wait_for_signals, NULL) == 0;
}

static void
stop_signal_thread(void)
{
   /* sigwait() is a cancellation point. Signals stay blocked: one arriving now is moot. */
   pthread_cancel(signal_thread);
   pthread_join(signal_thread, NULL);
}

static void
set_running(relay_t *relay)
{
   pthread_mutex_lock(&running_mutex);
   running_relay = relay;
   /* A signal that arrived before the relay existed still counts. */
   if (relay && stop_signals > 0) {
      relay_request_stop(relay);
   }
   pthread_mutex_unlock(&running_mutex);
}

static int
run_relay(const relay_config_t *cfg, relay_metrics_t *metrics)
{
   bson_error_t error;
   relay_t *relay = relay_new(cfg, metrics, &error);
   if (!relay) {
      relay_log(RELAY_LOG_ERROR, "main", "cannot start: %s", error.message);
      return EX_CONFIG;
   }
   set_running(relay);
   int rc = relay_run(relay);
   set_running(NULL);
   relay_destroy(relay);
   return rc;
}

static int
run(const relay_config_t *cfg, int argc, char **argv)
{
   bson_error_t error;
   loaded_cfg = cfg;
   saved_argc = argc;
   saved_argv = argv;
   if (!relay_log_init(cfg->log_level, cfg->log_format, cfg->log_file, &error)) {
      fprintf(stderr, "outbox-relay: %s\n", error.message);
      return EX_CANTCREAT;
   }
   if (!start_signal_thread()) {
      relay_log(RELAY_LOG_ERROR, "main", "cannot start the signal thread");
      return EX_OSERR;
   }
   /* Whatever prints them later (mongoc, paho, our own messages quoting theirs), these
    * never reach the log. */
   relay_redact_register_uri(cfg->mongodb_uri);
   relay_redact_register(cfg->mqtt_password);
   relay_redact_register(cfg->mqtt_key_password);
   relay_log_route_dependencies(); /* before mongoc_init(), which reads the handler */
   mongoc_init();

   relay_metrics_t *metrics = relay_metrics_new();
   relay_metrics_set_name(metrics, cfg->name);
   /* One series per pattern (bounded, whatever the number of tenants): a --collection's is
    * labelled with its name as always, a --namespace's with the pattern. */
   char **labels = bson_malloc0((cfg->n_watch + 1) * sizeof(char *));
   for (size_t i = 0; i < cfg->n_watch; i++) {
      labels[i] = i < cfg->n_collections ? cfg->collections[i] : cfg->watch[i];
   }
   relay_metrics_set_collections(metrics, labels, cfg->n_watch);
   bson_free(labels);
   relay_metrics_set(metrics, RELAY_G_PARTITIONS, cfg->partitions);
   bson_string_t *line = bson_string_new(NULL);
   relay_config_dump_line(cfg, line);
   relay_log(RELAY_LOG_INFO, "main", "starting outbox-relay %s (pid %d): %s", relay_version(),
             (int)getpid(), line->str);
   bson_string_truncate(line, 0);
   relay_concerns_overridden(cfg, line);
   if (line->len) {
      relay_log(RELAY_LOG_INFO, "main",
                "mongodb-uri: the relay's own operations ignore %s (README.md, \"Replica sets "
                "and sharded clusters\")",
                line->str);
   }
   bson_string_free(line, true);

   int rc = EX_OK;
   relay_http_t *http = NULL;
   if (cfg->metrics_listen) {
      http = relay_http_start(cfg->metrics_listen, metrics, &error);
      if (!http) {
         relay_log(RELAY_LOG_ERROR, "main", "%s", error.message);
         rc = EX_UNAVAILABLE;
      } else {
         relay_log(RELAY_LOG_INFO, "http", "serving /metrics and /healthz on %s (port %u)",
                   cfg->metrics_listen, (unsigned)relay_http_port(http));
      }
   }
   if (rc == EX_OK) {
      rc = run_relay(cfg, metrics);
   }
   relay_http_stop(http);
   relay_metrics_destroy(metrics);
   relay_log(rc == EX_OK ? RELAY_LOG_INFO : RELAY_LOG_ERROR, "main", "stopped, exit status %d", rc);
   mongoc_cleanup();
   stop_signal_thread();
   relay_log_shutdown();
   relay_redact_forget_all();
   return rc;
}

/* --check-config: the TLS files as the relay would read them (an error exits 78 after the
 * dump; a certificate close to its expiry is a warning). */
static int
check_files(const relay_config_t *cfg)
{
   bson_error_t error;
   bson_string_t *warnings = bson_string_new(NULL);
   bool ok = relay_tls_check_files(cfg, RELAY_TLS_WARN_DAYS, warnings, &error);
   if (warnings->len) {
      fprintf(stderr, "outbox-relay: warning: %s", warnings->str);
   }
   bson_string_free(warnings, true);
   if (!ok) {
      fprintf(stderr, "outbox-relay: %s\n", error.message);
   }
   return ok ? EX_OK : EX_CONFIG;
}

int
main(int argc, char **argv)
{
   relay_config_t cfg;
   bson_error_t error;
   bson_string_t *dump;
   int rc = EX_OK;

   relay_config_init_defaults(&cfg);
   switch (relay_config_load(&cfg, argc, argv, &error)) {
   case RELAY_CONFIG_HELP:
      relay_config_usage(stdout);
      break;
   case RELAY_CONFIG_VERSION:
      fputs(relay_version_long(), stdout);
      break;
   case RELAY_CONFIG_USAGE_ERROR:
      fprintf(stderr, "outbox-relay: %s\n", error.message);
      rc = EX_USAGE;
      break;
   case RELAY_CONFIG_INVALID:
      fprintf(stderr, "outbox-relay: %s\n", error.message);
      rc = EX_CONFIG;
      break;
   case RELAY_CONFIG_CHECK:
      rc = check_files(&cfg);
      dump = bson_string_new(NULL);
      relay_config_dump(&cfg, dump);
      relay_concerns_describe(&cfg, dump);
      fputs(dump->str, stdout);
      bson_string_free(dump, true);
      break;
   case RELAY_CONFIG_RUN:
      rc = run(&cfg, argc, argv);
      break;
   }
   relay_config_destroy(&cfg);
   return rc;
}
