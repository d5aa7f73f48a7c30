/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The inbox's reads and writes: the state document (lookup and the guarded findAndModify),
 * the ledger, and the apply loop that ties them together. Options, argument checks and the
 * building of the update are in inbox.c, above it. It only reads the handle (fixed once
 * outbox_inbox_new() returns) and uses the client it is lent: thread-safe.
 */
#include <string.h>
#include <time.h>

#include "error-private.h"
#include "inbox-private.h"

/* A no-match that is not a duplicate means the document changed under us (created
 * concurrently, or the id rolled out of the window); a few rounds settle it. */
#define APPLY_ROUNDS 4

/* ---- talking to MongoDB ------------------------------------------------------------------- */

static int64_t
int_field(const bson_t *doc, const char *key)
{
   bson_iter_t it;

   if (doc && bson_iter_init_find(&it, doc, key) &&
       (BSON_ITER_HOLDS_INT32(&it) || BSON_ITER_HOLDS_INT64(&it) || BSON_ITER_HOLDS_DOUBLE(&it)))
      return bson_iter_as_int64(&it);
   return 0;
}

static bool
find_one(mongoc_collection_t *coll, const bson_t *filter, const bson_t *projection, bson_t *out,
         bool *found, bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool ok;

   BSON_APPEND_INT64(&opts, "limit", 1);
   if (projection)
      BSON_APPEND_DOCUMENT(&opts, "projection", projection);
   cursor = mongoc_collection_find_with_opts(coll, filter, &opts, NULL);
   *found = mongoc_cursor_next(cursor, &doc);
   if (*found && out)
      bson_copy_to(doc, out);
   ok = !mongoc_cursor_error(cursor, error);
   if (!ok && *found && out)
      bson_destroy(out);
   mongoc_cursor_destroy(cursor);
   bson_destroy(&opts);
   return ok;
}

/* The ledger key: the (event, document) pair, so one event may feed several documents. */
static void
append_ledger_id(bson_t *doc, const char *event_id, const bson_value_t *doc_id)
{
   bson_t key;

   BSON_APPEND_DOCUMENT_BEGIN(doc, "_id", &key);
   BSON_APPEND_UTF8(&key, "event", event_id);
   BSON_APPEND_VALUE(&key, "doc", doc_id);
   bson_append_document_end(doc, &key);
}

bool
_outbox_inbox_ledger_has(const outbox_inbox_t *ib, mongoc_client_t *client,
                         const bson_value_t *doc_id, const char *event_id, bool *seen,
                         bson_error_t *error)
{
   mongoc_collection_t *coll;
   bson_t filter = BSON_INITIALIZER;
   bool ok;

   *seen = false;
   if (!ib->ledger)
      return true;
   coll = mongoc_client_get_collection(client, ib->db, ib->ledger);
   append_ledger_id(&filter, event_id, doc_id);
   ok = find_one(coll, &filter, NULL, NULL, seen, error);
   bson_destroy(&filter);
   mongoc_collection_destroy(coll);
   return ok;
}

bool
_outbox_inbox_doc_lookup(const outbox_inbox_t *ib, mongoc_collection_t *coll,
                         const bson_value_t *doc_id, const char *event_id,
                         _outbox_doc_lookup_t *state, int64_t *stored_seq, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, projection = BSON_INITIALIZER, doc;
   bson_iter_t it, elem;
   bool found;

   *state = _OUTBOX_DOC_MISSING;
   *stored_seq = 0;
   BSON_APPEND_VALUE(&filter, "_id", doc_id);
   BSON_APPEND_INT32(&projection, ib->inbox_field, 1);
   BSON_APPEND_INT32(&projection, ib->seq_field, 1);
   if (!find_one(coll, &filter, &projection, &doc, &found, error)) {
      bson_destroy(&filter);
      bson_destroy(&projection);
      return false;
   }
   bson_destroy(&filter);
   bson_destroy(&projection);
   if (!found)
      return true;
   *state = _OUTBOX_DOC_WITHOUT_ID;
   *stored_seq = int_field(&doc, ib->seq_field);
   if (bson_iter_init_find(&it, &doc, ib->inbox_field) && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &elem)) {
      while (bson_iter_next(&elem)) {
         if (BSON_ITER_HOLDS_UTF8(&elem) && !strcmp(bson_iter_utf8(&elem, NULL), event_id)) {
            *state = _OUTBOX_DOC_WITH_ID;
            break;
         }
      }
   }
   bson_destroy(&doc);
   return true;
}

