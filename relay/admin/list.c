/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `pending` and `dead-letters`: walking the matching events of every configured collection
 * through liboutbox's cursor (partial indexes, never a scan of documents without events), and
 * printing them as tab-separated lines or JSON Lines. admin_each() is also how requeue and
 * discard find what they act on.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"

/* The cursor options for the filters; `before` is the server's now minus --older-than. */
static bson_t *
filter_opts(admin_t *a, int64_t now_ms, int64_t limit)
{
   bson_t *opts = bson_new();
   if (a->has_entity) {
      BSON_APPEND_VALUE(opts, "entityId", &a->entity);
   }
   if (a->event_id) {
      BSON_APPEND_UTF8(opts, "eventId", a->event_id);
   }
   if (a->type) {
      BSON_APPEND_UTF8(opts, "type", a->type);
   }
   if (a->reason_filter) {
      BSON_APPEND_UTF8(opts, "reason", a->reason_filter);
   }
   if (a->older_than_ms > 0) {
      BSON_APPEND_DATE_TIME(opts, "before", now_ms - a->older_than_ms);
   }
   if (limit > 0) {
      BSON_APPEND_INT64(opts, "limit", limit);
   }
   return opts;
}

int
admin_each(admin_t *a, outbox_place_t place, admin_visit_fn fn, void *ctx)
{
   bson_error_t error;
   int64_t now, seen = 0;
   int rc = EX_OK;

   if (a->n_targets == 0) {
      fprintf(stderr, "outbox-admin: no collection: give --collection (or the relay's config)\n");
      return EX_USAGE;
   }
   if (!admin_server_now(a, &now, &error)) {
      return admin_fail("MongoDB", &error);
   }
   for (size_t i = 0; i < a->n_targets && rc == EX_OK; i++) {
      const char *name = a->targets[i].label;
      int64_t left = a->limit > 0 ? a->limit - seen : 0;
      outbox_collection_t *c;
      if (a->limit > 0 && left <= 0) {
         break;
      }
      if (!(c = admin_collection(a, name))) {
         return EX_CONFIG;
      }
      bson_t *opts = filter_opts(a, now, left);
      outbox_event_cursor_t *cur = outbox_collection_find_events(c, place, opts, &error);
      const outbox_stored_event_t *ev;
      if (!cur) {
         rc = admin_fail(name, &error);
      }
      while (cur && rc == EX_OK && outbox_event_cursor_next(cur, &ev)) {
         seen++;
         rc = fn(a, name, c, ev, now, ctx);
      }
      if (cur && rc == EX_OK && outbox_event_cursor_error(cur, &error)) {
         rc = admin_fail(name, &error);
      }
      outbox_event_cursor_destroy(cur);
      bson_destroy(opts);
      outbox_collection_destroy(c);
   }
   return rc;
}

void
admin_event_json(bson_t *doc, const char *coll, const outbox_stored_event_t *ev)
{
   BSON_APPEND_UTF8(doc, "collection", coll);
   BSON_APPEND_VALUE(doc, "entity", ev->entity_id);
   if (ev->event_id) {
      BSON_APPEND_UTF8(doc, "eventId", ev->event_id);
   }
   BSON_APPEND_INT64(doc, "seq", ev->seq);
   if (ev->type) {
      BSON_APPEND_UTF8(doc, "type", ev->type);
   }
   if (ev->time_ms) {
      BSON_APPEND_DATE_TIME(doc, "time", ev->time_ms);
   }
   if (ev->requeue_count) {
      BSON_APPEND_INT64(doc, "requeued", ev->requeue_count);
   }
   if (ev->place != OUTBOX_PLACE_PENDING) {
      BSON_APPEND_UTF8(doc, "reason", ev->reason ? ev->reason : "");
      if (ev->at_ms) {
         BSON_APPEND_DATE_TIME(doc, "deadLetteredAt", ev->at_ms);
      }
      BSON_APPEND_UTF8(doc, "relay", ev->relay ? ev->relay : "");
   }
   if (ev->place == OUTBOX_PLACE_DISCARDED) {
      BCON_APPEND(doc, "discarded", "{", "at", BCON_DATE_TIME(ev->discarded_at_ms), "by",
                  BCON_UTF8(ev->discarded_by ? ev->discarded_by : ""), "reason",
                  BCON_UTF8(ev->discard_reason ? ev->discard_reason : ""), "}");
   }
   BSON_APPEND_DOCUMENT(doc, "event", ev->event);
}

/* COLLECTION ENTITY SEQ TYPE EVENT-ID TIME AGE [REASON DEAD-LETTERED RELAY [BY WHY AT]] */
void
admin_event_line(FILE *out, const char *coll, const outbox_stored_event_t *ev, int64_t now)
{
   /* Every stored string was written by someone else: escaped (admin_print_text()). */
   fprintf(out, "%s\t", coll);
   admin_print_id(out, ev->entity_id);
   fprintf(out, "\t%" PRId64 "\t", ev->seq);
   admin_print_str(out, ev->type);
   fputc('\t', out);
   admin_print_str(out, ev->event_id);
   fputc('\t', out);
   admin_print_time(out, ev->time_ms);
   fputc('\t', out);
   admin_print_age(out, ev->time_ms ? now - ev->time_ms : -1);
   if (ev->place != OUTBOX_PLACE_PENDING) {
      fputc('\t', out);
      admin_print_str(out, ev->reason);
      fputc('\t', out);
      admin_print_time(out, ev->at_ms);
      fputc('\t', out);
      admin_print_str(out, ev->relay);
   }
   if (ev->place == OUTBOX_PLACE_DISCARDED) {
      fputc('\t', out);
      admin_print_str(out, ev->discarded_by);
      fputc('\t', out);
      admin_print_str(out, ev->discard_reason);
      fputc('\t', out);
      admin_print_time(out, ev->discarded_at_ms);
   }
   fputc('\n', out);
}

static int
print_one(admin_t *a, const char *coll, outbox_collection_t *c, const outbox_stored_event_t *ev,
          int64_t now, void *ctx)
{
   if (a->json) {
      bson_t doc = BSON_INITIALIZER;
      admin_event_json(&doc, coll, ev);
      admin_print_json(a->out, &doc);
      bson_destroy(&doc);
   } else {
      admin_event_line(a->out, coll, ev, now);
   }
   return EX_OK;
}

int
admin_list(admin_t *a, outbox_place_t place)
{
   if (!a->json) {
      fputs("COLLECTION\tENTITY\tSEQ\tTYPE\tEVENT-ID\tTIME\tAGE", a->out);
      if (place != OUTBOX_PLACE_PENDING) {
         fputs("\tREASON\tDEAD-LETTERED\tRELAY", a->out);
      }
      if (place == OUTBOX_PLACE_DISCARDED) {
         fputs("\tDISCARDED-BY\tWHY\tDISCARDED", a->out);
      }
      fputc('\n', a->out);
   }
   return admin_each(a, place, print_one, NULL);
}
