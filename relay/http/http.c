/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's HTTP endpoint (http.h): /metrics and /healthz on libmicrohttpd's one internal
 * thread, behind the slow-client guard. The relay_http_t is made and destroyed by the main
 * thread; its requests run on the daemon's thread and only read the metrics (atomics).
 */
#include "http/http.h"

#include <netdb.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "http/guard.h"
#include "util/error.h"
#include "util/log.h"

/* What one client may take (see guard.h): a request must arrive whole within 5 s, and
 * at most 64 connections wait on their clients (one more displaces the longest waiting); the
 * hard limit leaves room for the newcomers that displace them. Requests are small GETs: 16 KiB
 * of headers is plenty. */
#define REQUEST_DEADLINE_MS 5000
#define MAX_WAITING 64
#define CONNECTION_LIMIT 256
#define CONNECTION_MEMORY 16384
#define IDLE_TIMEOUT_S 10

struct relay_http_t {
   struct MHD_Daemon *daemon;
   relay_http_guard_t *guard;
   relay_metrics_t *metrics;
   uint16_t port;
};

/* Splits "HOST:PORT" or "[V6HOST]:PORT" into @host (bson_malloc'd) and @port. */
static bool
split_listen(const char *listen, char **host, char **port, bson_error_t *error)
{
   const char *colon;
   const char *h = listen;
   size_t hlen;

   if (listen[0] == '[') {
      const char *close = strchr(listen, ']');
      if (!close || close[1] != ':') {
         goto bad;
      }
      h = listen + 1;
      hlen = (size_t)(close - h);
      colon = close + 1;
   } else {
      colon = strrchr(listen, ':');
      if (!colon) {
         goto bad;
      }
      hlen = (size_t)(colon - listen);
   }
   if (hlen == 0 || colon[1] == '\0' || strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
      goto bad;
   }
   *host = bson_strndup(h, hlen);
   *port = bson_strdup(colon + 1);
   return true;
bad:
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                  "metrics-listen: expected HOST:PORT (e.g. 127.0.0.1:9464 or [::1]:9464), "
                  "got '%s'",
                  listen);
   return false;
}

static bool
resolve(const char *listen, struct sockaddr_storage *addr, bson_error_t *error)
{
   char *host = NULL;
   char *port = NULL;
   struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
   struct addrinfo *res = NULL;
   bool ok = false;

   if (!split_listen(listen, &host, &port, error)) {
      return false;
   }
   if (atoi(port) > 65535) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "metrics-listen: port %s out of range in '%s'", port, listen);
      goto done;
   }
   int rc = getaddrinfo(host, port, &hints, &res);
   if (rc != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_LISTEN,
                     "metrics-listen: cannot resolve '%s': %s", host, gai_strerror(rc));
      goto done;
   }
   memcpy(addr, res->ai_addr, res->ai_addrlen);
   ok = true;
done:
   if (res) {
      freeaddrinfo(res);
   }
   bson_free(host);
   bson_free(port);
   return ok;
}

static enum MHD_Result
respond(struct MHD_Connection *conn, unsigned int status, const char *type, const char *body,
        size_t len)
{
   struct MHD_Response *resp =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
   if (!resp) {
      return MHD_NO;
   }
   MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
   /* Scrapes and probes must always see the current state. */
   MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
   enum MHD_Result ret = MHD_queue_response(conn, status, resp);
   MHD_destroy_response(resp);
   return ret;
}

static enum MHD_Result
serve_metrics(relay_http_t *http, struct MHD_Connection *conn)
{
   bson_string_t *body = bson_string_new(NULL);
   relay_metrics_render(http->metrics, body);
   enum MHD_Result ret =
      respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body->str, body->len);
   bson_string_free(body, true);
   return ret;
}