/* Reads the findAndModify reply: a pre-image means it matched (and holds the previous seq);
 * no pre-image but an upserted id means it inserted. */
static void
read_reply(const outbox_inbox_t *ib, const bson_t *reply, bool *matched, int64_t *previous)
{
   bson_iter_t it, leo;

   if (bson_iter_init_find(&it, reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_t pre;
      const uint8_t *data;
      uint32_t len;

      bson_iter_document(&it, &len, &data);
      bson_init_static(&pre, data, len);
      *matched = true;
      *previous = int_field(&pre, ib->seq_field);
   } else if (bson_iter_init_find(&leo, reply, "lastErrorObject") && bson_iter_recurse(&leo, &it) &&
              bson_iter_find(&it, "upserted")) {
      *matched = true; /* inserted: no pre-image, nothing applied before */
   }
}

/* One guarded findAndModify. *matched tells whether it applied; the pre-image's seq lands in
 * *previous. Under upsert, a duplicate key error means "a document with this _id exists but
 * the guard failed" (or another unique index refused the insert): *dup_key is set, the error
 * kept in *error, and the caller tells the two apart like a no-match. */
static bool
guarded_update(const outbox_inbox_t *ib, mongoc_collection_t *coll, const bson_value_t *doc_id,
               const char *event_id, int64_t seq, const bson_t *update, bool *matched,
               bool *dup_key, int64_t *previous, bson_error_t *error)
{
   mongoc_find_and_modify_opts_t *fam = mongoc_find_and_modify_opts_new();
   bson_t query = BSON_INITIALIZER, guard, fields = BSON_INITIALIZER, extra = BSON_INITIALIZER;
   bson_error_t local;
   bson_t reply;
   bool ok;

   BSON_APPEND_VALUE(&query, "_id", doc_id);
   BSON_APPEND_DOCUMENT_BEGIN(&query, ib->inbox_field, &guard);
   BSON_APPEND_UTF8(&guard, "$ne", event_id);
   bson_append_document_end(&query, &guard);
   if (ib->skip_late && seq > 0) {
      /* {$not: {$gte}} also matches a document that has no seq yet. */
      bson_t not_gte, gte;

      BSON_APPEND_DOCUMENT_BEGIN(&query, ib->seq_field, &not_gte);
      BSON_APPEND_DOCUMENT_BEGIN(&not_gte, "$not", &gte);
      BSON_APPEND_INT64(&gte, "$gte", seq);
      bson_append_document_end(&not_gte, &gte);
      bson_append_document_end(&query, &not_gte);
   }
   BSON_APPEND_INT32(&fields, ib->seq_field, 1);
   BSON_APPEND_DOCUMENT(&extra, "writeConcern", ib->write_concern);
   mongoc_find_and_modify_opts_set_update(fam, update);
   mongoc_find_and_modify_opts_set_fields(fam, &fields);
   mongoc_find_and_modify_opts_set_flags(fam, ib->upsert ? MONGOC_FIND_AND_MODIFY_UPSERT
                                                         : MONGOC_FIND_AND_MODIFY_NONE);
   mongoc_find_and_modify_opts_append(fam, &extra);

   *matched = *dup_key = false;
   *previous = 0;
   ok = mongoc_collection_find_and_modify_with_opts(coll, &query, fam, &reply, &local);
   if (ok)
      read_reply(ib, &reply, matched, previous);
   else if (local.code == 11000 && ib->upsert)
      *dup_key = ok = true;
   if (!ok || *dup_key) {
      if (error)
         *error = local;
   }
   bson_destroy(&reply);
   bson_destroy(&query);
   bson_destroy(&fields);
   bson_destroy(&extra);
   mongoc_find_and_modify_opts_destroy(fam);
   return ok;
}

static int64_t
now_ms(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_REALTIME, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Records an applied event in the ledger. An existing entry is fine: it can only be ours. */
static bool
ledger_record(const outbox_inbox_t *ib, mongoc_client_t *client, const bson_value_t *doc_id,
              const char *event_id, int64_t seq)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, ib->db, ib->ledger);
   bson_t doc = BSON_INITIALIZER, opts = BSON_INITIALIZER;
   bson_error_t error;
   bool ok;

   append_ledger_id(&doc, event_id, doc_id);
   BSON_APPEND_DATE_TIME(&doc, "at", now_ms());
   BSON_APPEND_INT64(&doc, "seq", seq);
   BSON_APPEND_DOCUMENT(&opts, "writeConcern", ib->write_concern);
   ok = mongoc_collection_insert_one(coll, &doc, &opts, NULL, &error) || error.code == 11000;
   bson_destroy(&doc);
   bson_destroy(&opts);
   mongoc_collection_destroy(coll);
   return ok;
}

