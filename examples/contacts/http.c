/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The HTTP server: connection handling, body collection, routing and responses.
 */
#include "http-private.h"

#include <netdb.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "http/guard.h" /* shared with the relay */
#include "representation.h"

/* What one client may take (see relay/http/guard.h): a request must arrive whole within
 * 10 s of the connection (or of its previous request), at most 128 connections wait on their
 * clients (one more displaces the longest waiting), 512 connections in all. */
#define REQUEST_DEADLINE_MS 10000
#define MAX_WAITING 128
#define CONNECTION_LIMIT 512

struct _http_server_t {
   struct MHD_Daemon *daemon;
   relay_http_guard_t *guard;
   repository_t *repo;
};

/* Per-connection upload state, kept by libmicrohttpd between calls of on_request(). */
typedef struct {
   char *body;
   size_t len;
   bool too_big;
} upload_t;

enum MHD_Result
http_respond(call_t *call, unsigned status, bson_string_t *body, int64_t etag, const char *location)
{
   struct MHD_Response *resp;
   enum MHD_Result ret;
   char tag[32];

   resp = MHD_create_response_from_buffer(body ? body->len : 0, body ? body->str : (void *)"",
                                          MHD_RESPMEM_MUST_COPY);
   if (body) {
      MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
      bson_string_free(body, true);
   }
   if (etag > 0) {
      snprintf(tag, sizeof tag, "\"%lld\"", (long long)etag);
      MHD_add_response_header(resp, MHD_HTTP_HEADER_ETAG, tag);
   }
   if (location)
      MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
   if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
      MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW,
                              strcmp(call->url, "/contacts") ? "GET, HEAD, PUT, PATCH, DELETE"
                                                             : "GET, HEAD, POST");
   ret = MHD_queue_response(call->conn, status, resp);
   MHD_destroy_response(resp);
   /* One line per request: what the demo (and an operator) wants to see. */
   if (call->trace.traceparent[0])
      fprintf(stderr, "contacts-service: %s %s -> %u trace %.32s\n", call->method, call->url,
              status, call->trace.traceparent + 3);
   else
      fprintf(stderr, "contacts-service: %s %s -> %u\n", call->method, call->url, status);
   return ret;
}

enum MHD_Result
http_fail(call_t *call, unsigned status, const char *slug, const char *field, const char *message,
          int64_t etag)
{
   bson_string_t *out = bson_string_new("{\"error\":");

   json_append_string(out, slug);
   bson_string_append(out, ",\"message\":");
   json_append_string(out, message);
   if (field && *field) {
      bson_string_append(out, ",\"field\":");
      json_append_string(out, field);
   }
   bson_string_append(out, "}\n");
   return http_respond(call, status, out, etag, NULL);
}

enum MHD_Result
http_fail_repo(call_t *call, repo_status_t status, int64_t version, const bson_error_t *error)
{
   char msg[200];

   switch (status) {
   case REPO_NOT_FOUND:
      return http_fail(call, MHD_HTTP_NOT_FOUND, "not-found", NULL, "no such contact", 0);
   case REPO_CONFLICT:
      snprintf(msg, sizeof msg,
               "the contact was changed by someone else; its version is now %lld: GET it "
               "again and retry",
               (long long)version);
      return http_fail(call, MHD_HTTP_PRECONDITION_FAILED, "precondition-failed", NULL, msg,
                       version);
   case REPO_BUSY:
      return http_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE, "busy", NULL,
                       "too many unpublished events for this contact (is outbox-relay "
                       "running?); retry later",
                       0);
   case REPO_UNAVAILABLE:
      fprintf(stderr, "contacts-service: MongoDB unavailable: %s\n", error->message);
      return http_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE, "unavailable", NULL,
                       "the database is not reachable; retry later", 0);
   case REPO_OK:
   case REPO_ERROR:
      break;
   }
   fprintf(stderr, "contacts-service: storage error: %s\n", error->message);
   return http_fail(call, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal", NULL,
                    "the contact could not be stored or read", 0);
}

