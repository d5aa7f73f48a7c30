/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest's documents: the pending events of a stored document into the table, whether the
 * document comes from the sweep's cursor (relay_docs_sync()) or is read now ahead of the
 * stream (relay_docs_read()), and the offers of stored events both these and the change
 * events make (relay_docs_offer_one(), relay_docs_offer_array()). The documents reported for
 * an events field that is not an array (relay_ingest_t.not_array_seen) are touched only
 * here and freed by relay_changes_cleanup(). Main thread only.
 */
#include <string.h>

#include "stream/ingest-private.h"
#include "util/error.h"
#include "util/log.h"

/* Past this many documents reported (relay_ingest_t.not_array_seen), every one is reported. */
#define NOT_ARRAY_SEEN_MAX 4096

static bool
not_array_first_time(relay_ingest_t *in, int coll, const bson_value_t *id)
{
   relay_not_array_seen_t *seen = &in->not_array_seen;
   bson_t doc = BSON_INITIALIZER;
   size_t len;
   uint8_t *key;
   uint32_t c = (uint32_t)coll;

   bson_append_value(&doc, "", 0, id);
   len = sizeof c + doc.len;
   key = bson_malloc(len);
   memcpy(key, &c, sizeof c);
   memcpy(key + sizeof c, bson_get_data(&doc), doc.len);
   bson_destroy(&doc);
   for (size_t i = 0; i < seen->n; i++) {
      if (seen->lens[i] == len && !memcmp(seen->keys[i], key, len)) {
         bson_free(key);
         return false;
      }
   }
   if (seen->n == NOT_ARRAY_SEEN_MAX) {
      bson_free(key);
      return true;
   }
   seen->keys = bson_realloc(seen->keys, (seen->n + 1) * sizeof *seen->keys);
   seen->lens = bson_realloc(seen->lens, (seen->n + 1) * sizeof *seen->lens);
   seen->keys[seen->n] = key;
   seen->lens[seen->n++] = len;
   return true;
}

/* The document's events field is not an array: nothing in it can be published, and the
 * document is left as it is (it holds no event the relay could move). Said once per
 * document and counted with the dead letters, so an operator learns that a writer bypasses
 * liboutbox. */
static void
report_not_array(relay_ingest_t *in, relay_entity_t *e, const bson_iter_t *it)
{
   if (!not_array_first_time(in, e->coll, &e->id)) {
      return;
   }
   relay_log(RELAY_LOG_WARNING, "stream",
             "document %s/%s: its %s field is a %s, not an array: its events are ignored "
             "(was it written without liboutbox?)",
             relay_namespaces_name(in->ns, e->coll), e->rendered, in->cfg->events_field,
             BSON_ITER_HOLDS_DOCUMENT(it) ? "document"
             : BSON_ITER_HOLDS_UTF8(it)   ? "string"
                                          : "value of another type");
   relay_metrics_add(in->metrics, RELAY_M_DEAD_LETTERED, 1);
}

/* Offers one stored event to @e (see relay_docs_offer_array()), unless relay_table_offer()
 * would skip it as seen already, which is decided from its seq and bytes without parsing it:
 * replays and re-reads of a document offer every pending event again, and the full parse and
 * copy cost more than the refusal. From the document, where a requeued event below last_seq may be
 * taken, only this very element buffered is skipped unparsed (relay_table_offer_requeued()
 * refuses an event id the entity holds). */
void
relay_docs_offer_one(relay_ingest_t *in, relay_entity_t *e, const bson_value_t *value,
                     relay_pos_t *pos, int64_t replayed_upto, bool from_document)
{
   relay_event_t ev;
   if (relay_table_seen(e, relay_event_peek_seq(value), value, from_document ? 0 : replayed_upto)) {
      return;
   }
   relay_event_parse(value, &ev);
   bool requeued = from_document && ev.requeued > 0 && ev.seq <= e->last_seq;
   if (requeued && relay_table_offer_requeued(in->table, e, &ev, pos)) {
      relay_log(RELAY_LOG_INFO, "stream", "requeued event of %s/%s (seq %" PRId64 ") taken",
                relay_namespaces_name(in->ns, e->coll), e->rendered, e->tail->ev.seq);
   } else if (requeued || !relay_table_offer(in->table, e, &ev, pos, replayed_upto)) {
      relay_event_cleanup(&ev);
   }
}

void
relay_docs_offer_array(relay_ingest_t *in, relay_entity_t *e, const bson_iter_t *it,
                       relay_pos_t *pos, int64_t replayed_upto, bool from_document)
{
   bson_iter_t arr;
   if (!BSON_ITER_HOLDS_ARRAY(it)) {
      report_not_array(in, e, it);
      return;
   }
   if (!bson_iter_recurse(it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      relay_docs_offer_one(in, e, bson_iter_value(&arr), pos, replayed_upto, from_document);
   }
}

static int64_t
read_int(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, doc, key) &&
       (BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_INT32(&it))) {
      return bson_iter_as_int64(&it);
   }
   return 0;
}

