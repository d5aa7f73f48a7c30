/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * One stored event, parsed and checked against the stored contract (event.h). Pure
 * functions; any thread.
 */
#include "stream/event.h"

#include <string.h>

#include "check-private.h" /* liboutbox's UTF-8 checks */

bool
relay_event_type_valid(const char *type, size_t len)
{
   if (len < 1 || len > 128) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      char c = type[i];
      bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
      if (!ok) {
         return false;
      }
   }
   return true;
}

/* A seq is an integer >= 1. int32 is accepted too: a document edited by hand or by another
 * driver may carry one, and its meaning is not ambiguous. */
static bool
read_seq(const bson_iter_t *it, int64_t *seq)
{
   int64_t v;
   if (BSON_ITER_HOLDS_INT64(it)) {
      v = bson_iter_int64(it);
   } else if (BSON_ITER_HOLDS_INT32(it)) {
      v = bson_iter_int32(it);
   } else {
      return false;
   }
   if (v < 1) {
      return false;
   }
   *seq = v;
   return true;
}

static const char *
check_id(const bson_iter_t *it, relay_event_t *ev)
{
   uint32_t len;
   const char *s;
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      return "event id is not a string";
   }
   s = bson_iter_utf8(it, &len);
   if (len == 0 || len > RELAY_EVENT_ID_MAX || strlen(s) != len) {
      return "event id is empty, too long or contains NUL";
   }
   if (!_outbox_utf8_valid(s, len, false)) {
      return "event id is not valid UTF-8"; /* it goes into JSON and MQTT strings */
   }
   ev->id = s; /* NUL-terminated inside ev->raw, which the event owns */
   return NULL;
}

static const char *
check_type(const bson_iter_t *it, relay_event_t *ev)
{
   uint32_t len;
   const char *s;
   if (!BSON_ITER_HOLDS_UTF8(it)) {
      return "event type is not a string";
   }
   s = bson_iter_utf8(it, &len);
   if (!relay_event_type_valid(s, len)) {
      return "event type is not 1..128 characters of [A-Za-z0-9._-]";
   }
   ev->type = s;
   return NULL;
}

static const char *
check_data(const bson_iter_t *it, relay_event_t *ev)
{
   uint32_t len;
   const uint8_t *buf;
   if (!BSON_ITER_HOLDS_DOCUMENT(it)) {
      return "event data is not a document";
   }
   bson_iter_document(it, &len, &buf);
   /* One pass checks structure and strings (liboutbox's walk): libbson's bson_validate()
    * decoded every string byte by byte and still let invalid UTF-8 through. */
   if (!_outbox_bson_walk(buf, len, _OUTBOX_WALK_JSON_STRINGS)) {
      return "event data is not valid BSON or contains invalid UTF-8";
   }
   /* A view into ev->raw, which the event owns: no copy of the data. Its bson_t lives at
    * the front of the event's block (relay_event_parse()). */
   if (!bson_init_static((bson_t *)ev->block, buf, len)) {
      return "event data is not valid BSON";
   }
   ev->data = ev->block;
   return NULL;
}

/* CloudEvents' time is RFC 3339, which has four-digit years: 0001-01-01T00:00:00Z to
 * 9999-12-31T23:59:59.999Z in milliseconds since the epoch. */
static bool
time_in_rfc3339_range(int64_t ms)
{
   return ms >= INT64_C(-62135596800000) && ms <= INT64_C(253402300799999);
}

