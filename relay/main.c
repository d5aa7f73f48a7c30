/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-relay entry point: arguments, signals, set-up and exit code only; the work happens
 * in relay_run().
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "config.h"
#include "http.h"
#include "log.h"
#include "metrics.h"
#include "relay.h"
#include "version.h"

/* The relay a signal handler stops. Set while relay_run() may be running; cleared with the
 * stop signals blocked, so a handler never sees a relay being destroyed. */
static relay_t *_Atomic running_relay;
static atomic_int stop_signals;

static void
on_stop_signal(int sig)
{
   /* A second signal means the operator does not want to wait for the drain: exiting now
    * re-publishes the unacknowledged tail on the next start, but loses nothing. */
   if (atomic_fetch_add(&stop_signals, 1) > 0) {
      static const char msg[] = "outbox-relay: second stop signal, exiting at once\n";
      ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
      (void)ignored;
      _exit(128 + sig);
   }
   relay_t *relay = atomic_load(&running_relay);
   if (relay) {
      relay_request_stop(relay);
   }
}

static void
on_hup(int sig)
{
   relay_log_request_reopen();
}

static void
install_signals(void)
{
   struct sigaction sa = {0};
   sigemptyset(&sa.sa_mask);
   sa.sa_flags = SA_RESTART;
   sa.sa_handler = on_stop_signal;
   sigaction(SIGTERM, &sa, NULL);
   sigaction(SIGINT, &sa, NULL);
   sa.sa_handler = on_hup;
   sigaction(SIGHUP, &sa, NULL);
   /* paho writes to sockets the broker may have closed (crashes reported on reconnect). */
   sa.sa_handler = SIG_IGN;
   sigaction(SIGPIPE, &sa, NULL);
}

static void
set_running(relay_t *relay)
{
   sigset_t stop, old;
   sigemptyset(&stop);
   sigaddset(&stop, SIGTERM);
   sigaddset(&stop, SIGINT);
   pthread_sigmask(SIG_BLOCK, &stop, &old);
   atomic_store(&running_relay, relay);
   pthread_sigmask(SIG_SETMASK, &old, NULL);
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
   /* A signal that arrived before the relay existed still counts. */
   if (atomic_load(&stop_signals) > 0) {
      relay_request_stop(relay);
   }
   int rc = relay_run(relay);
   set_running(NULL);
   relay_destroy(relay);
   return rc;
}

static int
run(const relay_config_t *cfg)
{
   bson_error_t error;
   if (!relay_log_init(cfg->log_level, cfg->log_format, cfg->log_file, &error)) {
      fprintf(stderr, "outbox-relay: %s\n", error.message);
      return EX_CANTCREAT;
   }
   relay_log_route_dependencies(); /* before mongoc_init(), which reads the handler */
   mongoc_init();
   install_signals();

   relay_metrics_t *metrics = relay_metrics_new();
   relay_metrics_set_name(metrics, cfg->name);
   bson_string_t *line = bson_string_new(NULL);
   relay_config_dump_line(cfg, line);
   relay_log(RELAY_LOG_INFO, "main", "starting outbox-relay %s (pid %d): %s", relay_version(),
             (int)getpid(), line->str);
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
   relay_log(rc == EX_OK ? RELAY_LOG_INFO : RELAY_LOG_ERROR, "main", "stopped, exit status %d",
             rc);
   mongoc_cleanup();
   relay_log_shutdown();
   return rc;
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
      dump = bson_string_new(NULL);
      relay_config_dump(&cfg, dump);
      fputs(dump->str, stdout);
      bson_string_free(dump, true);
      break;
   case RELAY_CONFIG_RUN:
      rc = run(&cfg);
      break;
   }
   relay_config_destroy(&cfg);
   return rc;
}
