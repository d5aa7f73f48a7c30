/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading the bookkeeping fields of a stored document (version, eventSeq, the number of
 * pending events, its size) into _outbox_doc_state_t, refusing documents that break the stored
 * contract. Pure functions over the caller's document: no state, thread-safe.
 */
#include "document-private.h"

#include "error-private.h"

static bool
parse_int(const bson_t *doc, const char *field, int64_t min, int64_t *out, bson_error_t *error)
{
   bson_iter_t it;

   if (!bson_iter_init_find(&it, doc, field)) {
      _outbox_set_error(error, OUTBOX_ERROR_MALFORMED_DOCUMENT, "stored document has no \"%s\"",
                        field);
      return false;
   }
   if (!BSON_ITER_HOLDS_INT64(&it) && !BSON_ITER_HOLDS_INT32(&it)) {
      _outbox_set_error(error, OUTBOX_ERROR_MALFORMED_DOCUMENT,
                        "stored \"%s\" is %s, expected Int64", field,
                        _outbox_bson_type_name(bson_iter_type(&it)));
      return false;
   }
   *out = bson_iter_as_int64(&it);
   if (*out < min) {
      _outbox_set_error(error, OUTBOX_ERROR_MALFORMED_DOCUMENT,
                        "stored \"%s\" is %" PRId64 ", expected >= %" PRId64, field, *out, min);
      return false;
   }
   return true;
}

static bool
count_events(const bson_t *doc, const char *field, int64_t *out, bson_error_t *error)
{
   bson_iter_t it, child;

   *out = 0;
   if (!bson_iter_init_find(&it, doc, field) || BSON_ITER_HOLDS_NULL(&it)) {
      return true;
   }
   if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &child)) {
      _outbox_set_error(error, OUTBOX_ERROR_MALFORMED_DOCUMENT,
                        "stored \"%s\" is %s, expected array", field,
                        _outbox_bson_type_name(bson_iter_type(&it)));
      return false;
   }
   while (bson_iter_next(&child)) {
      (*out)++;
   }
   return true;
}

bool
_outbox_doc_state_parse(const bson_t *doc, const _outbox_field_names_t *names,
                        _outbox_doc_state_t *state, bson_error_t *error)
{
   if (!parse_int(doc, names->version, 1, &state->version, error) ||
       !parse_int(doc, names->event_seq, 0, &state->event_seq, error) ||
       !count_events(doc, names->events, &state->pending, error)) {
      return false;
   }
   state->size = (int64_t)doc->len;
   return true;
}
