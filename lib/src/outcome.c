/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Commit outcomes: telling "not stored" from "may be stored", and recognizing on a retry an
 * earlier attempt that may be stored, and the recentCommits entry every commit with events
 * pushes so that it can. Touches only the attempt remembered in the caller's events
 * (event-private.h); reads the entity, never writes it (commit.c and create.c send the
 * entries it builds).
 *
 * WHY. A commit is one update (or insert) with w: "majority". When the reply is lost (the
 * connection dropped after sending), the primary stepped down while the write waited, or the
 * server applied the write but answered with a writeConcernError (wtimeout 64: it may still be
 * rolled back, or may stay), the caller must not read the failure as "nothing happened":
 * a blind retry with fresh events would store the events twice under two ids, and giving up
 * may drop events that were in fact stored. mongoc already retries such a write once by
 * itself (retryable writes: the server recognizes the retry by its session and txnNumber and
 * applies it at most once); what reaches us is what that one retry could not settle.
 *
 * HOW A RETRY IS RECOGNIZED. The attempt (the version and eventSeq its filter required, its
 * time) is remembered in its events, whose ids are random UUIDs nobody else has. A later
 * commit of exactly those events first reads the entity from the primary:
 *   - one of its ids is among the pending events, dead letters or discarded letters: the
 *     attempt was stored (the events of one commit are stored together or not at all). Before
 *     saying so it reads again with readConcern "majority": success is only reported for a
 *     write that can no longer be rolled back, so the majority snapshot must hold the
 *     attempt's own ids too (pending, dead or discarded letters, or its first id in
 *     recentCommits), never just an eventSeq at or past its last seq: the two reads may reach
 *     two primaries (the first a cut-off one that holds the attempt in a history about to be
 *     rolled back, the second, after a failover, the new one, where another writer's commit
 *     filled those seqs), and then the seq alone would report success for events that are
 *     rolled back. Both reads share a causally consistent session, so the majority read waits
 *     (up to 5 s) for the majority to reach what the first read saw. If the majority snapshot
 *     does not hold the attempt's ids, the answer is UNKNOWN_OUTCOME again (a later retry
 *     reads the primary of the day and decides as below).
 *   - no id is there and eventSeq is still at most the attempt's: the attempt was not stored
 *     on this primary (had it been, eventSeq would have moved past it and never come back;
 *     if it lives on a deposed primary, it is rolled back there). The commit runs as new.
 *   - no id is there, eventSeq moved past the attempt's, and an event of someone else (still
 *     pending, or a dead or discarded letter) holds one of the seqs the attempt was to get:
 *     the attempt's filter pinned eventSeq, so that other commit took its place and it was
 *     not stored. The commit runs as new (with an expected version: OUTBOX_ERROR_CONFLICT).
 *   - recentCommits (the last _OUTBOX_RECENT_COMMITS commits' first seq and first id, pushed
 *     by every commit with events in the same update) settles the case where the relay has
 *     cleared the events: the attempt's first id listed means stored; another id at one of
 *     its seqs means another commit took its place; a list that reaches back to its first seq
 *     without it means not stored (it would have been pushed, and only older entries fall
 *     off).
 *   - otherwise (no id, eventSeq moved, those seqs gone, the list too short or absent, e.g.
 *     written by other languages' writers): either the attempt was stored and the relay has
 *     published and cleared its events, or someone else's commit won and was cleared too.
 *     Nothing left tells them apart, so the answer is UNKNOWN_OUTCOME again, saying so.
 * Why not "eventSeq and version moved exactly by this commit": another writer's commit of as
 * many events at the same version moves them exactly as much.
 * The attempt stays remembered until a commit of its events succeeds: a retry that read "not
 * stored" and then matched nothing may have lost to the very attempt (still in flight when it
 * read), so commit.c looks again after each such miss. A read that fails while resolving is
 * reported as UNKNOWN_OUTCOME too: the attempt's outcome is still unknown. No id is stored for
 * a change without events, so its retry is a new commit.
 */
#include "outcome-private.h"

#include <string.h>

#include "error-private.h"

/* Server errors after which a write may have been applied by an earlier try: the primary
 * stepped down or shut down under it, or the network failed between the servers. */
static const uint32_t primary_changed_codes[] = {
   6,     /* HostUnreachable */
   7,     /* HostNotFound */
   89,    /* NetworkTimeout */
   91,    /* ShutdownInProgress */
   189,   /* PrimarySteppedDown */
   262,   /* ExceededTimeLimit */
   9001,  /* SocketException */
   10107, /* NotWritablePrimary */
   11600, /* InterruptedAtShutdown */
   11602, /* InterruptedDueToReplStateChange */
   13435, /* NotPrimaryNoSecondaryOk */
   13436, /* NotPrimaryOrSecondary */
};