/* ---- routing ------------------------------------------------------------------------------ */

static enum MHD_Result
route(call_t *call)
{
   const char *m = call->method;
   const char *rest;

   if (!strcmp(call->url, "/healthz"))
      return http_respond(call, MHD_HTTP_OK, bson_string_new("{\"status\":\"ok\"}\n"), 0, NULL);
   if (!strcmp(call->url, "/contacts")) {
      if (!strcmp(m, MHD_HTTP_METHOD_GET) || !strcmp(m, MHD_HTTP_METHOD_HEAD))
         return handle_list(call);
      if (!strcmp(m, MHD_HTTP_METHOD_POST))
         return handle_create(call);
      return http_fail(call, MHD_HTTP_METHOD_NOT_ALLOWED, "method-not-allowed", NULL,
                       "use GET, HEAD or POST on /contacts", 0);
   }
   if (strncmp(call->url, "/contacts/", 10) != 0 || strchr(call->url + 10, '/'))
      return http_fail(call, MHD_HTTP_NOT_FOUND, "not-found", NULL,
                       "no such resource; see /contacts", 0);
   rest = call->url + 10;
   /* HEAD answers like GET; libmicrohttpd sends the headers (Content-Length included) and
    * leaves the body out. */
   if (!strcmp(m, MHD_HTTP_METHOD_GET) || !strcmp(m, MHD_HTTP_METHOD_HEAD))
      return handle_get(call, rest);
   if (!strcmp(m, MHD_HTTP_METHOD_PUT))
      return handle_put(call, rest);
   if (!strcmp(m, MHD_HTTP_METHOD_PATCH))
      return handle_patch(call, rest);
   if (!strcmp(m, MHD_HTTP_METHOD_DELETE))
      return handle_delete(call, rest);
   return http_fail(call, MHD_HTTP_METHOD_NOT_ALLOWED, "method-not-allowed", NULL,
                    "use GET, HEAD, PUT, PATCH or DELETE on /contacts/{id}", 0);
}

/* Whether a body follows the headers (announced by Content-Length or chunked encoding). */
static bool
upload_expected(struct MHD_Connection *conn)
{
   const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");
   const char *te = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Transfer-Encoding");

   return (cl && strtoull(cl, NULL, 10) > 0) || te;
}

/* Refuses oversized bodies before reading them when the client announced the size. */
static bool
announced_too_big(struct MHD_Connection *conn)
{
   const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Length");

   return cl && strtoull(cl, NULL, 10) > HTTP_MAX_BODY;
}

/* W3C Trace Context: the request's span continues the caller's trace (same trace id, a new
 * span id) or, without a valid traceparent, starts one; a tracestate goes along only with a
 * valid parent and only when it is valid itself (the first field, when several came). */
static void
trace_from_request(struct MHD_Connection *conn, repo_trace_t *trace)
{
   const char *tp = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "traceparent");
   const char *ts = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "tracestate");

   trace->tracestate = NULL;
   if (outbox_traceparent_continue(tp, trace->traceparent) && ts && *ts &&
       outbox_tracestate_is_valid(ts))
      trace->tracestate = ts; /* valid while the request is being answered */
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
           const char *version, const char *upload_data, size_t *upload_size, void **state)
{
   http_server_t *server = cls;
   upload_t *up = *state;
   call_t call = {.conn = conn, .repo = server->repo, .method = method, .url = url};

   if (!up) {
      *state = up = bson_malloc0(sizeof *up);
      if (!upload_expected(conn))
         relay_http_guard_received(server->guard, conn); /* nothing more to wait for */
      if (announced_too_big(conn)) {
         up->too_big = true;
         return http_fail(&call, MHD_HTTP_CONTENT_TOO_LARGE, "too-large", NULL,
                          "the request body is larger than 64 KiB", 0);
      }
      return MHD_YES;
   }
   if (*upload_size) {
      /* Keep counting but stop storing once over the cap, so a huge body costs no memory. */
      if (!up->too_big && up->len + *upload_size <= HTTP_MAX_BODY) {
         up->body = bson_realloc(up->body, up->len + *upload_size + 1);
         memcpy(up->body + up->len, upload_data, *upload_size);
         up->len += *upload_size;
         up->body[up->len] = '\0';
      } else {
         up->too_big = true;
      }
      *upload_size = 0;
      return MHD_YES;
   }
   relay_http_guard_received(server->guard, conn); /* the body is complete */
   if (up->too_big)
      return http_fail(&call, MHD_HTTP_CONTENT_TOO_LARGE, "too-large", NULL,
                       "the request body is larger than 64 KiB", 0);
   call.body = up->body ? up->body : "";
   call.len = up->len;
   trace_from_request(conn, &call.trace);
   return route(&call);
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **state,
             enum MHD_RequestTerminationCode toe)
{
   http_server_t *server = cls;
   upload_t *up = *state;

