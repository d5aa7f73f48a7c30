/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Committing changes with events: update, append, soft delete. Each change is one update
 * command, so an event is stored if and only if its change is. No state of its own: each call
 * pops a client and uses the handle's cache (which locks itself); the events it is given are the
 * caller's, marked committed only on success. Thread-safe.
 */
#include <string.h>

#include "check-private.h"
#include "collection-private.h"
#include "error-private.h"
#include "event-private.h"
#include "outcome-private.h"

/* One requested change, validated. */
typedef struct {
   const bson_value_t *id;
   int64_t expected;     /* or OUTBOX_ANY_VERSION */
   const bson_t *update; /* the caller's operators; may be NULL */
   bool soft_delete;     /* also $set the deleted field to true */
   outbox_event_t *const *events;
   size_t n;
   int64_t time;   /* stamped on every event */
   int64_t growth; /* upper estimate of the bytes the change adds to the document */
} commit_t;

static bool
check_events(const outbox_collection_t *c, outbox_event_t *const *events, size_t n,
             bson_error_t *error)
{
   if (!_outbox_events_check(events, n, error)) {
      return false;
   }
   if ((int64_t)n > c->max_pending) {
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_PENDING,
                        "%zu events in one change exceed maxPendingEvents (%" PRId64 ")", n,
                        c->max_pending);
      return false;
   }
   return true;
}

/* An upper estimate of how much the change grows the document: the pushed events plus the
 * whole encoded caller's update (values set are never larger than the operators holding
 * them, give or take an int32 growing to an Int64). */
static int64_t
estimate_growth(const commit_t *req, const outbox_collection_t *c)
{
   int64_t growth = _outbox_events_stored_size(req->events, req->n);

   growth += req->update ? (int64_t)req->update->len : 0;
   growth += req->n > 0 ? _OUTBOX_RECENT_ENTRY_SIZE : 0;
   if (req->soft_delete) {
      growth += (int64_t)strlen(c->names.deleted) + 3;
   }
   return growth;
}

static void
append_events_push(const outbox_collection_t *c, const commit_t *req, int64_t first_seq,
                   bson_t *push)
{
   bson_t each, arr;

   bson_append_document_begin(push, c->names.events, -1, &each);
   bson_append_array_begin(&each, "$each", -1, &arr);
   _outbox_events_append_stored(&arr, req->events, req->n, first_seq, req->time);
   bson_append_array_end(&each, &arr);
   bson_append_document_end(push, &each);
   _outbox_outcome_append_ring_push(c, req->events, req->n, first_seq, push);
}

static void
append_our_set(const outbox_collection_t *c, const commit_t *req, int64_t version,
               int64_t event_seq, bson_t *set)
{
   /* $set rather than $inc: the values are known, and $set also repairs an int32. */
   BSON_APPEND_INT64(set, c->names.version, version + 1);
   if (req->n > 0) {
      BSON_APPEND_INT64(set, c->names.event_seq, event_seq + (int64_t)req->n);
   }
   if (req->soft_delete) {
      BSON_APPEND_BOOL(set, c->names.deleted, true);
   }
}

/* Copies the caller's operator at `it` into `out`, adding our fields to $set and $push.
 * Sets *set_done / *push_done when it did so. */
static void
merge_op(const outbox_collection_t *c, const commit_t *req, int64_t version, int64_t event_seq,
         bson_iter_t *it, bson_t *out, bool *set_done, bool *push_done)
{
   const char *key = bson_iter_key(it);
   bool is_set = strcmp(key, "$set") == 0;
   bool is_push = !*push_done && strcmp(key, "$push") == 0;
   const uint8_t *data;
   uint32_t len;
   bson_t op, theirs;

   if (!is_set && !is_push) {
      bson_append_value(out, key, -1, bson_iter_value(it));
      return;
   }
   bson_iter_document(it, &len, &data);
   bson_init_static(&theirs, data, len);
   bson_append_document_begin(out, key, -1, &op);
   bson_concat(&op, &theirs);
   if (is_set) {
      append_our_set(c, req, version, event_seq, &op);
      *set_done = true;
   } else {
      append_events_push(c, req, event_seq + 1, &op);
      *push_done = true;
   }
   bson_append_document_end(out, &op);
}

/* Merges the caller's operators with ours: our $set and $push fields go into the caller's
 * $set and $push when present (an operator may appear only once). */