static void
append_entry(bson_t *array, const char *key, int64_t first_seq, const outbox_event_t *first)
{
   bson_t entry;

   BSON_APPEND_DOCUMENT_BEGIN(array, key, &entry);
   BSON_APPEND_INT64(&entry, "seq", first_seq);
   BSON_APPEND_UTF8(&entry, "id", first->id);
   bson_append_document_end(array, &entry);
}

void
_outbox_outcome_append_ring_push(const outbox_collection_t *collection,
                                 outbox_event_t *const *events, size_t n, int64_t first_seq,
                                 bson_t *push)
{
   bson_t each, arr;

   if (n == 0) {
      return;
   }
   BSON_APPEND_DOCUMENT_BEGIN(push, collection->names.recent_commits, &each);
   BSON_APPEND_ARRAY_BEGIN(&each, "$each", &arr);
   append_entry(&arr, "0", first_seq, events[0]);
   bson_append_array_end(&each, &arr);
   BSON_APPEND_INT32(&each, "$slice", -_OUTBOX_RECENT_COMMITS);
   bson_append_document_end(push, &each);
}

void
_outbox_outcome_append_ring(const outbox_collection_t *collection, outbox_event_t *const *events,
                            size_t n, bson_t *doc)
{
   bson_t arr;

   if (n == 0) {
      return;
   }
   BSON_APPEND_ARRAY_BEGIN(doc, collection->names.recent_commits, &arr);
   append_entry(&arr, "0", 1, events[0]);
   bson_append_array_end(doc, &arr);
}

bool
_outbox_outcome_is_unknown(const bson_error_t *error)
{
   if (error->domain == MONGOC_ERROR_STREAM || error->domain == MONGOC_ERROR_PROTOCOL ||
       error->domain == MONGOC_ERROR_WRITE_CONCERN) {
      return true;
   }
   if (error->domain != MONGOC_ERROR_SERVER) {
      return false; /* e.g. server selection: nothing was sent */
   }
   for (size_t i = 0; i < sizeof primary_changed_codes / sizeof primary_changed_codes[0]; i++) {
      if (error->code == primary_changed_codes[i]) {
         return true;
      }
   }
   return false;
}

void
_outbox_outcome_set_unknown(bson_error_t *error, outbox_event_t *const *events, size_t n,
                            int64_t version, int64_t event_seq, int64_t time)
{
   bson_error_t original = *error;

   for (size_t i = 0; i < n; i++) {
      events[i]->attempt = (_outbox_attempt_t){
         .in_doubt = true, .version = version, .event_seq = event_seq, .time = time, .n = n};
   }
   _outbox_set_error(error, OUTBOX_ERROR_UNKNOWN_OUTCOME,
                     "commit outcome unknown (%s; error %" PRIu32 ".%" PRIu32
                     "): it may or may not be stored; retry with the same events",
                     original.message, original.domain, original.code);
}

/* The attempt events[0..n) share, or NULL when none is in doubt. Sets *bad when they are not
 * exactly the events of one attempt. */
static const _outbox_attempt_t *
common_attempt(outbox_event_t *const *events, size_t n, bool *bad)
{
   const _outbox_attempt_t *a = n > 0 ? &events[0]->attempt : NULL;

   *bad = false;
   if (!a || !a->in_doubt) {
      for (size_t i = 1; i < n; i++) {
         *bad = *bad || events[i]->attempt.in_doubt;
      }
      return NULL;
   }
   *bad = a->n != n;
   for (size_t i = 1; i < n && !*bad; i++) {
      const _outbox_attempt_t *b = &events[i]->attempt;

      *bad = !b->in_doubt || b->version != a->version || b->event_seq != a->event_seq ||
             b->time != a->time;
   }
   return a;
}

/* The reads that resolve one attempt: in one causally consistent session, so that the
 * majority read waits (afterClusterTime, added by mongoc) until the majority snapshot has
 * reached what the first read saw, rather than answering from an older snapshot. */
typedef struct {
   outbox_collection_t *c;
   _outbox_conn_t *conn;
   mongoc_client_session_t *session; /* NULL if the server has no sessions */
   const bson_value_t *id;
} _look_t;

/* How long the majority read may wait for the majority to catch up (a majority that is down
 * or far behind makes the outcome still unknown, not a hang). */
#define _OUTBOX_MAJORITY_WAIT_MS 5000

/* Reads the entity from the primary, with readConcern "majority" when asked. Returns 1 and
 * fills `doc` (initialized) when found, 0 when not, -1 on error. */
