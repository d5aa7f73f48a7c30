/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * See archive.h: why the archive is written before the clear, and with inserts.
 */
#include "store/archive.h"
#include "util/error.h"

#include <string.h>

#include <outbox/outbox.h>

/* The archive entry of one stored event @raw of statement @s (archive.h's contract). The
 * event's own fields are copied as stored: the relay checked them against the contract before
 * publishing. */
static void
build_entry(const relay_config_t *cfg, const char *member, const char *coll,
            const relay_clear_stmt_t *s, const bson_t *raw, int64_t now_ms, bson_t *entry)
{
   static const char *const copied[] = {"seq", "type", "time", "data", "headers"};
   bson_iter_t it;

   bson_init(entry);
   if (bson_iter_init_find(&it, raw, "id")) {
      bson_append_value(entry, "_id", 3, bson_iter_value(&it));
   }
   BSON_APPEND_UTF8(entry, "collection", coll);
   bson_append_value(entry, "entityId", 8, &s->id);
   for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
      if (bson_iter_init_find(&it, raw, copied[i])) {
         bson_append_value(entry, copied[i], -1, bson_iter_value(&it));
      }
   }
   if (s->part >= 0) {
      BSON_APPEND_INT32(entry, "partition", s->part);
   }
   BSON_APPEND_DATE_TIME(entry, "publishedAt", now_ms);
   BSON_APPEND_UTF8(entry, "relay", cfg->name);
   if (member) {
      BSON_APPEND_UTF8(entry, "member", member);
   }
}

/* Adds the inserts of @s's events to @bulk, recording for each the statement it belongs to.
 * Returns false if one could not be built. */
static bool
add_inserts(const relay_config_t *cfg, const char *member, const char *coll,
            mongoc_bulk_operation_t *bulk, relay_clear_stmt_t *s, int64_t now_ms,
            relay_clear_stmt_t ***owner, size_t *n_docs, size_t *cap)
{
   bson_iter_t it;
   bool ok = true;

   if (!s->events || !bson_iter_init(&it, s->events)) {
      return false;
   }
   while (ok && bson_iter_next(&it)) {
      const uint8_t *buf;
      uint32_t len;
      bson_t raw, entry;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         return false;
      }
      bson_iter_document(&it, &len, &buf);
      if (!bson_init_static(&raw, buf, len)) {
         return false;
      }
      build_entry(cfg, member, coll, s, &raw, now_ms, &entry);
      ok = mongoc_bulk_operation_insert_with_opts(bulk, &entry, NULL, NULL);
      bson_destroy(&entry);
      if (*n_docs == *cap) {
         *cap = *cap ? *cap * 2 : 64;
         *owner = bson_realloc(*owner, *cap * sizeof **owner);
      }
      (*owner)[(*n_docs)++] = s;
   }
   return ok;
}

/* After a failed execute: true when the reply accounts for every insert (nInserted plus the
 * write errors) and so says which failed; then marks the statements of inserts that failed
 * for another reason than 11000 (already archived). */
static bool
blame(const bson_t *reply, relay_clear_stmt_t **owner, size_t n_docs, bool *all_dups)
{
   bson_iter_t it, errs;
   int64_t inserted = 0, n_errors = 0;

   *all_dups = true;
   if (bson_iter_init_find(&it, reply, "writeConcernErrors") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &errs) && bson_iter_next(&errs)) {
      return false;
   }
   if (bson_iter_init_find(&it, reply, "nInserted")) {
      inserted = bson_iter_as_int64(&it);
   }
   if (!bson_iter_init_find(&it, reply, "writeErrors") || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &errs)) {
      return false;
   }
   while (bson_iter_next(&errs)) {
      bson_iter_t e;
      n_errors++;
      if (bson_iter_recurse(&errs, &e) && bson_iter_find(&e, "code") &&
          bson_iter_as_int64(&e) == 11000) {
         continue;
      }
      *all_dups = false;
      if (bson_iter_recurse(&errs, &e) && bson_iter_find(&e, "index") &&
          bson_iter_as_int64(&e) >= 0 && (size_t)bson_iter_as_int64(&e) < n_docs) {
         owner[bson_iter_as_int64(&e)]->failed = true;
      } else {
         return false;
      }
   }
   return n_errors > 0 && inserted + n_errors == (int64_t)n_docs;
}

static int64_t
now_ms(void)
{
   struct timeval tv;
   bson_gettimeofday(&tv);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

bool
relay_archive_write(mongoc_collection_t *archive, const relay_config_t *cfg, const char *member,
                    const char *coll, relay_clear_stmt_t **stmts, size_t n, int64_t *inserted,
                    bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER, reply = BSON_INITIALIZER;
   mongoc_bulk_operation_t *bulk;
   relay_clear_stmt_t **owner = NULL;
   size_t n_docs = 0, cap = 0;
   int64_t now = now_ms();
   bool ok = true, all_dups = false;
   bson_iter_t it;

   *inserted = 0;
   BSON_APPEND_BOOL(&opts, "ordered", false);
   bulk = mongoc_collection_create_bulk_operation_with_opts(archive, &opts);
   for (size_t i = 0; i < n && ok; i++) {
      ok = add_inserts(cfg, member, coll, bulk, stmts[i], now, &owner, &n_docs, &cap);
   }
   if (!ok) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_ARCHIVE,
                     "an archive entry could not be built");
   } else {
      bson_destroy(&reply);
      ok = mongoc_bulk_operation_execute(bulk, &reply, error) != 0;
      if (bson_iter_init_find(&it, &reply, "nInserted")) {
         *inserted = bson_iter_as_int64(&it);
      }
      if (!ok && blame(&reply, owner, n_docs, &all_dups)) {
         /* Failures that were all events archived before succeeded: the first copy stays.
          * Otherwise blame() marked exactly the statements with an event not archived. */
         ok = all_dups;
         goto done;
      }
   }
   if (!ok) {
      /* No reply that says which inserts ran: none of the batch is cleared. */
      for (size_t i = 0; i < n; i++) {
         stmts[i]->failed = true;
      }
   }
done:
   bson_destroy(&reply);
   bson_destroy(&opts);
   bson_free(owner);
   mongoc_bulk_operation_destroy(bulk);
   return ok;
}

bool
relay_archive_ensure(mongoc_collection_t *archive, const relay_config_t *cfg, bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER;
   bool ok;

   if (cfg->archive_ttl_s > 0) {
      BSON_APPEND_INT64(&opts, "ttlSeconds", cfg->archive_ttl_s);
   }
   ok = outbox_archive_ensure_schema(archive, &opts, error);
   bson_destroy(&opts);
   return ok;
}
