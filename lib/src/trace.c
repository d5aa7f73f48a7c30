/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * W3C Trace Context (outbox/trace.h): checks of traceparent and tracestate, continuing a
 * trace with a new span id, and storing both as event headers. Pure functions apart from the
 * random bytes (uuid.c) and the event they are given.
 */
#include "outbox/trace.h"

#include <string.h>

#include "error-private.h"
#include "event-private.h"

#define TRACE_ID_AT 3
#define TRACE_ID_LEN 32
#define PARENT_ID_AT 36
#define PARENT_ID_LEN 16
#define FLAGS_AT 53
#define TRACESTATE_MAX 512
#define TRACESTATE_MEMBERS_MAX 32

static bool
lower_hex(const char *s, size_t len)
{
   for (size_t i = 0; i < len; i++) {
      if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
         return false;
      }
   }
   return true;
}

static bool
all_zeros(const char *s, size_t len)
{
   for (size_t i = 0; i < len; i++) {
      if (s[i] != '0') {
         return false;
      }
   }
   return true;
}

bool
outbox_traceparent_is_valid(const char *tp)
{
   size_t len = tp ? strlen(tp) : 0;

   if (len < OUTBOX_TRACEPARENT_LEN || !lower_hex(tp, 2) || !strncmp(tp, "ff", 2)) {
      return false;
   }
   /* Version 00 is exactly 55 characters; later versions may only add "-..." after them. */
   if (!strncmp(tp, "00", 2)
          ? len != OUTBOX_TRACEPARENT_LEN
          : (len > OUTBOX_TRACEPARENT_LEN && tp[OUTBOX_TRACEPARENT_LEN] != '-')) {
      return false;
   }
   return tp[2] == '-' && tp[PARENT_ID_AT - 1] == '-' && tp[FLAGS_AT - 1] == '-' &&
          lower_hex(tp + TRACE_ID_AT, TRACE_ID_LEN) &&
          lower_hex(tp + PARENT_ID_AT, PARENT_ID_LEN) && lower_hex(tp + FLAGS_AT, 2) &&
          !all_zeros(tp + TRACE_ID_AT, TRACE_ID_LEN) &&
          !all_zeros(tp + PARENT_ID_AT, PARENT_ID_LEN);
}

static bool
key_char(char c)
{
   return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' ||
          c == '/';
}

/* key = simple-key / tenant@system: lowercase letter or digit first, at most 256 characters
 * (tenant 241, system 14 in W3C's grammar; the total is what matters to a relay). */
static bool
member_key_valid(const char *k, size_t len)
{
   const char *at = memchr(k, '@', len);
   if (len == 0 || len > 256 || !((k[0] >= 'a' && k[0] <= 'z') || (k[0] >= '0' && k[0] <= '9'))) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      if (k + i != at && !key_char(k[i])) {
         return false;
      }
   }
   return !at || (at > k && at < k + len - 1 && (size_t)(at - k) <= 241 &&
                  (size_t)(k + len - at - 1) <= 14 && at[1] >= 'a' && at[1] <= 'z');
}

/* value = 0*255(chr) nblk-chr: printable ASCII without ',' and '=', not ending in a space. */
static bool
member_value_valid(const char *v, size_t len)
{
   if (len == 0 || len > 256 || v[len - 1] == ' ') {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      if (v[i] < 0x20 || v[i] > 0x7e || v[i] == ',' || v[i] == '=') {
         return false;
      }
   }
   return true;
}

/* One list member between commas, with the optional spaces and tabs around it. */
static bool
member_valid(const char *m, size_t len, size_t *members)
{
   const char *eq;
   while (len && (m[0] == ' ' || m[0] == '\t')) {
      m++, len--;
   }
   while (len && (m[len - 1] == ' ' || m[len - 1] == '\t')) {
      len--;
   }
   if (len == 0) {
      return true; /* empty members are allowed, and do not count */
   }
   (*members)++;
   eq = memchr(m, '=', len);
   return eq && member_key_valid(m, (size_t)(eq - m)) &&
          member_value_valid(eq + 1, len - (size_t)(eq - m) - 1);
}