static int
read_entity(const _look_t *look, bool majority, bson_t *doc, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER;
   bson_t *opts = BCON_NEW("limit", BCON_INT64(1), "singleBatch", BCON_BOOL(true));
   const bson_t *found = NULL;
   mongoc_read_prefs_t *primary = mongoc_read_prefs_new(MONGOC_READ_PRIMARY);
   mongoc_cursor_t *cursor;
   int ret = 0;

   if (majority) {
      BCON_APPEND(opts, "readConcern", "{", "level", BCON_UTF8("majority"), "}", "maxTimeMS",
                  BCON_INT64(_OUTBOX_MAJORITY_WAIT_MS));
   }
   if (look->session && !mongoc_client_session_append(look->session, opts, error)) {
      ret = -1;
      goto done;
   }
   BSON_APPEND_VALUE(&filter, "_id", look->id);
   cursor = mongoc_collection_find_with_opts(look->conn->coll, &filter, opts, primary);
   if (mongoc_cursor_next(cursor, &found)) {
      bson_concat(doc, found);
      ret = 1;
   } else if (mongoc_cursor_error(cursor, error)) {
      ret = -1;
   }
   mongoc_cursor_destroy(cursor);
done:
   mongoc_read_prefs_destroy(primary);
   bson_destroy(opts);
   bson_destroy(&filter);
   return ret;
}

static bool
is_ours(const char *stored_id, outbox_event_t *const *events, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      if (strcmp(stored_id, events[i]->id) == 0) {
         return true;
      }
   }
   return false;
}

/* What the stored document says about an attempt. */
typedef struct {
   bool ours;    /* one of its ids is stored (or its first id is in recentCommits) */
   bool taken;   /* an event or a commit of someone else holds a seq it was to get */
   bool covered; /* recentCommits reaches back to its first seq: it would be listed */
} _evidence_t;

/* Looks at each element of the array `field` of `doc`: its id and seq are at `prefix`id and
 * `prefix`seq ("" for pending events, "event." for dead and discarded letters). */
static void
scan_array(const bson_t *doc, const char *field, const char *prefix, outbox_event_t *const *events,
           const _outbox_attempt_t *a, _evidence_t *ev)
{
   bson_iter_t it, arr, el, found;
   char id_path[16], seq_path[16];
   const char *id;
   int64_t seq;

   bson_snprintf(id_path, sizeof id_path, "%sid", prefix);
   bson_snprintf(seq_path, sizeof seq_path, "%sseq", prefix);
   if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &el) ||
          !bson_iter_find_descendant(&el, id_path, &found) || !BSON_ITER_HOLDS_UTF8(&found)) {
         continue;
      }
      id = bson_iter_utf8(&found, NULL);
      if (is_ours(id, events, a->n)) {
         ev->ours = true;
         continue;
      }
      bson_iter_recurse(&arr, &el);
      seq = bson_iter_find_descendant(&el, seq_path, &found) && BSON_ITER_HOLDS_INT64(&found)
               ? bson_iter_int64(&found)
               : 0;
      ev->taken = ev->taken || (seq > a->event_seq && seq <= a->event_seq + (int64_t)a->n);
   }
}

/* recentCommits holds {seq, id} of the last commits, oldest first, in the order of their
 * seqs; a commit of ours would have added {seq: event_seq + 1, id: our first id}. */
static void
scan_ring(const bson_t *doc, const char *field, outbox_event_t *const *events,
          const _outbox_attempt_t *a, _evidence_t *ev)
{
   bson_iter_t it, arr, el;
   int64_t seq = 0, oldest = INT64_MAX;
   const char *id;

   if (!bson_iter_init_find(&it, doc, field) || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr) || !bson_iter_recurse(&arr, &el) ||
          !bson_iter_find(&el, "seq") || !BSON_ITER_HOLDS_INT64(&el)) {
         return; /* not ours to read: no conclusion from it */
      }
      seq = bson_iter_int64(&el);
      bson_iter_recurse(&arr, &el);
      id = bson_iter_find(&el, "id") && BSON_ITER_HOLDS_UTF8(&el) ? bson_iter_utf8(&el, NULL) : "";
      oldest = seq < oldest ? seq : oldest;
      if (strcmp(id, events[0]->id) == 0) {
         ev->ours = true;
      } else if (seq > a->event_seq && seq <= a->event_seq + (int64_t)a->n) {
         ev->taken = true;
      }
   }
   ev->covered = oldest <= a->event_seq + 1;
}

static _evidence_t
evidence(const outbox_collection_t *c, const bson_t *doc, outbox_event_t *const *events,
         const _outbox_attempt_t *a)
{
   _evidence_t ev = {false, false, false};

   scan_ring(doc, c->names.recent_commits, events, a, &ev);
   scan_array(doc, c->names.events, "", events, a, &ev);
   scan_array(doc, c->names.dead_letters, "event.", events, a, &ev);
   scan_array(doc, c->names.discarded, "event.", events, a, &ev);
   return ev;
}

/* What the majority snapshot of the entity says of the attempt: *present is whether the
 * entity is there at all. */
