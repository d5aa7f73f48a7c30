/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Events (outbox/event.h): the in-memory object, its header and validation, and its stored
 * form for a commit. An event belongs to its caller and is used by one thread at a time; the
 * library writes it only to mark it committed (seq and time) after a successful commit.
 */
#include "event-private.h"

#include <string.h>
#include <time.h>

#include "check-private.h"
#include "contract-private.h"
#include "error-private.h"

outbox_event_t *
outbox_event_new(const char *type, const bson_t *data)
{
   /* bson_t members need their 128-byte alignment (UBSan checks it). */
   outbox_event_t *event = BSON_ALIGNED_ALLOC0(outbox_event_t);

   _outbox_uuid_v4(event->id);
   event->type = bson_strdup(type ? type : "");
   if (data) {
      bson_copy_to(data, &event->data);
   } else {
      bson_init(&event->data);
   }
   bson_init(&event->headers);
   return event;
}

outbox_event_t *
outbox_event_new_binary(const char *type, const uint8_t *bytes, size_t len,
                        const char *content_type)
{
   outbox_event_t *event = outbox_event_new(type, NULL);
   event->binary = true;
   event->bin_len = (uint32_t)(len > UINT32_MAX ? UINT32_MAX : len);
   event->bin = bson_malloc(event->bin_len ? event->bin_len : 1);
   if (len) {
      memcpy(event->bin, bytes, event->bin_len);
   }
   event->content_type = content_type ? bson_strdup(content_type) : NULL;
   return event;
}

void
outbox_event_destroy(outbox_event_t *event)
{
   if (!event) {
      return;
   }
   bson_free(event->bin);
   bson_free(event->content_type);
   bson_free(event->type);
   bson_destroy(&event->data);
   bson_destroy(&event->headers);
   bson_free(event);
}

/* The number of headers of @headers other than @key, and their bytes (names and values). */
static size_t
other_headers(const bson_t *headers, const char *key, size_t *bytes)
{
   bson_iter_t iter;
   size_t n = 0;

   *bytes = 0;
   bson_iter_init(&iter, headers);
   while (bson_iter_next(&iter)) {
      if (strcmp(bson_iter_key(&iter), key) != 0) {
         uint32_t len;
         bson_iter_utf8(&iter, &len);
         *bytes += bson_iter_key_len(&iter) + len;
         n++;
      }
   }
   return n;
}

bool
outbox_event_set_header(outbox_event_t *event, const char *key, const char *value,
                        bson_error_t *error)
{
   bson_t headers = BSON_INITIALIZER;
   bson_iter_t iter;
   bool replaced = false;
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   size_t n, bytes;
   const char *why;

   if (!event || !key || !value) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "event, key and value are required");
      return false;
   }
   /* Every header rule of the contract (outbox/contract.h): what the relay would leave out
    * of the message is refused here, so a liboutbox caller learns it at once. */
   v.value.v_utf8.str = (char *)value;
   v.value.v_utf8.len = (uint32_t)strlen(value);
   n = other_headers(&event->headers, key, &bytes);
   why = _outbox_contract_header_check(key, strlen(key), &v, n, bytes, true);
   if (why) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "header \"%.140s\": %s", key, why);
      return false;
   }
   /* Rebuild rather than edit in place: BSON has no in-place replace, and headers are few. */
   bson_iter_init(&iter, &event->headers);
   while (bson_iter_next(&iter)) {
      if (strcmp(bson_iter_key(&iter), key) == 0) {
         BSON_APPEND_UTF8(&headers, key, value);
         replaced = true;
      } else {
         BSON_APPEND_VALUE(&headers, bson_iter_key(&iter), bson_iter_value(&iter));
      }
   }
   if (!replaced) {
      BSON_APPEND_UTF8(&headers, key, value);
   }
   bson_destroy(&event->headers);
   bson_steal(&event->headers, &headers);
   return true;
}

