/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The idempotent inbox (see outbox/inbox.h for the design and its guarantee).
 */
#include <string.h>
#include <time.h>

#include "outbox/inbox.h"

#define DEFAULT_WINDOW 128
#define MAX_WINDOW 10000
#define DEFAULT_TTL (7 * 24 * 3600)
#define MAX_EVENT_ID 256
/* A no-match that is not a duplicate means the document changed under us (created
 * concurrently, or the id rolled out of the window); a few rounds settle it. */
#define APPLY_ROUNDS 4

struct _outbox_inbox_t {
   mongoc_client_pool_t *pool;
   char *db;
   char *coll;
   char *inbox_field;
   char *seq_field;
   char *ledger; /* NULL: disabled */
   int32_t window;
   int32_t ttl;
   bool upsert;
   bool skip_late;
   bson_t write_concern; /* {w: ...} document */
};

static bool
fail(bson_error_t *error, outbox_error_code_t code, const char *msg, const char *arg)
{
   bson_set_error(error, OUTBOX_ERROR_DOMAIN, code, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
   return false;
}

outbox_seq_order_t
outbox_seq_classify(int64_t previous, int64_t seq)
{
   if (seq <= 0)
      return OUTBOX_SEQ_UNTRACKED;
   if (previous < 0)
      previous = 0;
   if (seq == previous + 1)
      return OUTBOX_SEQ_IN_ORDER;
   return seq > previous ? OUTBOX_SEQ_GAP : OUTBOX_SEQ_LATE;
}

const char *
outbox_seq_order_name(outbox_seq_order_t order)
{
   switch (order) {
   case OUTBOX_SEQ_UNTRACKED:
      return "untracked";
   case OUTBOX_SEQ_IN_ORDER:
      return "in-order";
   case OUTBOX_SEQ_GAP:
      return "gap";
   case OUTBOX_SEQ_LATE:
      return "late";
   }
   return "unknown";
}

/* ---- options ------------------------------------------------------------------------------ */

static bool
field_name_ok(const char *name)
{
   return name[0] && name[0] != '$' && !strchr(name, '.') && strcmp(name, "_id") != 0;
}

static bool
opt_string(bson_iter_t *it, char **dst, bson_error_t *error)
{
   if (!BSON_ITER_HOLDS_UTF8(it))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option must be a string",
                  bson_iter_key(it));
   bson_free(*dst);
   *dst = bson_strdup(bson_iter_utf8(it, NULL));
   return true;
}

static bool
opt_int(bson_iter_t *it, int32_t min, int32_t max, int32_t *dst, bson_error_t *error)
{
   int64_t v;

   if (!BSON_ITER_HOLDS_INT32(it) && !BSON_ITER_HOLDS_INT64(it))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option must be an integer",
                  bson_iter_key(it));
   v = bson_iter_as_int64(it);
   if (v < min || v > max)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option out of range", bson_iter_key(it));
   *dst = (int32_t)v;
   return true;
}

static bool
parse_one(outbox_inbox_t *ib, bson_iter_t *it, bson_error_t *error)
{
   const char *key = bson_iter_key(it);

   if (!strcmp(key, "writeConcern")) {
      bson_t doc;
      uint32_t len;
      const uint8_t *data;

      if (!BSON_ITER_HOLDS_DOCUMENT(it))
         return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option must be a document", key);
      bson_iter_document(it, &len, &data);
      bson_init_static(&doc, data, len);
      bson_reinit(&ib->write_concern);
      bson_concat(&ib->write_concern, &doc);
      return true;
   }
   if (!strcmp(key, "inboxField"))
      return opt_string(it, &ib->inbox_field, error);
   if (!strcmp(key, "seqField"))
      return opt_string(it, &ib->seq_field, error);
   if (!strcmp(key, "ledger"))
      return opt_string(it, &ib->ledger, error);
   if (!strcmp(key, "window"))
      return opt_int(it, 1, MAX_WINDOW, &ib->window, error);
   if (!strcmp(key, "ledgerTtlSeconds"))
      return opt_int(it, 1, INT32_MAX, &ib->ttl, error);
   if (!strcmp(key, "upsert") || !strcmp(key, "skipLate")) {
      if (!BSON_ITER_HOLDS_BOOL(it))
         return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option must be a boolean", key);
      *(key[0] == 'u' ? &ib->upsert : &ib->skip_late) = bson_iter_bool(it);
      return true;
   }
   return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "unknown inbox option", key);
}

