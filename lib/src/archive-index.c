/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The archive's indexes (outbox/archive.h): created one by one, so that one an operator made
 * already (the same key under another name, which MongoDB refuses to create twice: 85
 * IndexOptionsConflict) costs only that index, never the others; an equivalent index of theirs
 * is adopted instead. And the TTL in force, whatever the index's name:
 * outbox_archive_ttl_seconds(). No state.
 */
#include <string.h>

#include "archive-private.h"
#include "error-private.h"
#include "outbox/archive.h"
#include "outbox/outbox.h"

#define TTL_INDEX "outbox_archive_ttl"

typedef struct {
   const char *name;
   bson_t *key;
   int64_t ttl; /* expireAfterSeconds, 0: none */
} wanted_t;

/* Same fields in the same order and directions ({time: 1} is {time: NumberLong(1)}). */
static bool
same_key(const bson_t *a, const bson_t *b)
{
   bson_iter_t x, y;
   if (!bson_iter_init(&x, a) || !bson_iter_init(&y, b)) {
      return false;
   }
   for (;;) {
      bool more_x = bson_iter_next(&x), more_y = bson_iter_next(&y);
      if (!more_x || !more_y) {
         return more_x == more_y;
      }
      if (strcmp(bson_iter_key(&x), bson_iter_key(&y)) != 0 || !BSON_ITER_HOLDS_NUMBER(&x) ||
          !BSON_ITER_HOLDS_NUMBER(&y) || bson_iter_as_double(&x) != bson_iter_as_double(&y)) {
         return false;
      }
   }
}

/* The index spec's @field as a document view (empty when absent). */
static void
spec_doc(const bson_t *spec, const char *field, bson_t *out)
{
   bson_iter_t it;
   const uint8_t *data;
   uint32_t len;
   if (bson_iter_init_find(&it, spec, field) && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      bson_iter_document(&it, &len, &data);
      if (bson_init_static(out, data, len)) {
         return;
      }
   }
   bson_init(out);
}

static int64_t
spec_ttl(const bson_t *spec)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, spec, "expireAfterSeconds") && BSON_ITER_HOLDS_NUMBER(&it)) {
      int64_t ttl = bson_iter_as_int64(&it);
      return ttl > 0 ? ttl : 0;
   }
   return 0;
}

static const char *
spec_name(const bson_t *spec)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, spec, "name") && BSON_ITER_HOLDS_UTF8(&it)
             ? bson_iter_utf8(&it, NULL)
             : "";
}

/* Whether an index of someone else's serves as @w: every entry indexed (not partial, not
 * sparse), the simple collation (string order as ours), and for the TTL the same
 * expireAfterSeconds. A TTL on an index we want without one does not matter to the cursor. */
static bool
fits(const bson_t *spec, const wanted_t *w)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, spec, "partialFilterExpression") ||
       bson_iter_init_find(&it, spec, "collation")) {
      return false;
   }
   if (bson_iter_init_find(&it, spec, "sparse") && bson_iter_as_bool(&it)) {
      return false;
   }
   return w->ttl == 0 || spec_ttl(spec) == w->ttl;
}

/* The archive's index specs (listIndexes) into @specs, an array of copies. */
static bool
list_indexes(mongoc_collection_t *archive, bson_t ***specs, size_t *n, bson_error_t *error)
{
   mongoc_cursor_t *c = mongoc_collection_find_indexes_with_opts(archive, NULL);
   const bson_t *ix;
   bool ok;
   *specs = NULL;
   *n = 0;
   while (mongoc_cursor_next(c, &ix)) {
      *specs = bson_realloc(*specs, (*n + 1) * sizeof **specs);
      (*specs)[(*n)++] = bson_copy(ix);
   }
   ok = !mongoc_cursor_error(c, error);
   mongoc_cursor_destroy(c);
   return ok;
}

static void
free_specs(bson_t **specs, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      bson_destroy(specs[i]);
   }
   bson_free(specs);
}

static bool
create_one(mongoc_collection_t *archive, const wanted_t *w, bson_error_t *error)
{
   bson_t cmd = BSON_INITIALIZER, indexes, index;
   bool ok;
   BSON_APPEND_UTF8(&cmd, "createIndexes", mongoc_collection_get_name(archive));
   BSON_APPEND_ARRAY_BEGIN(&cmd, "indexes", &indexes);
   BSON_APPEND_DOCUMENT_BEGIN(&indexes, "0", &index);
   BSON_APPEND_UTF8(&index, "name", w->name);
   BSON_APPEND_DOCUMENT(&index, "key", w->key);
   if (w->ttl > 0) {
      BSON_APPEND_INT64(&index, "expireAfterSeconds", w->ttl);
   }
   bson_append_document_end(&indexes, &index);
   bson_append_array_end(&cmd, &indexes);
   ok = mongoc_collection_write_command_with_opts(archive, &cmd, NULL, NULL, error);
   bson_destroy(&cmd);
   return ok;
}