/* ---- the apply loop ---------------------------------------------------------------------- */

typedef enum { NO_MATCH_RETRY, NO_MATCH_DONE, NO_MATCH_FAILED } no_match_t;

/* Works out why the guarded update matched nothing: a duplicate, a late event (skipLate), a
 * missing document, or a document that changed under us (retry). */
static no_match_t
resolve_no_match(const outbox_inbox_t *ib, mongoc_client_t *client, mongoc_collection_t *coll,
                 const bson_value_t *doc_id, const char *event_id, int64_t seq, bool dup_key,
                 outbox_inbox_result_t *res, bson_error_t *error)
{
   _outbox_doc_lookup_t state;
   int64_t stored;
   bool seen = false;

   if (!_outbox_inbox_doc_lookup(ib, coll, doc_id, event_id, &state, &stored, error))
      return NO_MATCH_FAILED;
   if (state == _OUTBOX_DOC_MISSING && dup_key)
      return NO_MATCH_FAILED; /* another unique index refused the insert: its error is in *error */
   if (state == _OUTBOX_DOC_MISSING && !ib->upsert) {
      _outbox_set_error(error, OUTBOX_ERROR_NOT_FOUND, "no such state document");
      return NO_MATCH_FAILED;
   }
   /* The id was in the window a moment ago but newer events may have pushed it out since:
    * the ledger still knows it (without a ledger, this is the documented window limit). */
   if (state == _OUTBOX_DOC_WITHOUT_ID &&
       !_outbox_inbox_ledger_has(ib, client, doc_id, event_id, &seen, error))
      return NO_MATCH_FAILED;
   if (state == _OUTBOX_DOC_WITH_ID || seen) {
      res->status = OUTBOX_INBOX_DUPLICATE;
      return NO_MATCH_DONE;
   }
   if (state == _OUTBOX_DOC_WITHOUT_ID && ib->skip_late && seq > 0 && stored >= seq) {
      res->status = OUTBOX_INBOX_SKIPPED_LATE;
      res->order = OUTBOX_SEQ_LATE;
      res->previous_seq = stored;
      return NO_MATCH_DONE;
   }
   return NO_MATCH_RETRY;
}

bool
_outbox_inbox_apply_with(const outbox_inbox_t *ib, mongoc_client_t *client,
                         const bson_value_t *doc_id, const char *event_id, int64_t seq,
                         const bson_t *update, outbox_inbox_result_t *res, bson_error_t *error)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, ib->db, ib->coll);
   bool ok = false, seen, matched, dup_key;
   int64_t previous;

   if (!_outbox_inbox_ledger_has(ib, client, doc_id, event_id, &seen, error))
      goto done;
   if (seen) {
      res->status = OUTBOX_INBOX_DUPLICATE;
      ok = true;
      goto done;
   }
   for (int round = 0; round < APPLY_ROUNDS; round++) {
      if (!guarded_update(ib, coll, doc_id, event_id, seq, update, &matched, &dup_key, &previous,
                          error))
         goto done;
      if (matched) {
         res->status = OUTBOX_INBOX_APPLIED;
         res->previous_seq = previous;
         res->order = outbox_seq_classify(previous, seq);
         res->ledger_recorded = ib->ledger && ledger_record(ib, client, doc_id, event_id, seq);
         ok = true;
         goto done;
      }
      switch (resolve_no_match(ib, client, coll, doc_id, event_id, seq, dup_key, res, error)) {
      case NO_MATCH_DONE:
         ok = true;
         goto done;
      case NO_MATCH_FAILED:
         goto done;
      case NO_MATCH_RETRY:
         break;
      }
   }
   _outbox_set_error(error, OUTBOX_ERROR_RETRIES_EXHAUSTED, "state document kept changing");
done:
   mongoc_collection_destroy(coll);
   return ok;
}