static bool
parse_opts(outbox_inbox_t *ib, const bson_t *opts, bson_error_t *error)
{
   bson_iter_t it;

   if (opts && bson_iter_init(&it, opts)) {
      while (bson_iter_next(&it)) {
         if (!parse_one(ib, &it, error))
            return false;
      }
   }
   if (!field_name_ok(ib->inbox_field) || !field_name_ok(ib->seq_field) ||
       !strcmp(ib->inbox_field, ib->seq_field))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                  "inboxField and seqField must be distinct, non-empty, not _id, without '.' "
                  "and not start with '$'",
                  NULL);
   if (!ib->ledger[0]) {
      bson_free(ib->ledger); /* "" disables the ledger */
      ib->ledger = NULL;
   }
   return true;
}

outbox_inbox_t *
outbox_inbox_new(mongoc_client_pool_t *pool, const char *db, const char *coll, const bson_t *opts,
                 bson_error_t *error)
{
   outbox_inbox_t *ib;

   if (!pool || !db || !db[0] || !coll || !coll[0]) {
      fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "pool, db and coll are required", NULL);
      return NULL;
   }
   ib = bson_malloc0(sizeof *ib);
   ib->pool = pool;
   ib->db = bson_strdup(db);
   ib->coll = bson_strdup(coll);
   ib->inbox_field = bson_strdup("inbox");
   ib->seq_field = bson_strdup("inboxSeq");
   ib->ledger = bson_strdup_printf("%s_inbox", coll);
   ib->window = DEFAULT_WINDOW;
   ib->ttl = DEFAULT_TTL;
   ib->upsert = true;
   bson_init(&ib->write_concern);
   BSON_APPEND_UTF8(&ib->write_concern, "w", "majority");
   if (!parse_opts(ib, opts, error)) {
      outbox_inbox_destroy(ib);
      return NULL;
   }
   return ib;
}

void
outbox_inbox_destroy(outbox_inbox_t *inbox)
{
   if (!inbox)
      return;
   bson_free(inbox->db);
   bson_free(inbox->coll);
   bson_free(inbox->inbox_field);
   bson_free(inbox->seq_field);
   bson_free(inbox->ledger);
   bson_destroy(&inbox->write_concern);
   bson_free(inbox);
}

/* ---- building the update ------------------------------------------------------------------ */

static bool
path_hits(const char *path, const char *field)
{
   size_t n = strlen(field);

   return !strncmp(path, field, n) && (path[n] == '\0' || path[n] == '.');
}

static bool
path_reserved(const outbox_inbox_t *ib, const char *path)
{
   return path_hits(path, "_id") || path_hits(path, ib->inbox_field) ||
          path_hits(path, ib->seq_field);
}

/* Checks one operator's document: its paths (and $rename's targets) must stay clear of _id
 * and the inbox's own fields, or the guard could be defeated by the caller's update. */
static bool
check_operator(const outbox_inbox_t *ib, const char *op, const bson_t *inner, bson_error_t *error)
{
   bson_iter_t it;

   if (!bson_iter_init(&it, inner))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "malformed update operator", op);
   while (bson_iter_next(&it)) {
      const char *path = bson_iter_key(&it);

      if (path_reserved(ib, path))
         return fail(error, OUTBOX_ERROR_RESERVED_FIELD, "update touches a reserved field", path);
      if (!strcmp(op, "$rename") && BSON_ITER_HOLDS_UTF8(&it) &&
          path_reserved(ib, bson_iter_utf8(&it, NULL)))
         return fail(error, OUTBOX_ERROR_RESERVED_FIELD, "update touches a reserved field",
                     bson_iter_utf8(&it, NULL));
   }
   return true;
}

static void
append_push(const outbox_inbox_t *ib, bson_t *push, const char *event_id)
{
   bson_t spec, each;

   bson_append_document_begin(push, ib->inbox_field, -1, &spec);
   bson_append_array_begin(&spec, "$each", -1, &each);
   bson_append_utf8(&each, "0", 1, event_id, -1);
   bson_append_array_end(&spec, &each);
   /* A negative $slice keeps the newest ids: this is what bounds the document. */
   bson_append_int32(&spec, "$slice", -1, -ib->window);
   bson_append_document_end(push, &spec);
}

/* Copies the caller's operators into `out` and merges in the inbox's $push (and $max when
 * seq is tracked). `out` must be initialised; on failure its content is unspecified. */