static void
build_update(const outbox_collection_t *c, const commit_t *req, int64_t version, int64_t event_seq,
             bson_t *out)
{
   bool set_done = false, push_done = req->n == 0;
   bson_iter_t it;
   bson_t op;

   if (req->update && bson_iter_init(&it, req->update)) {
      while (bson_iter_next(&it)) {
         merge_op(c, req, version, event_seq, &it, out, &set_done, &push_done);
      }
   }
   if (!set_done) {
      bson_append_document_begin(out, "$set", -1, &op);
      append_our_set(c, req, version, event_seq, &op);
      bson_append_document_end(out, &op);
   }
   if (!push_done) {
      bson_append_document_begin(out, "$push", -1, &op);
      append_events_push(c, req, event_seq + 1, &op);
      bson_append_document_end(out, &op);
   }
}

/* One update attempt at version `version` (and eventSeq `event_seq` when appending).
 * Returns 1 if it was applied, 0 if the filter matched nothing, -1 on error. */
static int
send_update(outbox_collection_t *c, _outbox_conn_t *conn, const commit_t *req, int64_t version,
            int64_t event_seq, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, update = BSON_INITIALIZER, reply;
   bson_iter_t it;
   int ret = -1;

   BSON_APPEND_VALUE(&filter, "_id", req->id);
   BSON_APPEND_INT64(&filter, c->names.version, version);
   if (req->n > 0) {
      /* Also what keeps the pending limit without a filter clause of its own: judge()
       * checked it against a pending count read at this eventSeq (or an upper bound of it).
       * Every append raises eventSeq and the relay only removes events, so while eventSeq
       * matches, no more events can be pending than judge() saw. (An "events.<limit - n>":
       * {$exists: false} clause cost the server a walk over every pending event per commit,
       * ~15% of its time per update.) */
      BSON_APPEND_INT64(&filter, c->names.event_seq, event_seq);
   }
   build_update(c, req, version, event_seq, &update);
   if (mongoc_collection_update_one(conn->coll, &filter, &update, &c->update_opts, &reply, error)) {
      ret = bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) > 0;
   } else {
      _outbox_map_size_error(error);
      if (_outbox_outcome_is_unknown(error)) {
         _outbox_cache_remove(c->cache, req->id);
         _outbox_outcome_set_unknown(error, req->events, req->n, version, event_seq, req->time);
      }
   }
   bson_destroy(&reply);
   bson_destroy(&update);
   bson_destroy(&filter);
   return ret;
}

/* Decides from a known state whether to send: 1 send, 0 the state is from the cache and
 * refutes the change (read to be sure), -1 refused (error set). */
static int
judge(const outbox_collection_t *c, const commit_t *req, const _outbox_doc_state_t *st, bool fresh,
      outbox_commit_t *result, bson_error_t *error)
{
   if (req->expected != OUTBOX_ANY_VERSION && st->version != req->expected) {
      if (!fresh) {
         return 0;
      }
      result->version = st->version;
      _outbox_set_error(error, OUTBOX_ERROR_CONFLICT,
                        "entity is at version %" PRId64 ", expected %" PRId64, st->version,
                        req->expected);
      return -1;
   }
   /* Cached pending counts are upper bounds (the relay removes events without changing the
    * version), so only a fresh count may refuse. */
   if (req->n > 0 && st->pending + (int64_t)req->n > c->max_pending) {
      if (!fresh) {
         return 0;
      }
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_PENDING,
                        "entity has %" PRId64 " pending events; %zu more exceed "
                        "maxPendingEvents (%" PRId64 ")",
                        st->pending, req->n, c->max_pending);
      return -1;
   }
   if (st->size + req->growth > c->max_doc_size) {
      if (!fresh) {
         return 0;
      }
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_SIZE,
                        "document of %" PRId64 " bytes would grow by about %" PRId64
                        " bytes, past maxDocumentSize (%" PRId64 ")",
                        st->size, req->growth, c->max_doc_size);
      return -1;
   }
   return 1;
}

static void
committed(outbox_collection_t *c, const commit_t *req, const _outbox_doc_state_t *st, bool have,
          int64_t version, outbox_commit_t *result)
{
   result->version = version + 1;
   if (req->n > 0) {
      result->first_seq = st->event_seq + 1;
      result->last_seq = st->event_seq + (int64_t)req->n;
      _outbox_events_mark_committed(req->events, req->n, result->first_seq, req->time);
   }
   if (have) {
      _outbox_doc_state_t next = {.version = version + 1,
                                  .event_seq = st->event_seq + (int64_t)req->n,
                                  .pending = st->pending + (int64_t)req->n,
                                  .size = st->size + req->growth};

      _outbox_cache_put(c->cache, req->id, &next);
   }
}

/* The state is needed to number events and for OUTBOX_ANY_VERSION; a plain versioned update
 * without events can go out blind. Every update that matches nothing is followed by a read
 * that says why (conflict, not found, limit) or that the cached state was stale. */