/* Where a copy of a document comes from (take_doc()). */
typedef enum {
   DOC_SWEPT, /* the sweep's cursor: its partition's fresh window covers the replays */
   DOC_READ,  /* read just now, ahead of the stream: see relay_entity_t.read_seq */
} doc_source_t;

/* Whether an entity the stream takes now in partition @part must stay in the table until the
 * running sweep ends: see relay_docs_sync(). */
bool
relay_docs_hold_for_sweep(const relay_ingest_t *in, int part)
{
   return in->sweeping && relay_partset_has(&in->sweep_set, part);
}

/* Takes the pending events of a document read from the collection of an entity in
 * partition @part. */
static void
take_doc(relay_ingest_t *in, int coll, int part, const bson_t *doc, relay_pos_t *pos,
         doc_source_t source)
{
   bson_iter_t it;
   relay_entity_t *e;
   int64_t seq;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   e = relay_table_add(in->table, coll, bson_iter_value(&it));
   e->label = relay_ingest_label(in, coll);
   e->part = part;
   e->sweep_hold = e->sweep_hold || (source == DOC_READ && relay_docs_hold_for_sweep(in, part));
   if (bson_iter_init_find(&it, doc, in->cfg->events_field)) {
      /* the document as it is now: nothing is a replay */
      relay_docs_offer_array(in, e, &it, pos, 0, true);
   }
   /* Every seq up to eventSeq that is not pending any more was published and cleared. */
   seq = read_int(doc, in->cfg->event_seq_field);
   if (seq > e->last_seq) {
      e->last_seq = seq;
   }
   /* The stream has yet to deliver the changes this copy already shows: if the entity were
    * forgotten once its events are cleared, those changes would look new and publish them
    * again. It stays until the stream passes this eventSeq (release_read_hold()). */
   if (source != DOC_SWEPT) {
      relay_table_hold_read(in->table, e, seq);
   }
   relay_table_forget_if_idle(in->table, e);
}

/* Reads one entity and takes its pending events. False if the read failed. The read and the
 * offer both happen here on the main thread, which is also where clears are completed: the
 * document is never older than a clear the table has forgotten. */
bool
relay_docs_read(relay_ingest_t *in, int coll, int part, const bson_value_t *id,
                const relay_ts_t *after, relay_pos_t *pos)
{
   bson_t doc;
   bson_error_t error;
   relay_ts_t seen;

   if (!in->ops->read_entity(in->ctx, coll, id, after, &doc, &seen, &error)) {
      if (error.code == 0) {
         return true; /* deleted since: nothing pending */
      }
      relay_log(RELAY_LOG_WARNING, "stream", "reading an entity failed%s: %s",
                relay_concerns_read_timed_out(&error)
                   ? " (the majority has not got its change yet; retrying)"
                   : "",
                error.message);
      return false;
   }
   /* The copy may show changes up to the snapshot's time: a read hold lasts until the stream
    * has passed it (caught_up(), changes.c). */
   if (relay_ts_cmp(seen, in->reads_seen) > 0) {
      in->reads_seen = seen;
   }
   take_doc(in, coll, part, &doc, pos, DOC_READ);
   bson_destroy(&doc);
   return true;
}

void
relay_docs_sync(relay_ingest_t *in, int coll, const relay_partset_t *parts, const bson_t *doc,
                relay_pos_t *pos)
{
   bson_iter_t it;
   int part;

   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   part = in->owner->part_of(in->owner_ctx, bson_iter_value(&it));
   /* A sweep without the server's filter reads every pending document; another member's
    * partitions are not ours to publish. */
   if (!relay_partset_has(parts, part) || !in->owner->takes(in->owner_ctx, part)) {
      return;
   }
   /* The sweep's cursor fetches documents a batch before they are used here, and meanwhile
    * the stream may have taken this entity from a fresh read, published its events and
    * cleared them: this copy may still show them, and their seqs are not above the
    * entity's last any more, so they would pass for repeated seqs and be dead-lettered (or,
    * had the table forgotten the entity, be published again out of order). Entities the
    * stream touches during the sweep are therefore kept in the table (sweep_hold), and any
    * entity the table knows is read afresh instead of trusting this copy. */
   if (relay_table_find(in->table, coll, bson_iter_value(&it))) {
      /* After the sweep's start and the newest change the stream gave (what the table
       * took from it): a snapshot older than these, as a new primary's may be for a
       * moment, would show events taken and cleared since as pending. */
      relay_ts_t after =
         relay_ts_cmp(in->newest_change, in->sweep_start) > 0 ? in->newest_change : in->sweep_start;
      if (!relay_docs_read(in, coll, part, bson_iter_value(&it), &after, pos)) {
         relay_sweep_request(in, part); /* read it again with the partition's next sweep */
      }
      return;
   }
   take_doc(in, coll, part, doc, pos, DOC_SWEPT);
}