static bool
build_update(const outbox_inbox_t *ib, const bson_t *update, const char *event_id, int64_t seq,
             bson_t *out, bson_error_t *error)
{
   bool have_push = false, have_max = false;
   bson_iter_t it;
   bson_t child;

   if (update && !bson_iter_init(&it, update))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "malformed update", NULL);
   while (update && bson_iter_next(&it)) {
      const char *op = bson_iter_key(&it);
      const uint8_t *data;
      uint32_t len;
      bson_t inner;

      if (op[0] != '$' || !BSON_ITER_HOLDS_DOCUMENT(&it))
         return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                     "update must be made of update operators with documents", op);
      bson_iter_document(&it, &len, &data);
      bson_init_static(&inner, data, len);
      if (!check_operator(ib, op, &inner, error))
         return false;
      bson_append_document_begin(out, op, -1, &child);
      bson_concat(&child, &inner);
      if (!strcmp(op, "$push")) {
         append_push(ib, &child, event_id);
         have_push = true;
      } else if (!strcmp(op, "$max") && seq > 0) {
         bson_append_int64(&child, ib->seq_field, -1, seq);
         have_max = true;
      }
      bson_append_document_end(out, &child);
   }
   if (!have_push) {
      bson_append_document_begin(out, "$push", 5, &child);
      append_push(ib, &child, event_id);
      bson_append_document_end(out, &child);
   }
   if (!have_max && seq > 0) {
      bson_append_document_begin(out, "$max", 4, &child);
      bson_append_int64(&child, ib->seq_field, -1, seq);
      bson_append_document_end(out, &child);
   }
   return true;
}

static bool
check_event_id(const char *event_id, bson_error_t *error)
{
   size_t len;

   if (!event_id || !(len = strlen(event_id)) || len > MAX_EVENT_ID ||
       !bson_utf8_validate(event_id, len, false))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "event id must be 1..256 bytes of UTF-8",
                  NULL);
   return true;
}

static bool
check_doc_id(const bson_value_t *doc_id, bson_error_t *error)
{
   if (!doc_id)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "document id is required", NULL);
   switch (doc_id->value_type) {
   case BSON_TYPE_OID:
   case BSON_TYPE_UTF8:
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_BINARY:
      return true;
   default:
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                  "document id must be an ObjectId, string, int32, int64 or binary", NULL);
   }
}

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

static bool
ledger_has(const outbox_inbox_t *ib, mongoc_client_t *client, const bson_value_t *doc_id,
           const char *event_id, bool *seen, bson_error_t *error)
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

/* Whether the state document exists and whether its window holds the event; *stored_seq
 * receives its seqField. */
typedef enum { DOC_MISSING, DOC_WITHOUT_ID, DOC_WITH_ID } doc_state_t;

static bool
doc_lookup(const outbox_inbox_t *ib, mongoc_collection_t *coll, const bson_value_t *doc_id,
           const char *event_id, doc_state_t *state, int64_t *stored_seq, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, projection = BSON_INITIALIZER, doc;
   bson_iter_t it, elem;
   bool found;

   *state = DOC_MISSING;
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
   *state = DOC_WITHOUT_ID;
   *stored_seq = int_field(&doc, ib->seq_field);
   if (bson_iter_init_find(&it, &doc, ib->inbox_field) && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &elem)) {
      while (bson_iter_next(&elem)) {
         if (BSON_ITER_HOLDS_UTF8(&elem) && !strcmp(bson_iter_utf8(&elem, NULL), event_id)) {
            *state = DOC_WITH_ID;
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
   BSON_APPEND_DOCUMENT(&extra, "writeConcern", &ib->write_concern);
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
   BSON_APPEND_DOCUMENT(&opts, "writeConcern", &ib->write_concern);
   ok = mongoc_collection_insert_one(coll, &doc, &opts, NULL, &error) || error.code == 11000;
   bson_destroy(&doc);
   bson_destroy(&opts);
   mongoc_collection_destroy(coll);
   return ok;
}

/* ---- public operations -------------------------------------------------------------------- */

typedef enum { NO_MATCH_RETRY, NO_MATCH_DONE, NO_MATCH_FAILED } no_match_t;

/* Works out why the guarded update matched nothing: a duplicate, a late event (skipLate), a
 * missing document, or a document that changed under us (retry). */
static no_match_t
resolve_no_match(const outbox_inbox_t *ib, mongoc_client_t *client, mongoc_collection_t *coll,
                 const bson_value_t *doc_id, const char *event_id, int64_t seq, bool dup_key,
                 outbox_inbox_result_t *res, bson_error_t *error)
{
   doc_state_t state;
   int64_t stored;
   bool seen = false;

   if (!doc_lookup(ib, coll, doc_id, event_id, &state, &stored, error))
      return NO_MATCH_FAILED;
   if (state == DOC_MISSING && dup_key)
      return NO_MATCH_FAILED; /* another unique index refused the insert: its error is in *error */
   if (state == DOC_MISSING && !ib->upsert) {
      fail(error, OUTBOX_ERROR_NOT_FOUND, "no such state document", NULL);
      return NO_MATCH_FAILED;
   }
   /* The id was in the window a moment ago but newer events may have pushed it out since:
    * the ledger still knows it (without a ledger, this is the documented window limit). */
   if (state == DOC_WITHOUT_ID && !ledger_has(ib, client, doc_id, event_id, &seen, error))
      return NO_MATCH_FAILED;
   if (state == DOC_WITH_ID || seen) {
      res->status = OUTBOX_INBOX_DUPLICATE;
      return NO_MATCH_DONE;
   }
   if (state == DOC_WITHOUT_ID && ib->skip_late && seq > 0 && stored >= seq) {
      res->status = OUTBOX_INBOX_SKIPPED_LATE;
      res->order = OUTBOX_SEQ_LATE;
      res->previous_seq = stored;
      return NO_MATCH_DONE;
   }
   return NO_MATCH_RETRY;
}

/* The apply loop proper, with a client popped by the caller. */
static bool
apply_with(const outbox_inbox_t *ib, mongoc_client_t *client, const bson_value_t *doc_id,
           const char *event_id, int64_t seq, const bson_t *update, outbox_inbox_result_t *res,
           bson_error_t *error)
{
   mongoc_collection_t *coll = mongoc_client_get_collection(client, ib->db, ib->coll);
   bool ok = false, seen, matched, dup_key;
   int64_t previous;

   if (!ledger_has(ib, client, doc_id, event_id, &seen, error))
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
   fail(error, OUTBOX_ERROR_RETRIES_EXHAUSTED, "state document kept changing", NULL);
done:
   mongoc_collection_destroy(coll);
   return ok;
}

bool
outbox_inbox_apply(outbox_inbox_t *inbox, const bson_value_t *doc_id, const char *event_id,
                   int64_t seq, const bson_t *update, outbox_inbox_result_t *result,
                   bson_error_t *error)
{
   outbox_inbox_result_t scratch;
   mongoc_client_t *client;
   bson_t full = BSON_INITIALIZER;
   bool ok = false;

   if (!result)
      result = &scratch;
   memset(result, 0, sizeof *result);
   if (!inbox)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "inbox is NULL", NULL);
   if (seq < 0) {
      fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "seq must not be negative", NULL);
      goto done;
   }
   if (!check_doc_id(doc_id, error) || !check_event_id(event_id, error) ||
       !build_update(inbox, update, event_id, seq, &full, error))
      goto done;
   client = mongoc_client_pool_pop(inbox->pool);
   ok = apply_with(inbox, client, doc_id, event_id, seq, &full, result, error);
   mongoc_client_pool_push(inbox->pool, client);
done:
   bson_destroy(&full);
   return ok;
}