static bool
commit_run(outbox_collection_t *c, _outbox_conn_t *conn, const commit_t *req,
           outbox_commit_t *result, bson_error_t *error)
{
   _outbox_doc_state_t st = {0};
   bool have = _outbox_cache_get(c->cache, req->id, &st);
   bool need_state = req->n > 0 || req->expected == OUTBOX_ANY_VERSION;
   bool fresh = false;
   int64_t sent = 0;
   int r;

   for (;;) {
      if (!have && need_state) {
         if (!_outbox_read_state(c, conn, req->id, NULL, &st, error)) {
            return false;
         }
         have = fresh = true;
      }
      r = have ? judge(c, req, &st, fresh, result, error) : 1;
      if (r < 0) {
         return false;
      }
      if (r > 0) {
         if (sent >= c->retries) {
            break;
         }
         r = send_update(c, conn, req, have ? st.version : req->expected, st.event_seq, error);
         if (r < 0) {
            return false;
         }
         if (r > 0) {
            committed(c, req, &st, have, have ? st.version : req->expected, result);
            return true;
         }
         sent++;
         /* A retry of an attempt in doubt may have lost to that attempt (outcome.c). */
         r = _outbox_outcome_resolve(c, conn, req->id, req->events, req->n, result, error);
         if (r != 0) {
            return r > 0;
         }
      }
      have = fresh = false;
      need_state = true;
   }
   _outbox_set_error(error, OUTBOX_ERROR_RETRIES_EXHAUSTED,
                     "entity kept changing during %" PRId64 " attempts", sent);
   return false;
}

static bool
commit(outbox_collection_t *c, commit_t *req, outbox_commit_t *result, bson_error_t *error)
{
   _outbox_conn_t conn = {0};
   outbox_commit_t ignored;
   bson_error_t local;
   int resolved;
   bool ok;

   /* The outcome decides what result->version means, so always have an error to look at. */
   error = error ? error : &local;
   result = result ? result : &ignored;
   memset(result, 0, sizeof *result);
   if (!c || (req->expected < 1 && req->expected != OUTBOX_ANY_VERSION)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "collection is NULL or expected_version is not >= 1");
      return false;
   }
   if (!_outbox_id_check(req->id, error) || !_outbox_update_check(req->update, &c->names, error) ||
       !check_events(c, req->events, req->n, error)) {
      return false;
   }
   req->time = _outbox_now_ms();
   req->growth = estimate_growth(req, c);
   if (req->growth > c->max_doc_size) {
      _outbox_set_error(error, OUTBOX_ERROR_LIMIT_SIZE,
                        "the change alone is %" PRId64 " bytes, past maxDocumentSize (%" PRId64 ")",
                        req->growth, c->max_doc_size);
      return false;
   }
   _outbox_conn_open(c, &conn);
   /* A retry of a commit whose outcome was unknown first finds out whether it was stored. */
   resolved = _outbox_outcome_resolve(c, &conn, req->id, req->events, req->n, result, error);
   ok = resolved > 0 || (resolved == 0 && commit_run(c, &conn, req, result, error));
   _outbox_conn_close(c, &conn);
   if (!ok && !(error->domain == OUTBOX_ERROR_DOMAIN && error->code == OUTBOX_ERROR_CONFLICT)) {
      result->version = 0;
   }
   return ok;
}

bool
outbox_collection_update(outbox_collection_t *collection, const bson_value_t *id,
                         int64_t expected_version, const bson_t *update,
                         outbox_event_t *const *events, size_t n_events, outbox_commit_t *result,
                         bson_error_t *error)
{
   commit_t req = {.id = id, .expected = expected_version, .events = events, .n = n_events};

   req.update = update && !bson_empty(update) ? update : NULL;
   return commit(collection, &req, result, error);
}

bool
outbox_collection_append(outbox_collection_t *collection, const bson_value_t *id,
                         outbox_event_t *const *events, size_t n_events, outbox_commit_t *result,
                         bson_error_t *error)
{
   return outbox_collection_update(collection, id, OUTBOX_ANY_VERSION, NULL, events, n_events,
                                   result, error);
}

bool
outbox_collection_soft_delete(outbox_collection_t *collection, const bson_value_t *id,
                              int64_t expected_version, outbox_event_t *event,
                              outbox_commit_t *result, bson_error_t *error)
{
   outbox_event_t *const events[1] = {event};
   commit_t req = {.id = id,
                   .expected = expected_version,
                   .soft_delete = true,
                   .events = events,
                   .n = event ? 1 : 0};

   return commit(collection, &req, result, error);
}