bool
outbox_tracestate_is_valid(const char *ts)
{
   size_t len = ts ? strlen(ts) : 0, members = 0;

   if (!ts || len > TRACESTATE_MAX) {
      return false;
   }
   for (const char *p = ts;;) {
      const char *comma = strchr(p, ',');
      size_t n = comma ? (size_t)(comma - p) : strlen(p);
      if (!member_valid(p, n, &members) || members > TRACESTATE_MEMBERS_MAX) {
         return false;
      }
      if (!comma) {
         return true;
      }
      p = comma + 1;
   }
}

/* @n (<= 32) random lowercase hex digits, never all zeros. The random bytes are those of
 * event ids (a UUID v4 has 30 random hex digits; its version digit is skipped). */
static void
random_hex(char *out, size_t n)
{
   do {
      char uuid[_OUTBOX_UUID_LEN + 1];
      size_t k = 0;
      _outbox_uuid_v4(uuid);
      for (size_t i = 0; i < _OUTBOX_UUID_LEN && k < n; i++) {
         if (uuid[i] != '-' && i != 14) {
            out[k++] = uuid[i];
         }
      }
      if (k < n) {
         _outbox_uuid_v4(uuid);
         for (size_t i = 0; i < _OUTBOX_UUID_LEN && k < n; i++) {
            if (uuid[i] != '-' && i != 14) {
               out[k++] = uuid[i];
            }
         }
      }
   } while (all_zeros(out, n));
}

bool
outbox_traceparent_continue(const char *incoming, char out[OUTBOX_TRACEPARENT_LEN + 1])
{
   bool valid = outbox_traceparent_is_valid(incoming);

   memcpy(out, "00-", 3);
   if (valid) {
      memcpy(out + TRACE_ID_AT, incoming + TRACE_ID_AT, TRACE_ID_LEN);
      memcpy(out + FLAGS_AT, incoming + FLAGS_AT, 2);
   } else {
      random_hex(out + TRACE_ID_AT, TRACE_ID_LEN);
      memcpy(out + FLAGS_AT, "00", 2);
   }
   out[PARENT_ID_AT - 1] = '-';
   random_hex(out + PARENT_ID_AT, PARENT_ID_LEN);
   out[FLAGS_AT - 1] = '-';
   out[OUTBOX_TRACEPARENT_LEN] = '\0';
   return valid;
}

bool
outbox_event_set_trace_context(struct _outbox_event_t *event, const char *traceparent,
                               const char *tracestate, bson_error_t *error)
{
   bool with_state = tracestate && *tracestate;
   bson_t headers = BSON_INITIALIZER;
   bson_iter_t iter;

   if (!event || !traceparent) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "event and traceparent are required");
      return false;
   }
   if (!outbox_traceparent_is_valid(traceparent)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "traceparent is not a W3C trace context traceparent");
      return false;
   }
   if (with_state && !outbox_tracestate_is_valid(tracestate)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "tracestate is not a W3C trace context tracestate");
      return false;
   }
   /* The other headers keep their order; the trace context goes first. */
   BSON_APPEND_UTF8(&headers, "traceparent", traceparent);
   if (with_state) {
      BSON_APPEND_UTF8(&headers, "tracestate", tracestate);
   }
   bson_iter_init(&iter, &event->headers);
   while (bson_iter_next(&iter)) {
      const char *key = bson_iter_key(&iter);
      if (strcmp(key, "traceparent") && strcmp(key, "tracestate")) {
         BSON_APPEND_VALUE(&headers, key, bson_iter_value(&iter));
      }
   }
   bson_destroy(&event->headers);
   bson_steal(&event->headers, &headers);
   return true;
}
