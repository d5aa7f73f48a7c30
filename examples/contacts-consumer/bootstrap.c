/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See bootstrap.h for the sequence and why it neither misses nor doubles an event.
 */
#include "bootstrap.h"

#include <string.h>
#include <unistd.h>

#include <outbox/outbox.h>

/* Writers' clocks may be this far behind the consumer's: events stamped up to this long after
 * the subscription are read from the archive too (the inbox drops them when they also come
 * live). */
#define CLOCK_MARGIN_MS 5000

/* Step 2: true once no pending event of the outbox collection is older than @before_ms. */
static bool
wait_archived(mongoc_client_pool_t *pool, const bootstrap_opts_t *o, int64_t before_ms,
              volatile sig_atomic_t *stop, bson_error_t *error)
{
   outbox_collection_t *c = outbox_collection_new(pool, o->outbox_db, o->collection, NULL, error);
   bson_t *opts = BCON_NEW("before", BCON_DATE_TIME(before_ms), "limit", BCON_INT64(1));
   bool done = false, failed = !c;

   while (!done && !failed && !*stop) {
      outbox_event_cursor_t *cur =
         outbox_collection_find_events(c, OUTBOX_PLACE_PENDING, opts, error);
      done = cur && !outbox_event_cursor_next(cur, NULL);
      failed = !cur || outbox_event_cursor_error(cur, error);
      outbox_event_cursor_destroy(cur);
      if (!done && !failed) {
         usleep(200 * 1000);
      }
   }
   bson_destroy(opts);
   outbox_collection_destroy(c);
   return !failed;
}

/* The archived event as the consumer's decoded message (contact ids are strings). */
static bool
as_cloudevent(const outbox_archived_event_t *e, cloudevent_t *ev)
{
   if (!e->event_id || !e->type || e->entity_id->value_type != BSON_TYPE_UTF8) {
      return false;
   }
   memset(ev, 0, sizeof *ev);
   ev->id = bson_strdup(e->event_id);
   ev->type = bson_strdup(e->type);
   ev->subject = bson_strdup(e->entity_id->value.v_utf8.str);
   ev->seq = e->seq;
   bson_copy_to(e->data, &ev->data);
   return true;
}

/* Step 3. */
static bool
apply_archive(directory_t *dir, mongoc_collection_t *archive, const bootstrap_opts_t *o,
              int64_t until_ms, volatile sig_atomic_t *stop, int64_t *applied, bson_error_t *error)
{
   bson_t *opts =
      BCON_NEW("collection", BCON_UTF8(o->collection), "until", BCON_DATE_TIME(until_ms));
   outbox_archive_cursor_t *cur = outbox_archive_find(archive, opts, error);
   const outbox_archived_event_t *e;
   bool ok = cur != NULL;

   while (ok && !*stop && outbox_archive_cursor_next(cur, &e)) {
      cloudevent_t ev;
      if (!as_cloudevent(e, &ev)) {
         continue; /* not a contact event of this example */
      }
      /* MongoDB trouble: retry this event until it goes through or we are stopped. */
      while (!(ok = directory_apply(dir, &ev, error)) && !*stop) {
         usleep(500 * 1000);
      }
      *applied += ok;
      cloudevent_clear(&ev);
   }
   if (ok && outbox_archive_cursor_error(cur, error)) {
      ok = false;
   }
   outbox_archive_cursor_destroy(cur);
   bson_destroy(opts);
   return ok;
}

bool
bootstrap_from_archive(directory_t *dir, mongoc_client_pool_t *pool, const bootstrap_opts_t *o,
                       int64_t subscribed_ms, volatile sig_atomic_t *stop, int64_t *applied,
                       bson_error_t *error)
{
   mongoc_client_t *client;
   mongoc_collection_t *archive;
   bool ok;

   *applied = 0;
   if (!wait_archived(pool, o, subscribed_ms, stop, error)) {
      return false;
   }
   client = mongoc_client_pool_pop(pool);
   archive = mongoc_client_get_collection(client, o->outbox_db, o->archive);
   ok = apply_archive(dir, archive, o, subscribed_ms + CLOCK_MARGIN_MS, stop, applied, error);
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(pool, client);
   return ok;
}
