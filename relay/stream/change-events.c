/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The events a change event carries: taken into the table straight from the change when
 * it shows them as an insert, a replace or appends to the events array
 * (relay_change_events_take(); otherwise the caller reads the document), and the eventSeq
 * the change leaves in its document (relay_change_events_seq()). Reads ingest's state,
 * changes only the entity it is given. Main thread only.
 */
#include <string.h>

#include "stream/ingest-private.h"

static bool
all_digits(const char *s)
{
   if (!*s) {
      return false;
   }
   for (; *s; s++) {
      if (*s < '0' || *s > '9') {
         return false;
      }
   }
   return true;
}

/* What a key of a change's updatedFields names. */
typedef enum {
   KEY_OTHER,   /* not the events field */
   KEY_ARRAY,   /* the whole events array */
   KEY_ELEMENT, /* "events.N": one element (an append) */
   KEY_INSIDE,  /* "events.N.x" or the like: a change inside an event */
} events_key_t;

static events_key_t
events_key(const char *key, const char *field, size_t flen)
{
   if (strncmp(key, field, flen) != 0) {
      return KEY_OTHER;
   }
   if (key[flen] == '\0') {
      return KEY_ARRAY;
   }
   if (key[flen] != '.') {
      return KEY_OTHER;
   }
   return all_digits(key + flen + 1) ? KEY_ELEMENT : KEY_INSIDE;
}

/* Folds into *@lowest the seq of the event at @value if it is above @e's last seq. */
static void
fold_new_seq(const relay_entity_t *e, const bson_value_t *value, int64_t *lowest)
{
   int64_t seq = relay_event_peek_seq(value);
   if (seq > e->last_seq && seq < *lowest) {
      *lowest = seq;
   }
}

static void
fold_new_seqs(const relay_entity_t *e, const bson_iter_t *it, int64_t *lowest)
{
   bson_iter_t arr;
   if (BSON_ITER_HOLDS_ARRAY(it) && bson_iter_recurse(it, &arr)) {
      while (bson_iter_next(&arr)) {
         fold_new_seq(e, bson_iter_value(&arr), lowest);
      }
   }
}

/* Whether the change's new events (in @events, the whole array, or in the "events.N" fields
 * of @fields) start above the seq after @e's last: the events between were written by a
 * change this relay never saw (the stream's history was lost while the entity stayed in
 * the table), and they are pending in the document unless cleared since. Taking this change
 * would raise last_seq above them, and the sweep would then find them "not above the last
 * seq" and dead-letter them. Seqs are consecutive with liboutbox; a writer that skips seqs
 * only costs a read. Nothing is known of an entity with last_seq 0. */
static bool
skips_seqs(const relay_ingest_t *in, const relay_entity_t *e, const bson_iter_t *events,
           const bson_iter_t *fields)
{
   const char *field = in->cfg->events_field;
   size_t flen = strlen(field);
   int64_t lowest = INT64_MAX;
   bson_iter_t it;

   if (e->last_seq == 0) {
      return false;
   }
   if (events) {
      fold_new_seqs(e, events, &lowest);
   } else {
      it = *fields;
      while (bson_iter_next(&it)) {
         events_key_t kind = events_key(bson_iter_key(&it), field, flen);
         if (kind == KEY_ARRAY) {
            fold_new_seqs(e, &it, &lowest);
         } else if (kind == KEY_ELEMENT) {
            fold_new_seq(e, bson_iter_value(&it), &lowest);
         }
      }
   }
   return lowest != INT64_MAX && lowest > e->last_seq + 1;
}

/* Takes the new events from the change itself. Returns false when it does not carry them
 * in a form we understand, or skips seqs (then the document is read instead). */
bool
relay_change_events_take(relay_ingest_t *in, relay_entity_t *e, const char *op, const bson_t *doc,
                         relay_pos_t *pos)
{
   const char *field = in->cfg->events_field;
   size_t flen = strlen(field);
   bson_iter_t it, fields;
   bool found = false;
   /* While the stream replays history (after a reopen, or behind a partition's sweep), what
    * this entity already took may come again. */
   int64_t replayed_upto =
      in->verifying || (e->part >= 0 && in->owner->fresh(in->owner_ctx, e->part)) ? e->last_seq : 0;
   if (e->read_seq > replayed_upto) {
      replayed_upto = e->read_seq; /* shown by a read of its document already */
   }

   if (!strcmp(op, "insert") || !strcmp(op, "replace")) {
      char *path = bson_strdup_printf("fullDocument.%s", field);
      found = bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &fields) &&
              BSON_ITER_HOLDS_ARRAY(&fields) && !skips_seqs(in, e, &fields, NULL);
      bson_free(path);
      if (found) {
         relay_docs_offer_array(in, e, &fields, pos, replayed_upto, false);
      }
      return found;
   }
   if (!bson_iter_init(&it, doc) ||
       !bson_iter_find_descendant(&it, "updateDescription.updatedFields", &fields) ||
       !bson_iter_recurse(&fields, &it)) {
      return false;
   }
   /* A requeue: the event is below the entity's last seq, and whether it is still pending
    * (not already published since) only the document says. Read it. */
   bson_iter_t requeues = it;
   if (bson_iter_find(&requeues, in->cfg->requeues_field) || skips_seqs(in, e, NULL, &it)) {
      return false;
   }
   while (bson_iter_next(&it)) {
      events_key_t kind = events_key(bson_iter_key(&it), field, flen);
      if (kind == KEY_INSIDE) {
         return false; /* a change inside an event: not an append we can read */
      }
      if (kind == KEY_ARRAY) {
         relay_docs_offer_array(in, e, &it, pos, replayed_upto, false);
      } else if (kind == KEY_ELEMENT) {
         relay_docs_offer_one(in, e, bson_iter_value(&it), pos, replayed_upto, false);
      }
      found = found || kind != KEY_OTHER;
   }
   return found;
}

/* The eventSeq a change leaves in its document, or 0 if it does not say. */
int64_t
relay_change_events_seq(const relay_ingest_t *in, const char *op, const bson_t *doc)
{
   bool whole = !strcmp(op, "insert") || !strcmp(op, "replace");
   char *path =
      bson_strdup_printf("%s.%s", whole ? "fullDocument" : "updateDescription.updatedFields",
                         in->cfg->event_seq_field);
   bson_iter_t it, found;
   int64_t seq = 0;
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found) &&
       (BSON_ITER_HOLDS_INT64(&found) || BSON_ITER_HOLDS_INT32(&found))) {
      seq = bson_iter_as_int64(&found);
   }
   bson_free(path);
   return seq;
}