/* One wanted index: ours already as wanted, an equivalent one adopted, ours made again (a TTL
 * index of ours with another expireAfterSeconds: dropped first, since collMod of an index is
 * not everywhere; meanwhile nothing expires, which loses nothing), or created. An index of
 * someone else's with the same key that does not fit is left alone: MongoDB would refuse
 * ours beside it, so that is an OUTBOX_ERROR_ARCHIVE_INDEX naming it. */
static bool
ensure_one(mongoc_collection_t *archive, const wanted_t *w, bson_t **specs, size_t n,
           bson_error_t *error)
{
   for (size_t i = 0; i < n; i++) {
      bson_t key;
      spec_doc(specs[i], "key", &key);
      bool ours = !strcmp(spec_name(specs[i]), w->name), same = same_key(&key, w->key);
      if (ours && same && fits(specs[i], w)) {
         return true;
      }
      if (ours && same && spec_ttl(specs[i]) > 0 && w->ttl > 0) {
         return mongoc_collection_drop_index_with_opts(archive, w->name, NULL, error) &&
                create_one(archive, w, error);
      }
      if (!ours && same && fits(specs[i], w)) {
         return true; /* adopted */
      }
      if (!ours && same && w->ttl > 0) {
         int64_t theirs = spec_ttl(specs[i]);
         _outbox_set_error(error, OUTBOX_ERROR_ARCHIVE_INDEX,
                           "index \"%s\" on {publishedAt: 1} has %s%lld, so the TTL index of "
                           "%lld seconds cannot be created and entries do not expire as asked: "
                           "drop that index, or collMod it to expireAfterSeconds %lld",
                           spec_name(specs[i]),
                           theirs ? "expireAfterSeconds " : "no expireAfterSeconds",
                           (long long)theirs, (long long)w->ttl, (long long)w->ttl);
         return false;
      }
   }
   return create_one(archive, w, error);
}

bool
_outbox_archive_ensure_indexes(mongoc_collection_t *archive, int64_t ttl, bson_error_t *error)
{
   wanted_t wanted[] = {
      {"outbox_archive_time", BCON_NEW("time", BCON_INT32(1)), 0},
      {"outbox_archive_entity",
       BCON_NEW("collection", BCON_INT32(1), "entityId", BCON_INT32(1), "seq", BCON_INT32(1)), 0},
      {"outbox_archive_type", BCON_NEW("type", BCON_INT32(1), "time", BCON_INT32(1)), 0},
      {TTL_INDEX, BCON_NEW("publishedAt", BCON_INT32(1)), ttl},
   };
   size_t n_wanted = sizeof wanted / sizeof wanted[0] - (ttl > 0 ? 0 : 1);
   bson_t **specs = NULL;
   size_t n = 0;
   bson_error_t first = {0}, one;
   bool ok = list_indexes(archive, &specs, &n, &first), failed = !ok;

   /* Every index is tried, whatever happened to the ones before; the first failure is
    * reported. */
   for (size_t i = 0; ok && i < n_wanted; i++) {
      if (!ensure_one(archive, &wanted[i], specs, n, &one) && !failed) {
         first = one;
         failed = true;
      }
   }
   ok = !failed;
   if (!ok && error) {
      *error = first;
   }
   for (size_t i = 0; i < sizeof wanted / sizeof wanted[0]; i++) {
      bson_destroy(wanted[i].key);
   }
   free_specs(specs, n);
   return ok;
}

bool
outbox_archive_ttl_seconds(mongoc_collection_t *archive, int64_t *ttl, bson_error_t *error)
{
   bson_t *by_published = BCON_NEW("publishedAt", BCON_INT32(1));
   bson_t **specs;
   size_t n;
   bool ok;

   if (!archive || !ttl) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "archive or ttl is NULL");
      bson_destroy(by_published);
      return false;
   }
   *ttl = 0;
   ok = list_indexes(archive, &specs, &n, error);
   for (size_t i = 0; ok && i < n; i++) {
      bson_t key;
      spec_doc(specs[i], "key", &key);
      bson_iter_t it;
      /* A partial TTL index expires only the entries it covers: not "in force". */
      if (same_key(&key, by_published) &&
          !bson_iter_init_find(&it, specs[i], "partialFilterExpression")) {
         *ttl = spec_ttl(specs[i]);
      }
   }
   free_specs(specs, n);
   bson_destroy(by_published);
   return ok;
}
