/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The collection handle: parsing its options, making and freeing it, and the client borrowed
 * from the pool for each call. The handle is written only here, by outbox_collection_new()
 * before anyone else sees it; afterwards every thread only reads it (its cache locks itself).
 */
#include "collection-private.h"

#include <string.h>

#include "error-private.h"

enum {
   F_VERSION,
   F_EVENT_SEQ,
   F_EVENTS,
   F_DELETED,
   F_DEAD_LETTERS,
   F_DISCARDED,
   F_REQUEUES,
   F_RECENT_COMMITS,
   F_COUNT_
};

static const char *const field_options[F_COUNT_] = {
   "versionField",     "eventSeqField",  "eventsField",   "deletedField",
   "deadLettersField", "discardedField", "requeuesField", "recentCommitsField"};
static const char *const field_defaults[F_COUNT_] = {"version",  "eventSeq",     "events",
                                                     "deleted",  "deadLetters",  "discardedLetters",
                                                     "requeues", "recentCommits"};

static bool
field_name_ok(const char *name, uint32_t len)
{
   return len > 0 && strlen(name) == len && name[0] != '$' && !strchr(name, '.') &&
          strcmp(name, "_id") != 0 && bson_utf8_validate(name, len, false);
}

static bool
parse_int_opt(const bson_iter_t *it, int64_t min, int64_t max, int64_t *out, bson_error_t *error)
{
   if (!BSON_ITER_HOLDS_INT32(it) && !BSON_ITER_HOLDS_INT64(it)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "option %s must be an integer",
                        bson_iter_key(it));
      return false;
   }
   *out = bson_iter_as_int64(it);
   if (*out < min || *out > max) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "option %s must be in %" PRId64 "..%" PRId64, bson_iter_key(it), min, max);
      return false;
   }
   return true;
}

static bool
parse_field_opt(outbox_collection_t *c, const bson_iter_t *it, bool *found, bson_error_t *error)
{
   const char *key = bson_iter_key(it);
   uint32_t len;
   const char *name;

   for (int i = 0; i < F_COUNT_; i++) {
      if (strcmp(key, field_options[i]) != 0) {
         continue;
      }
      *found = true;
      name = BSON_ITER_HOLDS_UTF8(it) ? bson_iter_utf8(it, &len) : NULL;
      if (!name || !field_name_ok(name, len)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "option %s must be a non-empty string without '.', not starting "
                           "with '$' and not \"_id\"",
                           key);
         return false;
      }
      bson_free(c->field_storage[i]);
      c->field_storage[i] = bson_strdup(name);
      return true;
   }
   *found = false;
   return true;
}

/* Only w: "majority" makes an acknowledged commit durable: Jepsen showed MongoDB rolling back
 * acknowledged w:1 writes after a partition (and a numeric w or a tag set may or may not be a
 * majority of the set: the library cannot tell), and a commit reported as done whose events
 * then vanish is exactly what the outbox exists to prevent. So a weaker w is refused here, at
 * start-up, rather than weakened silently; j and wtimeout may be added (a wtimeout that
 * fires is then OUTBOX_ERROR_UNKNOWN_OUTCOME). The URI's w never applies: every write sends
 * this document. */
static bool
write_concern_ok(const bson_iter_t *opt, bson_error_t *error)
{
   bson_iter_t it;
   const char *key;
   bool has_w = false;

   if (!BSON_ITER_HOLDS_DOCUMENT(opt) || !bson_iter_recurse(opt, &it)) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "option writeConcern must be a document");
      return false;
   }
   while (bson_iter_next(&it)) {
      key = bson_iter_key(&it);
      if (strcmp(key, "w") == 0) {
         has_w = BSON_ITER_HOLDS_UTF8(&it) && strcmp(bson_iter_utf8(&it, NULL), "majority") == 0;
         if (!has_w) {
            break;
         }
      } else if (strcmp(key, "j") != 0 && strcmp(key, "wtimeout") != 0) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                           "option writeConcern: unknown field \"%.100s\"", key);
         return false;
      }
   }
   if (!has_w) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "option writeConcern must have w: \"majority\" (a commit acknowledged "
                        "by fewer members can be rolled back)");
      return false;
   }
   return true;
}

