/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The filters of outbox_collection_find_events() and reading a stored element. Dead letters
 * are often malformed events, so reading never fails: what is missing or mistyped stays NULL
 * or 0 and the filters treat it as "does not match". A filter is owned by the one cursor (or
 * call) that parsed it; no shared state.
 */
#include <string.h>

#include "error-private.h"
#include "stored-events-private.h"

static bool
opt_string(const bson_iter_t *it, char **out, bson_error_t *error)
{
   uint32_t len;
   const char *s = BSON_ITER_HOLDS_UTF8(it) ? bson_iter_utf8(it, &len) : NULL;
   if (!s || !len || strlen(s) != len) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "option %s must be a non-empty string", bson_iter_key(it));
      return false;
   }
   bson_free(*out);
   *out = bson_strdup(s);
   return true;
}

static bool
parse_one(const bson_iter_t *it, _outbox_event_filter_t *f, bson_error_t *error)
{
   const char *key = bson_iter_key(it);

   if (!strcmp(key, "entityId")) {
      bson_value_destroy(&f->entity);
      bson_value_copy(bson_iter_value((bson_iter_t *)it), &f->entity);
      f->has_entity = true;
      return true;
   }
   if (!strcmp(key, "eventId")) {
      return opt_string(it, &f->event_id, error);
   }
   if (!strcmp(key, "type")) {
      return opt_string(it, &f->type, error);
   }
   if (!strcmp(key, "reason")) {
      return opt_string(it, &f->reason, error);
   }
   if (!strcmp(key, "before") && BSON_ITER_HOLDS_DATE_TIME(it)) {
      f->has_before = true;
      f->before_ms = bson_iter_date_time(it);
      return true;
   }
   if (!strcmp(key, "limit") && (BSON_ITER_HOLDS_INT32(it) || BSON_ITER_HOLDS_INT64(it)) &&
       bson_iter_as_int64(it) >= 0) {
      f->limit = bson_iter_as_int64(it);
      return true;
   }
   _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "unknown or mistyped option \"%.64s\"",
                     key);
   return false;
}

bool
_outbox_event_filter_parse(const bson_t *opts, _outbox_event_filter_t *filter, bson_error_t *error)
{
   bson_iter_t it;

   memset(filter, 0, sizeof *filter);
   if (!opts) {
      return true;
   }
   if (!bson_iter_init(&it, opts)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "opts is not valid BSON");
      return false;
   }
   while (bson_iter_next(&it)) {
      if (!parse_one(&it, filter, error)) {
         _outbox_event_filter_cleanup(filter);
         return false;
      }
   }
   return true;
}

void
_outbox_event_filter_cleanup(_outbox_event_filter_t *filter)
{
   if (filter->has_entity) {
      bson_value_destroy(&filter->entity);
   }
   bson_free(filter->event_id);
   bson_free(filter->type);
   bson_free(filter->reason);
   memset(filter, 0, sizeof *filter);
}

void
_outbox_event_filter_query(const _outbox_event_filter_t *f, outbox_place_t place, const char *field,
                           bson_t *query)
{
   bool pending = place == OUTBOX_PLACE_PENDING;
   char *first = bson_strdup_printf("%s.0", field);
   bson_t cond, elem;

   BSON_APPEND_DOCUMENT_BEGIN(query, first, &cond);
   BSON_APPEND_BOOL(&cond, "$exists", true);
   bson_append_document_end(query, &cond);
   if (f->has_entity) {
      /* $eq: an entity id that is a document such as {"$ne": null} names one entity, not a
       * query that matches them all. */
      BSON_APPEND_DOCUMENT_BEGIN(query, "_id", &cond);
      BSON_APPEND_VALUE(&cond, "$eq", &f->entity);
      bson_append_document_end(query, &cond);
   }
   if (f->event_id || f->type || f->has_before) {
      BSON_APPEND_DOCUMENT_BEGIN(query, field, &cond);
      BSON_APPEND_DOCUMENT_BEGIN(&cond, "$elemMatch", &elem);
      if (f->event_id) {
         BSON_APPEND_UTF8(&elem, pending ? "id" : "event.id", f->event_id);
      }
      if (f->type) {
         BSON_APPEND_UTF8(&elem, pending ? "type" : "event.type", f->type);
      }
      if (f->has_before) {
         BCON_APPEND(&elem, pending ? "time" : "at", "{", "$lt", BCON_DATE_TIME(f->before_ms), "}");
      }
      bson_append_document_end(&cond, &elem);
      bson_append_document_end(query, &cond);
   }
   bson_free(first);
}

static bool
same(const char *want, const char *have)
{
   return !want || (have && !strcmp(want, have));
}

bool
_outbox_event_filter_match(const _outbox_event_filter_t *f, const outbox_stored_event_t *e)
{
   int64_t when = e->place == OUTBOX_PLACE_PENDING ? e->time_ms : e->at_ms;
   return same(f->event_id, e->event_id) && same(f->type, e->type) &&
          (!f->reason || (e->reason && strstr(e->reason, f->reason))) &&
          (!f->has_before || (when != 0 && when < f->before_ms));
}

static const char *
utf8_of(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_UTF8(&it)
             ? bson_iter_utf8(&it, NULL)
             : NULL;
}

static int64_t
date_of(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_DATE_TIME(&it)
             ? bson_iter_date_time(&it)
             : 0;
}

static int64_t
int_of(const bson_t *doc, const char *path)
{
   bson_iter_t it, sub;
   return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &sub) &&
                (BSON_ITER_HOLDS_INT32(&sub) || BSON_ITER_HOLDS_INT64(&sub))
             ? bson_iter_as_int64(&sub)
             : 0;
}

/* A static view of the document at @it (empty if it holds something else). */
static void
view(const bson_iter_t *it, bson_t *out)
{
   const uint8_t *data;
   uint32_t len;
   if (BSON_ITER_HOLDS_DOCUMENT(it)) {
      bson_iter_document(it, &len, &data);
      if (bson_init_static(out, data, len)) {
         return;
      }
   }
   bson_init(out); /* an empty bson_t owns no memory */
}

static void
read_event(const bson_t *event, outbox_stored_event_t *out)
{
   out->event_id = utf8_of(event, "id");
   out->type = utf8_of(event, "type");
   out->seq = int_of(event, "seq");
   out->time_ms = date_of(event, "time");
   out->requeue_count = int_of(event, "requeued.count");
}

void
_outbox_stored_event_read(const bson_iter_t *element, outbox_place_t place, bson_t *event,
                          bson_t *entry, outbox_stored_event_t *out)
{
   bson_iter_t it;

   memset(out, 0, sizeof *out);
   out->place = place;
   view(element, entry);
   out->entry = entry;
   if (place == OUTBOX_PLACE_PENDING) {
      view(element, event);
   } else if (bson_iter_init_find(&it, entry, "event")) {
      view(&it, event);
   } else {
      bson_init(event);
   }
   out->event = event;
   read_event(event, out);
   if (place == OUTBOX_PLACE_PENDING) {
      return;
   }
   out->reason = utf8_of(entry, "reason");
   out->at_ms = date_of(entry, "at");
   out->relay = utf8_of(entry, "relay");
   if (place == OUTBOX_PLACE_DISCARDED && bson_iter_init_find(&it, entry, "discarded")) {
      bson_t d;
      view(&it, &d);
      out->discarded_by = utf8_of(&d, "by");
      out->discard_reason = utf8_of(&d, "reason");
      out->discarded_at_ms = date_of(&d, "at");
   }
}
