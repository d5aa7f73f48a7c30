/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The HTTP endpoint on loopback, port 0, talked to with a plain socket.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http/http.h"

static relay_metrics_t *metrics;
static relay_http_t *http;

static void
setup(void)
{
   bson_error_t error;
   metrics = relay_metrics_new();
   http = relay_http_start("127.0.0.1:0", metrics, &error);
   cr_assert_not_null(http, "%s", error.message);
   cr_assert_gt(relay_http_port(http), 0);
}

static void
teardown(void)
{
   relay_http_stop(http);
   relay_metrics_destroy(metrics);
}

TestSuite(http, .init = setup, .fini = teardown);

/* Sends @request and returns the whole response (the server closes: HTTP/1.0). */
static char *
fetch_raw(int family, uint16_t port, const char *request)
{
   struct sockaddr_storage ss = {0};
   socklen_t len;
   if (family == AF_INET6) {
      struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
      a->sin6_family = AF_INET6;
      a->sin6_port = htons(port);
      a->sin6_addr = in6addr_loopback;
      len = sizeof *a;
   } else {
      struct sockaddr_in *a = (struct sockaddr_in *)&ss;
      a->sin_family = AF_INET;
      a->sin_port = htons(port);
      a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      len = sizeof *a;
   }
   int fd = socket(family, SOCK_STREAM, 0);
   cr_assert_geq(fd, 0);
   cr_assert_eq(connect(fd, (struct sockaddr *)&ss, len), 0, "connect: %s", strerror(errno));
   cr_assert_eq(write(fd, request, strlen(request)), (ssize_t)strlen(request));
   bson_string_t *resp = bson_string_new(NULL);
   char buf[4096];
   ssize_t n;
   while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
      buf[n] = '\0';
      bson_string_append(resp, buf);
   }
   close(fd);
   return bson_string_free(resp, false);
}

static char *
fetch(const char *method, const char *target)
{
   char request[256];
   snprintf(request, sizeof request, "%s %s HTTP/1.0\r\nHost: localhost\r\n\r\n", method, target);
   return fetch_raw(AF_INET, relay_http_port(http), request);
}

/* MHD may answer 1.0 or 1.1; only the status code matters. */
static int
status_of(const char *resp)
{
   cr_assert_eq(strncmp(resp, "HTTP/1.", 7), 0, "%s", resp);
   return atoi(resp + 9);
}

static const char *
body_of(const char *resp)
{
   const char *b = strstr(resp, "\r\n\r\n");
   cr_assert_not_null(b, "no header end: %s", resp);
   return b + 4;
}

Test(http, metrics_endpoint)
{
   relay_metrics_add(metrics, RELAY_M_PUBLISHED, 42);
   char *resp = fetch("GET", "/metrics");
   cr_assert_eq(status_of(resp), 200, "%s", resp);
   cr_assert_not_null(strstr(resp, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
                      "%s", resp);
   cr_assert_not_null(strstr(body_of(resp), "\noutbox_relay_events_published_total 42\n"), "%s",
                      resp);
   bson_free(resp);
}

Test(http, healthz_reports_what_is_down)
{
   char *resp = fetch("GET", "/healthz");
   cr_assert_eq(status_of(resp), 503, "%s", resp);
   cr_assert_str_eq(body_of(resp), "MongoDB and MQTT broker not connected\n");
   bson_free(resp);

   relay_metrics_set(metrics, RELAY_G_MONGODB_CONNECTED, 1);
   resp = fetch("GET", "/healthz");
   cr_assert_eq(status_of(resp), 503, "%s", resp);
   cr_assert_str_eq(body_of(resp), "MQTT broker not connected\n");
   bson_free(resp);

   relay_metrics_set(metrics, RELAY_G_MQTT_CONNECTED, 1);
   resp = fetch("GET", "/healthz");
   cr_assert_eq(status_of(resp), 200, "%s", resp);
   cr_assert_str_eq(body_of(resp), "ok\n");
   bson_free(resp);
}

Test(http, unknown_path_404)
{
   char *resp = fetch("GET", "/");
   cr_assert_eq(status_of(resp), 404, "%s", resp);
   bson_free(resp);
   resp = fetch("GET", "/metricsx");
   cr_assert_eq(status_of(resp), 404, "%s", resp);
   bson_free(resp);
}

Test(http, other_methods_405)
{
   char *resp = fetch("POST", "/metrics");
   cr_assert_eq(status_of(resp), 405, "%s", resp);
   bson_free(resp);
}

Test(http, head_has_no_body)
{
   char *resp = fetch("HEAD", "/metrics");
   cr_assert_eq(status_of(resp), 200, "%s", resp);
   cr_assert_str_eq(body_of(resp), "");
   bson_free(resp);
}

Test(http, port_in_use_fails_clearly)
{
   char listen[64];
   bson_error_t error;
   snprintf(listen, sizeof listen, "127.0.0.1:%u", (unsigned)relay_http_port(http));
   relay_http_t *second = relay_http_start(listen, metrics, &error);
   cr_assert_null(second);
   char *expected =
      bson_strdup_printf("metrics-listen: cannot listen on '%s' (address in use?)", listen);
   cr_assert_str_eq(error.message, expected);
   bson_free(expected);
}

Test(http, ipv6_loopback)
{
   bson_error_t error;
   relay_http_t *v6 = relay_http_start("[::1]:0", metrics, &error);
   cr_assert_not_null(v6, "%s", error.message);
   char *resp = fetch_raw(AF_INET6, relay_http_port(v6), "GET /healthz HTTP/1.0\r\n\r\n");
   cr_assert_eq(status_of(resp), 503, "%s", resp);
   bson_free(resp);
   relay_http_stop(v6);
}

Test(http, bad_addresses)
{
   const char *bad[] = {"nonsense",    "127.0.0.1", ":9464",          "127.0.0.1:",
                        "127.0.0.1:x", "[::1]9464", "127.0.0.1:99999"};
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      bson_error_t error = {0};
      cr_assert_null(relay_http_start(bad[i], metrics, &error), "%s accepted", bad[i]);
      cr_assert_eq(strncmp(error.message, "metrics-listen: ", 16), 0, "%s", error.message);
      cr_assert_not_null(strstr(error.message, bad[i]), "%s", error.message);
   }
   relay_http_stop(NULL);
}