static enum MHD_Result
serve_health(relay_http_t *http, struct MHD_Connection *conn)
{
   const char *reason = NULL;
   char body[512];
   if (relay_metrics_healthy(http->metrics, &reason)) {
      /* A group member says whether it publishes (owns partitions) or waits as a standby:
       * both are healthy. */
      const char *role = relay_metrics_role(http->metrics);
      /* Entries that do not expire do not stop publishing: a warning, not a failure (a
       * liveness probe would restart the relay for it, and a restart cannot fix it). */
      bool no_ttl = relay_metrics_get_gauge(http->metrics, RELAY_G_ARCHIVE_TTL_MISSING) == 1.0;
      /* Members that publish otherwise: expected while a rolling change goes through the
       * group, so not a failure (the readiness of the new members would stop the rollout). */
      bool output = relay_metrics_get_gauge(http->metrics, RELAY_G_GROUP_OUTPUT_MISMATCH) == 1.0;
      int n = snprintf(body, sizeof body, "ok%s%s%s%s\n", role ? ": " : "", role ? role : "",
                       no_ttl ? " (warning: --archive-ttl not in force, archive entries do not "
                                "expire; see the log)"
                              : "",
                       output ? " (warning: group members publish with other settings; a "
                                "rolling change? see the log)"
                              : "");
      return respond(conn, MHD_HTTP_OK, "text/plain; charset=utf-8", body, (size_t)n);
   }
   int n = snprintf(body, sizeof body, "%s\n", reason);
   if (n < 0 || (size_t)n >= sizeof body) {
      n = (int)sizeof body - 1; /* cut (never sent past the buffer) */
   }
   return respond(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body, (size_t)n);
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
       const char *version, const char *upload_data, size_t *upload_data_size, void **con_cls)
{
   relay_http_t *http = cls;
   static const char not_found[] = "not found\n";
   static const char not_allowed[] = "method not allowed\n";

   relay_http_guard_received(http->guard, conn);
   if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
      return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", not_allowed,
                     sizeof not_allowed - 1);
   }
   if (strcmp(url, "/metrics") == 0) {
      return serve_metrics(http, conn);
   }
   if (strcmp(url, "/healthz") == 0) {
      return serve_health(http, conn);
   }
   return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
                  sizeof not_found - 1);
}

static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
          enum MHD_RequestTerminationCode toe)
{
   relay_http_t *http = cls;
   relay_http_guard_done(http->guard, conn);
}

static void
mhd_logger(void *cls, const char *fmt, va_list ap)
{
   char buf[512];
   vsnprintf(buf, sizeof buf, fmt, ap);
   /* MHD's messages end in a newline; relay_log adds its own. */
   size_t len = strlen(buf);
   while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r')) {
      buf[--len] = '\0';
   }
   /* Once running, libmicrohttpd reports what clients did wrong (a closed socket, a request
    * cut at its deadline): nothing an operator can act on, and a flood of them under attack.
    * Start-up failures are reported by relay_http_start() itself. */
   relay_log(RELAY_LOG_DEBUG, "http", "%s", buf);
}

relay_http_t *
relay_http_start(const char *listen, relay_metrics_t *metrics, bson_error_t *error)
{
   struct sockaddr_storage addr = {0};
   if (!listen || !resolve(listen, &addr, error)) {
      if (!listen) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "metrics-listen: no address given");
      }
      return NULL;
   }
   relay_http_t *http = bson_malloc0(sizeof *http);
   http->metrics = metrics;
   http->guard = relay_http_guard_new(MAX_WAITING, REQUEST_DEADLINE_MS);
   /* poll(), not select() (it fails once descriptors pass 1024) and not epoll: libmicrohttpd
    * 0.9.75's epoll loop calls epoll_wait() again with the full timeout after a batch of 128
    * events, so after many connections closed at once the stop (or those events) waited up
    * to the idle timeout. */
   unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
   if (addr.ss_family == AF_INET6) {
      flags |= MHD_USE_IPv6;
   }
   /* This endpoint serves a scraper and a probe: slow or stuck clients must not take it off
    * line (guard.h). The logger goes first, or MHD reports options before it on its own
    * stderr logger. */
   http->daemon =
      http->guard
         ? MHD_start_daemon(
              flags, 0, NULL, NULL, handle, http, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_CONNECTION_LIMIT,
              (unsigned int)CONNECTION_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT,
              (unsigned int)IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
              (size_t)CONNECTION_MEMORY, MHD_OPTION_NOTIFY_CONNECTION, relay_http_guard_notify,
              http->guard, MHD_OPTION_NOTIFY_COMPLETED, completed, http,
              MHD_OPTION_UNESCAPE_CALLBACK, relay_http_guard_unescape, NULL, MHD_OPTION_END)
         : NULL;
   if (!http->daemon) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_LISTEN,
                     "metrics-listen: cannot listen on '%s' (address in use?)", listen);
      relay_http_guard_destroy(http->guard);
      bson_free(http);
      return NULL;
   }
   const union MHD_DaemonInfo *info = MHD_get_daemon_info(http->daemon, MHD_DAEMON_INFO_BIND_PORT);
   http->port = info ? info->port : 0;
   return http;
}

uint16_t
relay_http_port(const relay_http_t *http)
{
   return http ? http->port : 0;
}

void
relay_http_stop(relay_http_t *http)
{
   if (!http) {
      return;
   }
   MHD_stop_daemon(http->daemon);
   relay_http_guard_destroy(http->guard);
   bson_free(http);
}