bool
outbox_inbox_seen(outbox_inbox_t *inbox, const bson_value_t *doc_id, const char *event_id,
                  bool *seen, bson_error_t *error)
{
   mongoc_client_t *client;
   mongoc_collection_t *coll;
   doc_state_t state = DOC_MISSING;
   int64_t stored;
   bool ok;

   if (!inbox || !seen)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "inbox and seen are required", NULL);
   *seen = false;
   if (!check_doc_id(doc_id, error) || !check_event_id(event_id, error))
      return false;
   client = mongoc_client_pool_pop(inbox->pool);
   coll = mongoc_client_get_collection(client, inbox->db, inbox->coll);
   ok = doc_lookup(inbox, coll, doc_id, event_id, &state, &stored, error);
   if (ok && state == DOC_WITH_ID)
      *seen = true;
   else if (ok)
      ok = ledger_has(inbox, client, doc_id, event_id, seen, error);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(inbox->pool, client);
   return ok;
}

bool
outbox_inbox_ensure_indexes(outbox_inbox_t *inbox, bson_error_t *error)
{
   mongoc_client_t *client;
   mongoc_database_t *db;
   bson_t *cmd;
   bson_t opts = BSON_INITIALIZER;
   bool ok;

   if (!inbox)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "inbox is NULL", NULL);
   if (!inbox->ledger)
      return true;
   /* The ledger's _id is the (event, doc) pair, so uniqueness needs no index of ours;
    * expiry does. */
   cmd = BCON_NEW("createIndexes", BCON_UTF8(inbox->ledger), "indexes", "[", "{", "key", "{", "at",
                  BCON_INT32(1), "}", "name", BCON_UTF8("outbox_inbox_ttl"), "expireAfterSeconds",
                  BCON_INT32(inbox->ttl), "}", "]");
   BSON_APPEND_DOCUMENT(&opts, "writeConcern", &inbox->write_concern);
   client = mongoc_client_pool_pop(inbox->pool);
   db = mongoc_client_get_database(client, inbox->db);
   ok = mongoc_database_write_command_with_opts(db, cmd, &opts, NULL, error);
   mongoc_database_destroy(db);
   mongoc_client_pool_push(inbox->pool, client);
   bson_destroy(cmd);
   bson_destroy(&opts);
   return ok;
}