bool
outbox_event_set_expires_at(outbox_event_t *event, int64_t ms, bson_error_t *error)
{
   /* The contract's row (lib/src/contract.c) holds the range: RFC 3339's years 0001-9999. */
   const outbox_contract_rule_t *rule = _outbox_contract_row(_OUTBOX_RULE_EVENT_EXPIRES_AT);
   bson_value_t v = {.value_type = BSON_TYPE_DATE_TIME, .value.v_datetime = ms};

   if (!event) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "event is NULL");
      return false;
   }
   if (outbox_contract_check(rule, &v, true, NULL)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "expiresAt %" PRId64 " ms is outside years 0001-9999", ms);
      return false;
   }
   event->expires_at = ms;
   event->has_expires = true;
   return true;
}

bool
_outbox_event_type_is_valid(const char *type, size_t len)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};

   if (!type) {
      return false;
   }
   v.value.v_utf8.str = (char *)type;
   v.value.v_utf8.len = (uint32_t)len;
   return !outbox_contract_check(_outbox_contract_row(_OUTBOX_RULE_EVENT_TYPE), &v, true, NULL);
}

bool
outbox_event_validate(const outbox_event_t *event, bson_error_t *error)
{
   if (!event) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "event is NULL");
      return false;
   }
   if (!_outbox_event_type_is_valid(event->type, strlen(event->type))) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "type \"%.140s\" is not 1..%d characters of [A-Za-z0-9._-]", event->type,
                        _OUTBOX_EVENT_TYPE_MAX);
      return false;
   }
   if (event->binary) {
      /* Binary data is bytes: only its content type has rules (the contract's row). */
      bson_value_t ct = {.value_type = BSON_TYPE_UTF8};
      ct.value.v_utf8.str = event->content_type;
      ct.value.v_utf8.len = event->content_type ? (uint32_t)strlen(event->content_type) : 0;
      const outbox_contract_rule_t *rule = _outbox_contract_row(_OUTBOX_RULE_EVENT_CONTENT_TYPE);
      const char *why = event->content_type ? outbox_contract_check(rule, &ct, true, NULL) : NULL;
      if (why || event->bin_len > 16 * 1024 * 1024) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s",
                           why ? why : "binary data is larger than 16 MiB");
         return false;
      }
      return true;
   }
   /* The contract's data rule, written form: '$' keys are refused because consumers read
    * events as Extended JSON, where {"$date": ...} or {"$oid": ...} would change meaning, and
    * servers differ on them in updates. */
   bson_value_t data = {.value_type = BSON_TYPE_DOCUMENT};
   data.value.v_doc.data = (uint8_t *)bson_get_data(&event->data);
   data.value.v_doc.data_len = event->data.len;
   if (outbox_contract_check(_outbox_contract_row(_OUTBOX_RULE_EVENT_DATA), &data, true, NULL)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                        "data is not well-formed BSON with valid UTF-8 strings and no keys "
                        "empty or starting with '$'");
      return false;
   }
   return true;
}

const char *
outbox_event_get_id(const outbox_event_t *event)
{
   return event ? event->id : NULL;
}

const char *
outbox_event_get_type(const outbox_event_t *event)
{
   return event ? event->type : NULL;
}

const bson_t *
outbox_event_get_data(const outbox_event_t *event)
{
   return event ? &event->data : NULL;
}

int64_t
outbox_event_get_seq(const outbox_event_t *event)
{
   return event ? event->seq : 0;
}

int64_t
outbox_event_get_time(const outbox_event_t *event)
{
   return event ? event->time : 0;
}