/* Walks the event's fields once; the first violation found is the reason. */
static const char *
check_fields(const bson_t *doc, relay_event_t *ev)
{
   bson_iter_t it;
   const char *reason = NULL;
   bool have_id = false, have_seq = false, have_type = false, have_data = false;

   if (!bson_iter_init(&it, doc)) {
      return "event is not valid BSON";
   }
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const char *r = NULL;
      if (!strcmp(key, "id") && !have_id) {
         have_id = true;
         r = check_id(&it, ev);
      } else if (!strcmp(key, "seq") && !have_seq) {
         have_seq = true;
         r = read_seq(&it, &ev->seq) ? NULL : "event seq is not an integer >= 1";
      } else if (!strcmp(key, "type") && !have_type) {
         have_type = true;
         r = check_type(&it, ev);
      } else if (!strcmp(key, "data") && !have_data) {
         have_data = true;
         r = check_data(&it, ev);
      } else if (!strcmp(key, "requeued") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_t count;
         if (bson_iter_recurse(&it, &count) && bson_iter_find(&count, "count") &&
             BSON_ITER_HOLDS_NUMBER(&count)) {
            ev->requeued = bson_iter_as_int64(&count);
         }
      } else if (!strcmp(key, "headers") && !ev->headers && !ev->headers_bad) {
         if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
            bson_iter_document(&it, &ev->headers_len, &ev->headers);
         } else {
            ev->headers_bad = true;
         }
      } else if (!strcmp(key, "expiresAt")) {
         if (!BSON_ITER_HOLDS_DATE_TIME(&it)) {
            r = "event expiresAt is not a date";
         } else {
            ev->has_expires = true;
            ev->expires_ms = bson_iter_date_time(&it);
         }
      } else if (!strcmp(key, "time")) {
         if (!BSON_ITER_HOLDS_DATE_TIME(&it)) {
            r = "event time is not a date";
         } else if (!time_in_rfc3339_range(bson_iter_date_time(&it))) {
            r = "event time is outside years 0001-9999 (not RFC 3339)";
         } else {
            ev->has_time = true;
            ev->time_ms = bson_iter_date_time(&it);
         }
      }
      if (r && !reason) {
         reason = r;
      }
   }
   if (!reason && !have_id) {
      reason = "event has no id";
   } else if (!reason && !have_seq) {
      reason = "event has no seq";
   } else if (!reason && !have_type) {
      reason = "event has no type";
   } else if (!reason && !have_data) {
      reason = "event has no data";
   }
   return reason;
}

int64_t
relay_event_peek_seq(const bson_value_t *elem)
{
   bson_iter_t it;
   int64_t seq = 0;

   /* The first "seq" decides, as in check_fields(). */
   if (elem->value_type == BSON_TYPE_DOCUMENT &&
       bson_iter_init_from_data(&it, elem->value.v_doc.data, elem->value.v_doc.data_len) &&
       bson_iter_find(&it, "seq") && !read_seq(&it, &seq)) {
      seq = 0;
   }
   return seq;
}

/* The event's own copy of a document element, in one block: first a bson_t for the data view
 * (bson_t asks for 128-byte alignment), then the element's bytes, which raw points to. One
 * allocation instead of a copy of the element, a copy of its data and two strings. */
static void
copy_document(const bson_value_t *elem, relay_event_t *ev)
{
   size_t head = sizeof(bson_t), align = BSON_ALIGNOF(bson_t);
   uint32_t len = elem->value.v_doc.data_len;

   /* aligned_alloc() wants a multiple of the alignment. */
   ev->block = bson_aligned_alloc(align, (head + len + align - 1) / align * align);
   memcpy((uint8_t *)ev->block + head, elem->value.v_doc.data, len);
   ev->raw.value_type = BSON_TYPE_DOCUMENT;
   ev->raw.value.v_doc.data = (uint8_t *)ev->block + head;
   ev->raw.value.v_doc.data_len = len;
}

bool
relay_event_parse(const bson_value_t *elem, relay_event_t *ev)
{
   bson_t doc;

   memset(ev, 0, sizeof *ev);
   if (elem->value_type != BSON_TYPE_DOCUMENT) {
      bson_value_copy(elem, &ev->raw);
      ev->reason = "event is not a document";
      return false;
   }
   copy_document(elem, ev);
   /* Parsed from the event's own copy: id, type and data point into it. */
   if (!bson_init_static(&doc, ev->raw.value.v_doc.data, ev->raw.value.v_doc.data_len)) {
      ev->reason = "event is not valid BSON";
      return false;
   }
   ev->reason = check_fields(&doc, ev);
   return ev->reason == NULL;
}

void
relay_event_cleanup(relay_event_t *ev)
{
   if (!ev) {
      return;
   }
   if (ev->block) {
      bson_free(ev->block); /* raw's bytes and the data view */
   } else if (ev->raw.value_type != BSON_TYPE_EOD) {
      bson_value_destroy(&ev->raw);
   }
   memset(ev, 0, sizeof *ev);
}
