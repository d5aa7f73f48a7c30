/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The headers rules of headers.h. Pure functions: safe from any thread.
 */
#include "mqtt/headers.h"

#include <string.h>
#include <strings.h>

#include <outbox/trace.h>

#include "check-private.h" /* liboutbox's UTF-8 check */

/* Names a header may not take (compared without case): what the relay itself vouches for.
 * A consumer that deduplicates on event-id, or a CloudEvents SDK reading binary mode's user
 * properties, must never get a producer's header instead. */
static const char *const reserved[] = {
   "event-id", "event-type",  "entity-id", "seq",  "specversion",     "id",
   "source",   "type",        "subject",   "time", "datacontenttype", "dataschema",
   "data",     "data_base64",
};

static bool
is_reserved(const char *name)
{
   for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++) {
      if (!strcasecmp(name, reserved[i])) {
         return true;
      }
   }
   return false;
}

/* Valid UTF-8 without NUL, ASCII controls, DEL or C1 controls: MQTT strings must not hold
 * U+0000 and should not hold controls (a broker may treat the packet as malformed). */
static bool
mqtt_string_ok(const char *s, size_t len)
{
   const unsigned char *u = (const unsigned char *)s;
   if (!_outbox_utf8_valid(s, len, false)) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      if (u[i] < 0x20 || u[i] == 0x7F || (u[i] == 0xC2 && i + 1 < len && u[i + 1] < 0xA0)) {
         return false;
      }
   }
   return true;
}

bool
relay_header_is_ce_attribute(const char *name)
{
   size_t len = strlen(name);
   if (len < 1 || len > RELAY_CE_ATTRIBUTE_NAME_MAX || is_reserved(name)) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9'))) {
         return false;
      }
   }
   return true;
}

static bool
seen(const relay_headers_t *out, const char *name)
{
   for (size_t i = 0; i < out->n; i++) {
      if (!strcmp(out->items[i].name, name)) {
         return true;
      }
   }
   return false;
}

/* NULL if the header at @it may be published (*@value set), else why not. */
static const char *
check_header(const bson_iter_t *it, const relay_headers_t *out, size_t used, const char **value)
{
   const char *name = bson_iter_key(it);
   size_t name_len = bson_iter_key_len(it);
   uint32_t len;

   if (!BSON_ITER_HOLDS_UTF8(it)) {
      return "header value is not a string";
   }
   *value = bson_iter_utf8(it, &len);
   if (name_len == 0 || name_len > RELAY_HEADER_NAME_MAX) {
      return "header name is empty or longer than 128 bytes";
   }
   if (len > RELAY_HEADER_VALUE_MAX) {
      return "header value longer than 4096 bytes";
   }
   if (!mqtt_string_ok(name, name_len) || strlen(*value) != len || !mqtt_string_ok(*value, len)) {
      return "header name or value is not valid UTF-8 or holds a control character";
   }
   if (is_reserved(name)) {
      return "header name is reserved by the relay (its own user properties, CloudEvents "
             "context attributes)";
   }
   if ((!strcmp(name, "traceparent") && !outbox_traceparent_is_valid(*value)) ||
       (!strcmp(name, "tracestate") && !outbox_tracestate_is_valid(*value))) {
      return "traceparent or tracestate header is not W3C Trace Context";
   }
   if (seen(out, name)) {
      return "second header of the same name";
   }
   if (out->n == RELAY_HEADERS_MAX) {
      return "more than 16 headers";
   }
   if (used + name_len + len > RELAY_HEADERS_BYTES_MAX) {
      return "headers larger than 8192 bytes in all";
   }
   return NULL;
}

static void
drop(relay_headers_t *out, const char *reason)
{
   out->dropped++;
   if (!out->reason) {
      out->reason = reason;
   }
}

void
relay_headers_read(const relay_event_t *ev, relay_headers_t *out)
{
   bson_iter_t it;
   size_t used = 0;

   memset(out, 0, sizeof *out);
   if (ev->headers_bad) {
      drop(out, "headers is not a document");
      return;
   }
   if (!ev->headers) {
      return;
   }
   if (!bson_iter_init_from_data(&it, ev->headers, ev->headers_len)) {
      drop(out, "headers is not valid BSON");
      return;
   }
   while (bson_iter_next(&it)) {
      const char *value = NULL;
      const char *why = check_header(&it, out, used, &value);
      if (why) {
         drop(out, why);
         continue;
      }
      used += bson_iter_key_len(&it) + strlen(value);
      out->items[out->n++] = (relay_header_t){bson_iter_key(&it), value,
                                              relay_header_is_ce_attribute(bson_iter_key(&it))};
   }
   /* A document whose bytes end early stops the walk: what came before is kept. */
   if (it.err_off) {
      drop(out, "headers is not valid BSON");
   }
}

size_t
relay_headers_append_props(const relay_headers_t *h, const char **props, size_t n)
{
   for (size_t i = 0; i < h->n; i++) {
      props[n++] = h->items[i].name;
      props[n++] = h->items[i].value;
   }
   return n;
}
