/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: W3C trace context checks, continuing a trace, and the headers
 * outbox_event_set_trace_context() stores (outbox/trace.h).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "event-private.h"
#include "outbox/trace.h"

#define TP "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

Test(traceparent, valid_and_invalid)
{
   static const char *const good[] = {
      TP, "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",       /* later version */
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", /* with more fields */
   };
   static const char *const bad[] = {
      "",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",   /* short */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* v00 with more */
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace id */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent id */
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version ff */
      "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* separator */
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",  /* flags not hex */
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* later version, no '-' */
   };
   for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
      cr_assert(outbox_traceparent_is_valid(good[i]), "refused %s", good[i]);
   }
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      cr_assert(!outbox_traceparent_is_valid(bad[i]), "accepted %s", bad[i]);
   }
   cr_assert(!outbox_traceparent_is_valid(NULL));
}

Test(tracestate, valid_and_invalid)
{
   static const char *const good[] = {
      "congo=t61rcWkgMzE",
      "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
      " rojo=1 , ,congo=2\t",
      "tenant@vendor=x",
      "",
   };
   static const char *const bad[] = {
      "Rojo=1",               /* uppercase key */
      "rojo",                 /* no value */
      "rojo=",                /* empty value */
      "rojo=a=b",             /* '=' in the value */
      "rojo=1 ,=2",           /* empty key */
      "rojo=\x01",            /* control character */
      "@vendor=x",            /* empty tenant */
      "t@vendorwaytoolong=x", /* system longer than 14 */
   };
   char many[400] = "";
   char huge[600];

   for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
      cr_assert(outbox_tracestate_is_valid(good[i]), "refused '%s'", good[i]);
   }
   for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      cr_assert(!outbox_tracestate_is_valid(bad[i]), "accepted '%s'", bad[i]);
   }
   for (int i = 0; i < 33; i++) { /* one member more than W3C allows */
      char m[16];
      snprintf(m, sizeof m, "%sk%d=v", i ? "," : "", i);
      strcat(many, m);
   }
   cr_assert(!outbox_tracestate_is_valid(many));
   memset(huge, 'a', sizeof huge - 1);
   huge[0] = 'k', huge[1] = '=';
   huge[sizeof huge - 1] = '\0';
   cr_assert(!outbox_tracestate_is_valid(huge));
   cr_assert(!outbox_tracestate_is_valid(NULL));
}

Test(traceparent, continue_keeps_trace_id_and_flags)
{
   char a[OUTBOX_TRACEPARENT_LEN + 1], b[OUTBOX_TRACEPARENT_LEN + 1];

   cr_assert(outbox_traceparent_continue(TP, a));
   cr_assert(outbox_traceparent_continue(TP, b));
   cr_assert(outbox_traceparent_is_valid(a), "%s", a);
   cr_assert_eq(strncmp(a, TP, 36), 0, "trace id changed: %s", a);
   cr_assert_str_eq(a + 53, "01");
   cr_assert_neq(strncmp(a + 36, TP + 36, 16), 0, "kept the parent's span id: %s", a);
   cr_assert_neq(strcmp(a, b), 0, "two spans with one id: %s", a);
}

Test(traceparent, continue_starts_a_new_trace_without_a_valid_parent)
{
   const char *incoming[] = {NULL, "", "garbage",
                             "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"};
   for (size_t i = 0; i < sizeof incoming / sizeof incoming[0]; i++) {
      char out[OUTBOX_TRACEPARENT_LEN + 1];
      cr_assert(!outbox_traceparent_continue(incoming[i], out));
      cr_assert(outbox_traceparent_is_valid(out), "%s", out);
      cr_assert_neq(strncmp(out + 3, TP + 3, 32), 0);
      cr_assert_str_eq(out + 53, "00");
   }
}

static const char *
header(const outbox_event_t *ev, const char *key)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, &ev->headers, key) ? bson_iter_utf8(&it, NULL) : NULL;
}

Test(event_trace, stores_headers_and_replaces_them)
{
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t error;

   cr_assert(outbox_event_set_header(ev, "tenant", "acme", &error), "%s", error.message);
   cr_assert(outbox_event_set_trace_context(ev, TP, "rojo=1", &error), "%s", error.message);
   cr_assert_str_eq(header(ev, "traceparent"), TP);
   cr_assert_str_eq(header(ev, "tracestate"), "rojo=1");
   cr_assert_str_eq(header(ev, "tenant"), "acme");
   /* A second context replaces the first; without a tracestate the old one goes. */
   cr_assert(outbox_event_set_trace_context(
      ev, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", NULL, &error));
   cr_assert_str_eq(header(ev, "traceparent"),
                    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
   cr_assert_null(header(ev, "tracestate"));
   cr_assert_str_eq(header(ev, "tenant"), "acme");
   cr_assert_eq(bson_count_keys(&ev->headers), 2);
   cr_assert(outbox_event_validate(ev, &error), "%s", error.message);
   outbox_event_destroy(ev);
}

Test(event_trace, refuses_invalid_values_and_leaves_the_event)
{
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t error;

   cr_assert(outbox_event_set_trace_context(ev, TP, NULL, &error));
   cr_assert(!outbox_event_set_trace_context(ev, "00-bad", NULL, &error));
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert(!outbox_event_set_trace_context(ev, TP, "Bad=1", &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert(!outbox_event_set_trace_context(NULL, TP, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_str_eq(header(ev, "traceparent"), TP);
   cr_assert_eq(bson_count_keys(&ev->headers), 1);
   outbox_event_destroy(ev);
}