/* A decoded NUL cut "/metrics%00" down to "/metrics" (issue 14, 9): any path that is not
 * exactly /metrics or /healthz is 404. */
Test(http, nul_in_path_404)
{
   const char *paths[] = {"/metrics%00", "/healthz%00", "/metrics%00.txt", "/metrics%2500"};
   for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
      char *resp = fetch("GET", paths[i]);
      cr_assert_eq(status_of(resp), 404, "%s: %s", paths[i], resp);
      bson_free(resp);
   }
   char *resp = fetch("GET", "/metric%73");
   cr_assert_eq(status_of(resp), 200, "percent-encoded letters are the same path: %s", resp);
   bson_free(resp);
}

static int
connect_loopback(void)
{
   struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(relay_http_port(http))};
   a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   cr_assert_geq(fd, 0);
   cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0, "connect: %s", strerror(errno));
   return fd;
}

/* A probe: /healthz answered at all within 3 s (a generous bound on a loaded machine: before
 * the guard, it was never answered while slow clients held every slot). */
static void
probe(void)
{
   int fd = connect_loopback();
   struct timeval tv = {.tv_sec = 3};
   setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
   const char *req = "GET /healthz HTTP/1.0\r\n\r\n";
   cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
   char buf[512];
   ssize_t n = read(fd, buf, sizeof buf - 1);
   cr_assert_gt(n, 0, "no answer to a probe within 3 s: %s", n < 0 ? strerror(errno) : "EOF");
   buf[n] = '\0';
   cr_assert_eq(strncmp(buf, "HTTP/1.", 7), 0, "%s", buf);
   close(fd);
}

/* Whether the server has closed @fd (EOF or reset), without blocking. */
static bool
closed_by_server(int fd)
{
   char c;
   ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);
   return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

/* Issue 14, 1: 16 clients sending a byte a second kept every slot (the idle timeout never
 * fired) and probes failed. With 24 of them, every probe is answered, and each slow client is
 * cut once its request's deadline (5 s) passes. */
Test(http, slow_clients_cannot_starve_probes, .timeout = 60)
{
   enum { SLOW = 24 };
   int slow[SLOW];
   for (int i = 0; i < SLOW; i++) {
      slow[i] = connect_loopback();
      cr_assert_eq(send(slow[i], "GET /healthz HTTP/1.1\r\nX-Slow: ", 30, MSG_NOSIGNAL), 30);
   }
   int64_t start = bson_get_monotonic_time();
   int64_t next_byte = start;
   int probes = 0;
   /* A byte a second from each, probes in between, until all are cut (30 s at most). */
   for (;;) {
      int64_t now = bson_get_monotonic_time();
      if (now >= next_byte) {
         for (int i = 0; i < SLOW; i++) {
            send(slow[i], "a", 1, MSG_NOSIGNAL);
         }
         next_byte += 1000000;
      }
      probe();
      probes++;
      int open = 0;
      for (int i = 0; i < SLOW; i++) {
         open += !closed_by_server(slow[i]);
      }
      if (open == 0) {
         break;
      }
      cr_assert_lt(now - start, 30 * 1000000, "%d slow clients still connected after 30 s", open);
      usleep(200000);
   }
   /* Not before the deadline: a slow client that keeps sending is cut by it, not by idling. */
   cr_assert_geq(bson_get_monotonic_time() - start, 4 * 1000000);
   cr_assert_gt(probes, 10);
   for (int i = 0; i < SLOW; i++) {
      close(slow[i]);
   }
}

/* More idle connections than the guard lets wait: the longest waiting are displaced, and
 * probes still get in at once. */
Test(http, idle_flood_cannot_starve_probes, .timeout = 60)
{
   enum { IDLE = 150 };
   int idle[IDLE];
   for (int i = 0; i < IDLE; i++) {
      idle[i] = connect_loopback();
   }
   for (int i = 0; i < 5; i++) {
      probe();
   }
   int cut = 0;
   for (int i = 0; i < IDLE; i++) {
      cut += closed_by_server(idle[i]);
      close(idle[i]);
   }
   cr_assert_gt(cut, 0, "no idle connection was displaced");
}
