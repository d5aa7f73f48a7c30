/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading the group in one round-trip: every lease and member document of the group, with
 * "live" (expiresAt after $$NOW) decided by the server. Lease thread only.
 */
#include "group/lease-store.h"

#include <string.h>

bool
relay_lease_epoch_read(const bson_iter_t *it, int64_t *epoch)
{
   int64_t v;
   if (BSON_ITER_HOLDS_INT32(it)) {
      v = bson_iter_int32(it);
   } else if (BSON_ITER_HOLDS_INT64(it)) {
      v = bson_iter_int64(it);
   } else if (BSON_ITER_HOLDS_DOUBLE(it)) {
      double d = bson_iter_double(it);
      /* Range first: converting a double outside int64 is undefined behaviour. */
      if (!(d >= 0 && d < (double)RELAY_EPOCH_MAX) || d != (double)(int64_t)d) {
         return false;
      }
      v = (int64_t)d;
   } else {
      return false;
   }
   if (v < 0 || v >= RELAY_EPOCH_MAX) {
      return false;
   }
   *epoch = v;
   return true;
}

static const char *
keep(relay_group_snapshot_t *snap, const char *s)
{
   char *copy;
   if (!s || snap->n_strings == sizeof snap->strings / sizeof snap->strings[0]) {
      return NULL;
   }
   copy = bson_strdup(s);
   snap->strings[snap->n_strings++] = copy;
   return copy;
}

/* {$gt: ["$<field>", "$$NOW"]} under @key. */
static void
append_future(bson_t *doc, const char *key, const char *field)
{
   bson_t gt, args;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &gt);
   BSON_APPEND_ARRAY_BEGIN(&gt, "$gt", &args);
   BSON_APPEND_UTF8(&args, "0", field);
   BSON_APPEND_UTF8(&args, "1", "$$NOW");
   bson_append_array_end(&gt, &args);
   bson_append_document_end(doc, &gt);
}

/* A member is live while its expiresAt is after $$NOW and at most two lease times ahead of
 * it: a member renews its document to $$NOW + ttl every renewal, so one further ahead was not
 * written by a relay of this group (forged, or by a clock far ahead) and must not shrink
 * everyone's share. {$and: [{$gt: [$expiresAt, $$NOW]}, {$lte: [$expiresAt, $$NOW + 2 ttl]}]}
 * under @key. */
static void
append_member_live(bson_t *doc, const char *key, int64_t ttl_ms)
{
   bson_t and, branch, args, add, add_args;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &and);
   BSON_APPEND_ARRAY_BEGIN(&and, "$and", &args);
   append_future(&args, "0", "$expiresAt");
   BSON_APPEND_DOCUMENT_BEGIN(&args, "1", &branch);
   {
      bson_t lte;
      BSON_APPEND_ARRAY_BEGIN(&branch, "$lte", &lte);
      BSON_APPEND_UTF8(&lte, "0", "$expiresAt");
      BSON_APPEND_DOCUMENT_BEGIN(&lte, "1", &add);
      BSON_APPEND_ARRAY_BEGIN(&add, "$add", &add_args);
      BSON_APPEND_UTF8(&add_args, "0", "$$NOW");
      BSON_APPEND_INT64(&add_args, "1", 2 * ttl_ms);
      bson_append_array_end(&add, &add_args);
      bson_append_document_end(&lte, &add);
      bson_append_array_end(&branch, &lte);
   }
   bson_append_document_end(&args, &branch);
   bson_append_array_end(&and, &args);
   bson_append_document_end(doc, &and);
}

static const char *
string_or_null(const bson_t *doc, const char *path)
{
   bson_iter_t it, found;
   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &found) &&
       BSON_ITER_HOLDS_UTF8(&found)) {
      return bson_iter_utf8(&found, NULL);
   }
   return NULL;
}

static bool
flag(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_BOOL(&it) && bson_iter_bool(&it);
}

static void
take(const relay_lease_store_t *st, relay_group_snapshot_t *snap, const bson_t *doc)
{
   bson_iter_t it, found;

   if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "_id.partition", &found) &&
       BSON_ITER_HOLDS_INT32(&found)) {
      int p = bson_iter_int32(&found);
      relay_lease_view_t *l;
      if (p < 0 || p >= st->partitions) {
         return;
      }
      l = &snap->leases[p];
      snap->n_leases++;
      l->owner = keep(snap, string_or_null(doc, "owner"));
      l->malformed =
         !bson_iter_init_find(&it, doc, "epoch") || !relay_lease_epoch_read(&it, &l->epoch);
      l->live = flag(doc, "live");
      l->handoff_to = keep(snap, string_or_null(doc, "handoff.to"));
      l->reserved_for = keep(snap, string_or_null(doc, "reservedFor"));
      l->reservation_live = flag(doc, "reservedLive");
   } else if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "_id.member", &found) &&
              BSON_ITER_HOLDS_UTF8(&found) && flag(doc, "memberLive") &&
              snap->n_members < sizeof snap->member_ids / sizeof snap->member_ids[0]) {
      const char *settings = string_or_null(doc, "settings");
      snap->member_settings[snap->n_members] = settings ? bson_strdup(settings) : NULL;
      snap->member_ids[snap->n_members++] = bson_strdup(bson_iter_utf8(&found, NULL));
   }
}

bool
relay_lease_store_snapshot(const relay_lease_store_t *st, relay_group_snapshot_t *snap,
                           bson_error_t *error)
{
   bson_t pipeline = BSON_INITIALIZER, stage, body;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool ok;

   memset(snap->leases, 0, sizeof(relay_lease_view_t) * (size_t)st->partitions);
   snap->n_leases = 0;
   BSON_APPEND_DOCUMENT_BEGIN(&pipeline, "0", &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&stage, "$match", &body);
   BSON_APPEND_UTF8(&body, "_id.relay", st->name);
   bson_append_document_end(&stage, &body);
   bson_append_document_end(&pipeline, &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&pipeline, "1", &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&stage, "$project", &body);
   BSON_APPEND_INT32(&body, "owner", 1);
   BSON_APPEND_INT32(&body, "epoch", 1);
   BSON_APPEND_INT32(&body, "handoff", 1);
   BSON_APPEND_INT32(&body, "reservedFor", 1);
   BSON_APPEND_INT32(&body, "settings", 1);
   append_future(&body, "live", "$expiresAt");
   append_future(&body, "reservedLive", "$reservedUntil");
   append_member_live(&body, "memberLive", st->ttl_ms);
   bson_append_document_end(&stage, &body);
   bson_append_document_end(&pipeline, &stage);
   cursor = mongoc_collection_aggregate(st->leases, MONGOC_QUERY_NONE, &pipeline, NULL, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      take(st, snap, doc);
   }
   ok = !mongoc_cursor_error(cursor, error);
   mongoc_cursor_destroy(cursor);
   bson_destroy(&pipeline);
   return ok;
}

void
relay_group_snapshot_cleanup(relay_group_snapshot_t *snap)
{
   for (size_t i = 0; i < snap->n_strings; i++) {
      bson_free(snap->strings[i]);
   }
   for (size_t i = 0; i < snap->n_members; i++) {
      bson_free(snap->member_ids[i]);
      bson_free(snap->member_settings[i]);
   }
   snap->n_strings = snap->n_members = 0;
}
