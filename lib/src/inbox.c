/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The idempotent inbox (see outbox/inbox.h for the design and its guarantee): options, the
 * handle, argument checks, building the update, and the public entry points. The reads and
 * writes against MongoDB are in inbox-store.c, below it. The handle is written only here, by
 * outbox_inbox_new(), before anyone else sees it; afterwards every thread only reads it.
 */
#include <string.h>

#include "check-private.h"
#include "inbox-private.h"

#define DEFAULT_WINDOW 128
#define MAX_WINDOW 10000
#define DEFAULT_TTL (7 * 24 * 3600)
#define MAX_EVENT_ID 256

static bool
fail(bson_error_t *error, outbox_error_code_t code, const char *msg, const char *arg)
{
   bson_set_error(error, OUTBOX_ERROR_DOMAIN, code, "%s%s%s", msg, arg ? ": " : "", arg ? arg : "");
   return false;
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
      bson_reinit(ib->write_concern);
      bson_concat(ib->write_concern, &doc);
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
   ib->write_concern = bson_new();
   BSON_APPEND_UTF8(ib->write_concern, "w", "majority");
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
   bson_destroy(inbox->write_concern);
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
   /* The server may store invalid UTF-8 as it is; consumers reading the state would not. */
   if (update && !_outbox_bson_is_valid(update, false))
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                  "update is not well-formed BSON with valid UTF-8 strings", NULL);
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
   case BSON_TYPE_UTF8:
      if (!doc_id->value.v_utf8.str ||
          !bson_utf8_validate(doc_id->value.v_utf8.str, doc_id->value.v_utf8.len, false))
         return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "string document id is not valid UTF-8",
                     NULL);
      return true;
   case BSON_TYPE_OID:
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_BINARY:
      return true;
   default:
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                  "document id must be an ObjectId, string, int32, int64 or binary", NULL);
   }
}

/* ---- public operations -------------------------------------------------------------------- */

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
   ok = _outbox_inbox_apply_with(inbox, client, doc_id, event_id, seq, &full, result, error);
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
   _outbox_doc_lookup_t state = _OUTBOX_DOC_MISSING;
   int64_t stored;
   bool ok;

   if (!inbox || !seen)
      return fail(error, OUTBOX_ERROR_INVALID_ARGUMENT, "inbox and seen are required", NULL);
   *seen = false;
   if (!check_doc_id(doc_id, error) || !check_event_id(event_id, error))
      return false;
   client = mongoc_client_pool_pop(inbox->pool);
   coll = mongoc_client_get_collection(client, inbox->db, inbox->coll);
   ok = _outbox_inbox_doc_lookup(inbox, coll, doc_id, event_id, &state, &stored, error);
   if (ok && state == _OUTBOX_DOC_WITH_ID)
      *seen = true;
   else if (ok)
      ok = _outbox_inbox_ledger_has(inbox, client, doc_id, event_id, seen, error);
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
   BSON_APPEND_DOCUMENT(&opts, "writeConcern", inbox->write_concern);
   client = mongoc_client_pool_pop(inbox->pool);
   db = mongoc_client_get_database(client, inbox->db);
   ok = mongoc_database_write_command_with_opts(db, cmd, &opts, NULL, error);
   mongoc_database_destroy(db);
   mongoc_client_pool_push(inbox->pool, client);
   bson_destroy(cmd);
   bson_destroy(&opts);
   return ok;
}
