/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Validation of events as they are stored, for readers of the stored contract (the relay).
 * Pure functions over the caller's documents: no state, thread-safe.
 */
#include <string.h>

#include "error-private.h"
#include "event-private.h"

static bool
wrong_type(const bson_iter_t *iter, const char *expected, bson_error_t *error)
{
   _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: expected %s, got %s",
                     bson_iter_key(iter), expected, _outbox_bson_type_name(bson_iter_type(iter)));
   return false;
}

static bool
check_headers(const bson_iter_t *field, bson_error_t *error)
{
   bson_iter_t child;

   if (!BSON_ITER_HOLDS_DOCUMENT(field)) {
      return wrong_type(field, "document", error);
   }
   if (!bson_iter_recurse(field, &child)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "headers: corrupt document");
      return false;
   }
   while (bson_iter_next(&child)) {
      uint32_t len;
      const char *value;

      if (!BSON_ITER_HOLDS_UTF8(&child)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "headers.%.100s: expected string, got %s", bson_iter_key(&child),
                           _outbox_bson_type_name(bson_iter_type(&child)));
         return false;
      }
      value = bson_iter_utf8(&child, &len);
      if (!bson_utf8_validate(value, len, false)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "headers.%.100s: value is not valid UTF-8", bson_iter_key(&child));
         return false;
      }
   }
   return true;
}

/* Checks one field; sets the matching bit in *seen. */
static bool
check_field(const bson_iter_t *it, unsigned *seen, bson_error_t *error)
{
   const char *key = bson_iter_key(it);
   uint32_t len;
   const char *s;

   if (strcmp(key, "id") == 0) {
      *seen |= 1u;
      if (!BSON_ITER_HOLDS_UTF8(it)) {
         return wrong_type(it, "string", error);
      }
      s = bson_iter_utf8(it, &len);
      if (!_outbox_uuid_is_valid(s, len)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "id: \"%.64s\" is not a lowercase 36-character UUID", s);
         return false;
      }
   } else if (strcmp(key, "seq") == 0) {
      *seen |= 2u;
      if (!BSON_ITER_HOLDS_INT64(it)) {
         return wrong_type(it, "Int64", error);
      }
      if (bson_iter_int64(it) <= 0) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "seq: %" PRId64 " is not > 0",
                           bson_iter_int64(it));
         return false;
      }
   } else if (strcmp(key, "type") == 0) {
      *seen |= 4u;
      if (!BSON_ITER_HOLDS_UTF8(it)) {
         return wrong_type(it, "string", error);
      }
      s = bson_iter_utf8(it, &len);
      if (!_outbox_event_type_is_valid(s, len)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT,
                           "type: \"%.140s\" is not 1..%d characters of [A-Za-z0-9._-]", s,
                           _OUTBOX_EVENT_TYPE_MAX);
         return false;
      }
   } else if (strcmp(key, "time") == 0) {
      *seen |= 8u;
      if (!BSON_ITER_HOLDS_DATE_TIME(it)) {
         return wrong_type(it, "Date", error);
      }
   } else if (strcmp(key, "data") == 0) {
      *seen |= 16u;
      if (!BSON_ITER_HOLDS_DOCUMENT(it)) {
         return wrong_type(it, "document", error);
      }
   } else if (strcmp(key, "headers") == 0) {
      return check_headers(it, error);
   } else if (strcmp(key, "expiresAt") == 0 && !BSON_ITER_HOLDS_DATE_TIME(it)) {
      return wrong_type(it, "Date", error);
   }
   return true;
}

bool
_outbox_stored_event_validate(const bson_t *event, bson_error_t *error)
{
   static const char *const required[] = {"id", "seq", "type", "time", "data"};
   bson_iter_t it;
   unsigned seen = 0;

   if (!event || !bson_iter_init(&it, event)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "event is not a valid document");
      return false;
   }
   while (bson_iter_next(&it)) {
      if (!check_field(&it, &seen, error)) {
         return false;
      }
   }
   for (unsigned i = 0; i < 5; i++) {
      if (!(seen & (1u << i))) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_EVENT, "%s: missing", required[i]);
         return false;
      }
   }
   return true;
}