static bool
parse_opt(outbox_collection_t *c, const bson_iter_t *it, int64_t *cache_size, bson_error_t *error)
{
   const char *key = bson_iter_key(it);
   bool found;

   if (!parse_field_opt(c, it, &found, error)) {
      return false;
   }
   if (found) {
      return true;
   }
   if (strcmp(key, "writeConcern") == 0) {
      if (!write_concern_ok(it, error)) {
         return false;
      }
      bson_reinit(&c->write_opts);
      BSON_APPEND_VALUE(&c->write_opts, "writeConcern", bson_iter_value((bson_iter_t *)it));
      return true;
   }
   if (strcmp(key, "maxPendingEvents") == 0) {
      return parse_int_opt(it, 1, 1000000, &c->max_pending, error);
   }
   if (strcmp(key, "maxDocumentSize") == 0) {
      return parse_int_opt(it, 1024, _OUTBOX_SERVER_MAX_DOC, &c->max_doc_size, error);
   }
   if (strcmp(key, "appendRetries") == 0) {
      return parse_int_opt(it, 1, 1000000, &c->retries, error);
   }
   if (strcmp(key, "cacheSize") == 0) {
      return parse_int_opt(it, 0, 1 << 24, cache_size, error);
   }
   _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "unknown option \"%.100s\"", key);
   return false;
}

static bool
field_names_distinct(const outbox_collection_t *c, bson_error_t *error)
{
   for (int i = 0; i < F_COUNT_; i++) {
      for (int j = 0; j < i; j++) {
         if (strcmp(c->field_storage[i], c->field_storage[j]) == 0) {
            _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                              "options %s and %s name the same field \"%s\"", field_options[j],
                              field_options[i], c->field_storage[i]);
            return false;
         }
      }
   }
   return true;
}

static bool
apply_opts(outbox_collection_t *c, const bson_t *opts, bson_error_t *error)
{
   int64_t cache_size = _OUTBOX_DEFAULT_CACHE;
   bson_iter_t it;

   if (opts) {
      if (!bson_iter_init(&it, opts)) {
         _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "opts is not valid BSON");
         return false;
      }
      while (bson_iter_next(&it)) {
         if (!parse_opt(c, &it, &cache_size, error)) {
            return false;
         }
      }
   }
   if (!field_names_distinct(c, error)) {
      return false;
   }
   c->cache = _outbox_cache_new((size_t)cache_size);
   return true;
}

outbox_collection_t *
outbox_collection_new(mongoc_client_pool_t *pool, const char *db, const char *coll,
                      const bson_t *opts, bson_error_t *error)
{
   outbox_collection_t *c;

   if (!pool || !db || !*db || !coll || !*coll) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                        "pool, database and collection name are required");
      return NULL;
   }
   /* bson_t members need their 128-byte alignment (UBSan checks it). */
   c = BSON_ALIGNED_ALLOC0(outbox_collection_t);
   c->pool = pool;
   c->db = bson_strdup(db);
   c->coll = bson_strdup(coll);
   bson_init(&c->write_opts);
   BCON_APPEND(&c->write_opts, "writeConcern", "{", "w", BCON_UTF8("majority"), "}");
   bson_init(&c->update_opts);
   for (int i = 0; i < F_COUNT_; i++) {
      c->field_storage[i] = bson_strdup(field_defaults[i]);
   }
   c->max_pending = _OUTBOX_DEFAULT_MAX_PENDING;
   c->max_doc_size = _OUTBOX_DEFAULT_MAX_DOC;
   c->retries = _OUTBOX_DEFAULT_RETRIES;
   if (!apply_opts(c, opts, error)) {
      outbox_collection_destroy(c);
      return NULL;
   }
   bson_copy_to_excluding_noinit(&c->write_opts, &c->update_opts, "validate", NULL);
   BSON_APPEND_BOOL(&c->update_opts, "validate", false);
   c->names.version = c->field_storage[F_VERSION];
   c->names.event_seq = c->field_storage[F_EVENT_SEQ];
   c->names.events = c->field_storage[F_EVENTS];
   c->names.deleted = c->field_storage[F_DELETED];
   c->names.dead_letters = c->field_storage[F_DEAD_LETTERS];
   c->names.discarded = c->field_storage[F_DISCARDED];
   c->names.requeues = c->field_storage[F_REQUEUES];
   c->names.recent_commits = c->field_storage[F_RECENT_COMMITS];
   return c;
}

void
outbox_collection_destroy(outbox_collection_t *collection)
{
   if (!collection) {
      return;
   }
   _outbox_cache_destroy(collection->cache);
   for (int i = 0; i < F_COUNT_; i++) {
      bson_free(collection->field_storage[i]);
   }
   bson_destroy(&collection->write_opts);
   bson_destroy(&collection->update_opts);
   bson_free(collection->db);
   bson_free(collection->coll);
   bson_free(collection);
}

void
_outbox_conn_open(const outbox_collection_t *collection, _outbox_conn_t *conn)
{
   conn->client = mongoc_client_pool_pop(collection->pool);
   conn->coll = mongoc_client_get_collection(conn->client, collection->db, collection->coll);
}

void
_outbox_conn_close(const outbox_collection_t *collection, _outbox_conn_t *conn)
{
   mongoc_collection_destroy(conn->coll);
   if (conn->client) {
      mongoc_client_pool_push(collection->pool, conn->client);
   }
   conn->coll = NULL;
   conn->client = NULL;
}
