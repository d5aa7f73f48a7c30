/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * CloudEvents decoding for the consumer.
 */
#include "cloudevent.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <outbox/trace.h>

/* The string at @key, or NULL when absent, not a string, or holding a NUL ("\u0000" in the
 * JSON): as a C string it would be cut there, and two events "a\u0000x" and "a\u0000y" would
 * share the id "a" (the second dropped as a duplicate). */
static char *
dup_str(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   uint32_t len;
   const char *s;

   if (bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it) &&
       (s = bson_iter_utf8(&it, &len)) && strlen(s) == len)
      return bson_strdup(s);
   return NULL;
}

/* seq is an integer; a string of digits is accepted too, since CloudEvents extension values
 * are often carried as strings. */
static bool
parse_seq(const char *s, int64_t *seq)
{
   char *end;

   errno = 0;
   if (!s || !*s)
      return false;
   *seq = strtoll(s, &end, 10);
   return !errno && !*end && *seq > 0;
}

static void
read_seq(const bson_t *doc, int64_t *seq)
{
   bson_iter_t it;

   if (!bson_iter_init_find(&it, doc, "seq"))
      return;
   if (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_DOUBLE(&it))
      *seq = bson_iter_as_int64(&it);
   else if (BSON_ITER_HOLDS_UTF8(&it)) {
      char *s = dup_str(doc, "seq");
      parse_seq(s, seq);
      bson_free(s);
   }
}

static void
read_data(const bson_t *doc, bson_t *data)
{
   bson_iter_t it;
   const uint8_t *buf;
   uint32_t len;
   bson_t view;

   if (bson_iter_init_find(&it, doc, "data") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_document(&it, &len, &buf);
      if (bson_init_static(&view, buf, len))
         bson_concat(data, &view);
   }
}

/* The trace id of a valid traceparent ("00-<trace id>-<span id>-<flags>"). */
static void
read_trace_id(cloudevent_t *ev, const char *traceparent)
{
   if (!ev->trace_id[0] && outbox_traceparent_is_valid(traceparent)) {
      memcpy(ev->trace_id, traceparent + 3, 32);
      ev->trace_id[32] = '\0';
   }
}

static void
fill_from_props(cloudevent_t *ev, const cloudevent_props_t *p)
{
   if (!p)
      return;
   if (!ev->id && p->event_id)
      ev->id = bson_strdup(p->event_id);
   if (!ev->type && p->event_type)
      ev->type = bson_strdup(p->event_type);
   if (!ev->subject && p->entity_id)
      ev->subject = bson_strdup(p->entity_id);
   if (!ev->seq && p->seq)
      parse_seq(p->seq, &ev->seq);
   read_trace_id(ev, p->traceparent);
}

bool
cloudevent_decode(const char *payload, size_t len, const cloudevent_props_t *props,
                  cloudevent_t *ev, char *err, size_t errlen)
{
   bson_error_t error;
   bson_t doc;

   memset(ev, 0, sizeof *ev);
   bson_init(&ev->data);
   if (props && props->bytes) {
      /* Binary data (an image, a file): nothing a contact is made of; the event still counts
       * (its id and seq), so the inbox records it. */
      bson_init(&doc);
   } else if (len == 0 || !bson_init_from_json(&doc, payload, (ssize_t)len, &error)) {
      snprintf(err, errlen, "payload is not a JSON object%s%s", len ? ": " : "",
               len ? error.message : "");
      cloudevent_clear(ev);
      return false;
   }
   if (bson_has_field(&doc, "specversion")) {
      ev->id = dup_str(&doc, "id");
      ev->type = dup_str(&doc, "type");
      ev->subject = dup_str(&doc, "subject");
      read_seq(&doc, &ev->seq);
      read_data(&doc, &ev->data);
      {
         char *tp = dup_str(&doc, "traceparent");
         read_trace_id(ev, tp);
         bson_free(tp);
      }
   } else {
      bson_concat(&ev->data, &doc); /* binary mode: the payload is the data */
   }
   bson_destroy(&doc);
   fill_from_props(ev, props);
   if (!ev->id || !ev->type || !ev->subject) {
      snprintf(err, errlen, "the event has no %s (or not a string without NUL)",
               !ev->id     ? "id"
               : !ev->type ? "type"
                           : "subject");
      cloudevent_clear(ev);
      return false;
   }
   return true;
}

void
cloudevent_clear(cloudevent_t *ev)
{
   bson_free(ev->id);
   bson_free(ev->type);
   bson_free(ev->subject);
   if (ev->data.len) /* 0 only after a clear: clearing twice is harmless */
      bson_destroy(&ev->data);
   memset(ev, 0, sizeof *ev);
}