bool
_outbox_events_check(outbox_event_t *const *events, size_t n, bson_error_t *error)
{
   bson_error_t why;

   if (n > 0 && !events) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "events is NULL but n_events is %zu",
                        n);
      return false;
   }
   for (size_t i = 0; i < n; i++) {
      if (!outbox_event_validate(events[i], &why)) {
         _outbox_set_error(error, why.code, "event %zu: %s", i, why.message);
         return false;
      }
      if (events[i]->seq != 0) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "event %zu (%s) was committed already with seq %" PRId64, i,
                           events[i]->id, events[i]->seq);
         return false;
      }
      /* Quadratic, but n is bounded by maxPendingEvents and pointer compares are cheap. */
      for (size_t j = 0; j < i; j++) {
         if (events[j] == events[i]) {
            _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                              "event %zu is the same object as event %zu", i, j);
            return false;
         }
      }
   }
   return true;
}

void
_outbox_events_append_stored(bson_t *array, outbox_event_t *const *events, size_t n,
                             int64_t first_seq, int64_t time)
{
   char buf[16];
   const char *key;

   for (size_t i = 0; i < n; i++) {
      const outbox_event_t *ev = events[i];
      bson_t doc;

      bson_uint32_to_string((uint32_t)i, &key, buf, sizeof buf);
      bson_append_document_begin(array, key, -1, &doc);
      BSON_APPEND_UTF8(&doc, "id", ev->id);
      BSON_APPEND_INT64(&doc, "seq", first_seq + (int64_t)i);
      BSON_APPEND_UTF8(&doc, "type", ev->type);
      BSON_APPEND_DATE_TIME(&doc, "time", time);
      if (ev->binary) {
         BSON_APPEND_BINARY(&doc, "data", BSON_SUBTYPE_BINARY, ev->bin, ev->bin_len);
         if (ev->content_type) {
            BSON_APPEND_UTF8(&doc, "contentType", ev->content_type);
         }
      } else {
         BSON_APPEND_DOCUMENT(&doc, "data", &ev->data);
      }
      if (!bson_empty(&ev->headers)) {
         BSON_APPEND_DOCUMENT(&doc, "headers", &ev->headers);
      }
      if (ev->has_expires) {
         BSON_APPEND_DATE_TIME(&doc, "expiresAt", ev->expires_at);
      }
      bson_append_document_end(array, &doc);
   }
}

/* Mirrors _outbox_events_append_stored(): per element a type byte and a NUL-terminated key,
 * then the document: length, elements (type byte, key, value) and a terminating NUL. */
int64_t
_outbox_events_stored_size(outbox_event_t *const *events, size_t n)
{
   int64_t size = 5; /* the array's length and terminator */
   char buf[16];
   const char *key;

   for (size_t i = 0; i < n; i++) {
      const outbox_event_t *ev = events[i];
      int64_t doc = 5;

      doc += 1 + 3 + 4 + _OUTBOX_UUID_LEN + 1;          /* id */
      doc += 1 + 4 + 8;                                 /* seq */
      doc += 1 + 5 + 4 + (int64_t)strlen(ev->type) + 1; /* type */
      doc += 1 + 5 + 8;                                 /* time */
      if (ev->binary) {
         doc += 1 + 5 + 4 + 1 + (int64_t)ev->bin_len; /* data: length, subtype, bytes */
         if (ev->content_type) {
            doc += 1 + 12 + 4 + (int64_t)strlen(ev->content_type) + 1; /* contentType */
         }
      } else {
         doc += 1 + 5 + (int64_t)ev->data.len; /* data */
      }
      if (!bson_empty(&ev->headers)) {
         doc += 1 + 8 + (int64_t)ev->headers.len; /* headers */
      }
      if (ev->has_expires) {
         doc += 1 + 10 + 8; /* expiresAt */
      }
      size += 1 + (int64_t)bson_uint32_to_string((uint32_t)i, &key, buf, sizeof buf) + 1 + doc;
   }
   return size;
}

void
_outbox_events_mark_committed(outbox_event_t *const *events, size_t n, int64_t first_seq,
                              int64_t time)
{
   for (size_t i = 0; i < n; i++) {
      events[i]->seq = first_seq + (int64_t)i;
      events[i]->time = time;
      events[i]->attempt.in_doubt = false;
   }
}

int64_t
_outbox_now_ms(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_REALTIME, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