static bool
majority_evidence(const _look_t *look, outbox_event_t *const *events, const _outbox_attempt_t *a,
                  bool *present, _evidence_t *ev, bson_error_t *error)
{
   bson_t doc = BSON_INITIALIZER;
   int found = read_entity(look, true, &doc, error);

   *present = found > 0;
   *ev = found > 0 ? evidence(look->c, &doc, events, a) : (_evidence_t){0};
   bson_destroy(&doc);
   return found >= 0;
}

/* The earlier attempt's outcome is still unknown: say so, keeping it remembered. */
static int
still_unknown(bson_error_t *error, const char *why)
{
   char reason[sizeof error->message];

   bson_strncpy(reason, why, sizeof reason);
   _outbox_set_error(error, OUTBOX_ERROR_UNKNOWN_OUTCOME, "commit outcome unknown: %s", reason);
   return -1;
}

/* The attempt is stored on the primary: success once the majority snapshot holds its ids. */
static int
stored(const _look_t *look, outbox_event_t *const *events, const _outbox_attempt_t *a,
       outbox_commit_t *result, bson_error_t *error)
{
   bool present;
   _evidence_t ev;
   _outbox_attempt_t at = *a; /* a points into events[0], which mark_committed clears */

   if (!majority_evidence(look, events, &at, &present, &ev, error)) {
      return error->domain == OUTBOX_ERROR_DOMAIN ? -1 : still_unknown(error, error->message);
   }
   if (!present || !ev.ours) {
      _outbox_set_error(error, OUTBOX_ERROR_UNKNOWN_OUTCOME,
                        "commit outcome unknown: the earlier attempt is stored on the primary "
                        "read first but its events are not in the majority snapshot%s; retry "
                        "later with the same events",
                        ev.taken ? " (another commit holds its seqs there: it is being rolled "
                                   "back, or that read reached a cut-off primary)"
                                 : " (not yet majority-committed)");
      return -1;
   }
   result->version = at.version + 1;
   result->first_seq = at.event_seq + 1;
   result->last_seq = at.event_seq + (int64_t)at.n;
   _outbox_events_mark_committed(events, at.n, result->first_seq, at.time);
   return 1;
}

/* Reads the entity and decides (see the top of this file). */
static int
decide(const _look_t *look, outbox_event_t *const *events, const _outbox_attempt_t *a,
       outbox_commit_t *result, bson_error_t *error)
{
   bson_t doc = BSON_INITIALIZER;
   _outbox_doc_state_t st;
   int ret = -1, found = read_entity(look, false, &doc, error);
   _evidence_t ev = found > 0 ? evidence(look->c, &doc, events, a) : (_evidence_t){0};

   if (found < 0) {
      ret = still_unknown(error, error->message);
   } else if (found == 0) {
      ret = 0; /* the attempt made nothing; the commit reports what it finds */
   } else if (ev.ours) {
      ret = stored(look, events, a, result, error);
   } else if (!_outbox_doc_state_parse(&doc, &look->c->names, &st, error)) {
      ret = -1;
   } else if (st.event_seq <= a->event_seq || ev.taken || ev.covered) {
      /* eventSeq never reached it, another commit holds its seqs, or it would be listed */
      ret = 0;
   } else {
      _outbox_set_error(error, OUTBOX_ERROR_UNKNOWN_OUTCOME,
                        "commit outcome unknown: the earlier attempt's events are not in the "
                        "entity and its eventSeq moved from %" PRId64 " to %" PRId64
                        ": they were stored, published and cleared, or another change won",
                        a->event_seq, st.event_seq);
   }
   bson_destroy(&doc);
   return ret;
}

int
_outbox_outcome_resolve(outbox_collection_t *collection, _outbox_conn_t *conn,
                        const bson_value_t *id, outbox_event_t *const *events, size_t n,
                        outbox_commit_t *result, bson_error_t *error)
{
   bool bad;
   const _outbox_attempt_t *a = common_attempt(events, n, &bad);
   mongoc_session_opt_t *causal;
   _look_t look = {.c = collection, .conn = conn, .id = id};
   int ret;

   if (bad) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "the events mix an unknown-outcome commit's events with others: retry "
                        "it with exactly the same events");
      return -1;
   }
   if (!a) {
      return 0;
   }
   /* What the cache says may predate the attempt: every decision reads. */
   _outbox_cache_remove(collection->cache, id);
   causal = mongoc_session_opts_new();
   mongoc_session_opts_set_causal_consistency(causal, true);
   look.session = mongoc_client_start_session(conn->client, causal, NULL);
   mongoc_session_opts_destroy(causal);
   ret = decide(&look, events, a, result, error);
   if (look.session) {
      mongoc_client_session_destroy(look.session);
   }
   return ret;
}