   relay_http_guard_done(server->guard, conn);
   if (up) {
      bson_free(up->body);
      bson_free(up);
      *state = NULL;
   }
}

/* ---- server ------------------------------------------------------------------------------- */

static bool
resolve(const char *listen, struct sockaddr_storage *addr, char *err, size_t errlen)
{
   char host[256];
   const char *colon = strrchr(listen, ':');
   struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
   int rc;

   if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host || !colon[1]) {
      snprintf(err, errlen, "--listen must be HOST:PORT, e.g. 127.0.0.1:8080 (got '%s')", listen);
      return false;
   }
   memcpy(host, listen, (size_t)(colon - listen));
   host[colon - listen] = '\0';
   if ((rc = getaddrinfo(host, colon + 1, &hints, &res)) != 0) {
      snprintf(err, errlen, "cannot use --listen '%s': %s", listen, gai_strerror(rc));
      return false;
   }
   memcpy(addr, res->ai_addr, res->ai_addrlen);
   freeaddrinfo(res);
   return true;
}

http_server_t *
http_server_start(repository_t *repo, const char *listen, uint16_t *port, char *err, size_t errlen)
{
   struct sockaddr_storage addr = {0};
   http_server_t *server;
   const union MHD_DaemonInfo *info;

   if (!resolve(listen, &addr, err, errlen))
      return NULL;
   server = bson_malloc0(sizeof *server);
   server->repo = repo;
   server->guard = relay_http_guard_new(MAX_WAITING, REQUEST_DEADLINE_MS);
   /* poll(), not epoll: after 128 events at once (1,000 clients leaving) libmicrohttpd
    * 0.9.75's epoll loop waits again with the full timeout, and stopping hung for 30 s.
    * The unescape callback keeps "%00" encoded: a decoded NUL would silently cut
    * "/contacts/<id>%00anything" down to a valid id; left encoded, the id is invalid (400). */
   server->daemon =
      !server->guard
         ? NULL
         : MHD_start_daemon(
              MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, server,
              MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr, MHD_OPTION_THREAD_POOL_SIZE,
              (unsigned)4, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_NOTIFY_COMPLETED,
              on_completed, server, MHD_OPTION_UNESCAPE_CALLBACK, relay_http_guard_unescape, NULL,
              MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTION_LIMIT, MHD_OPTION_NOTIFY_CONNECTION,
              relay_http_guard_notify, server->guard, MHD_OPTION_END);
   if (!server->daemon) {
      snprintf(err, errlen, "cannot listen on %s (address in use?)", listen);
      relay_http_guard_destroy(server->guard);
      bson_free(server);
      return NULL;
   }
   info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
   *port = info ? info->port : 0;
   return server;
}

void
http_server_stop(http_server_t *server)
{
   if (!server)
      return;
   MHD_stop_daemon(server->daemon);
   relay_http_guard_destroy(server->guard);
   bson_free(server);
}
