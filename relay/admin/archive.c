/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The archive (--archive-collection) in `status` (its size, TTL in force, oldest and newest
 * event) and in
 * `ensure-schema`: its validator and indexes, with the
 * relay's --archive-ttl, through liboutbox's outbox_archive_ensure_schema(); --print shows the
 * validator instead. What the relay does at its first archive write, for operators who give
 * the relay no collMod or createIndex privilege.
 */
#include <inttypes.h>
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"

int
admin_ensure_archive(admin_t *a)
{
   const char *name = a->cfg.archive_collection;
   bson_t opts = BSON_INITIALIZER;
   bson_error_t error;
   mongoc_client_t *client;
   mongoc_collection_t *archive;
   int rc = EX_OK;

   if (a->print) {
      bson_t validator;
      outbox_archive_schema(&validator);
      admin_print_json(a->out, &validator);
      bson_destroy(&validator);
      return EX_OK;
   }
   if (a->cfg.archive_ttl_s > 0) {
      BSON_APPEND_INT64(&opts, "ttlSeconds", a->cfg.archive_ttl_s);
   }
   client = mongoc_client_pool_pop(a->pool);
   archive = mongoc_client_get_collection(client, a->cfg.state_database, name);
   if (outbox_archive_ensure_schema(archive, &opts, &error)) {
      fprintf(a->out,
              "%s: the archive contract is the validator; indexes by time, entity and "
              "seq, type%s\n",
              name, a->cfg.archive_ttl_s > 0 ? ", and the TTL index" : "");
   } else if (error.domain == OUTBOX_ERROR_DOMAIN && error.code == OUTBOX_ERROR_ARCHIVE_INDEX) {
      /* Someone else's index: theirs to change, never dropped by us. */
      fprintf(stderr, "outbox-admin: %s: %s (the other indexes are in place)\n", name,
              error.message);
      rc = EX_DATAERR;
   } else {
      rc = admin_fail(name, &error);
   }
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(a->pool, client);
   bson_destroy(&opts);
   return rc;
}

/* The time of the first entry by @order (1: oldest, -1: newest), 0 when empty. */
static bool
edge_time(mongoc_collection_t *archive, int order, int64_t *ms, bson_error_t *error)
{
   bson_t *opts = BCON_NEW("sort", "{", "time", BCON_INT32(order), "}", "limit", BCON_INT64(1),
                           "projection", "{", "time", BCON_INT32(1), "}");
   bson_t filter = BSON_INITIALIZER;
   mongoc_cursor_t *c = mongoc_collection_find_with_opts(archive, &filter, opts, NULL);
   const bson_t *doc;
   bson_iter_t it;
   bool ok;

   *ms = 0;
   if (mongoc_cursor_next(c, &doc) && bson_iter_init_find(&it, doc, "time") &&
       BSON_ITER_HOLDS_DATE_TIME(&it)) {
      *ms = bson_iter_date_time(&it);
   }
   ok = !mongoc_cursor_error(c, error);
   mongoc_cursor_destroy(c);
   bson_destroy(&filter);
   bson_destroy(opts);
   return ok;
}

int
admin_archive_stats(admin_t *a, admin_archive_stats_t *st)
{
   mongoc_client_t *client = mongoc_client_pool_pop(a->pool);
   mongoc_collection_t *archive =
      mongoc_client_get_collection(client, a->cfg.state_database, a->cfg.archive_collection);
   bson_error_t error;
   bool ok;

   memset(st, 0, sizeof *st);
   st->entries = mongoc_collection_estimated_document_count(archive, NULL, NULL, NULL, &error);
   ok = st->entries >= 0 && edge_time(archive, 1, &st->oldest_ms, &error) &&
        edge_time(archive, -1, &st->newest_ms, &error) &&
        outbox_archive_ttl_seconds(archive, &st->ttl_s, &error);
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(a->pool, client);
   return ok ? EX_OK : admin_fail(a->cfg.archive_collection, &error);
}

bool
admin_archive_ttl_missing(const admin_t *a, const admin_archive_stats_t *st)
{
   return a->cfg.archive_ttl_s > 0 && st->ttl_s != a->cfg.archive_ttl_s;
}

void
admin_archive_print(const admin_t *a, const admin_archive_stats_t *st, int64_t now)
{
   fprintf(a->out, "\nARCHIVE\tENTRIES\tTTL\tOLDEST\tNEWEST\tNEWEST-AGE\n%s\t%" PRId64 "\t",
           a->cfg.archive_collection, st->entries);
   if (admin_archive_ttl_missing(a, st)) {
      fprintf(a->out, "MISSING(want %" PRId64 "s)", a->cfg.archive_ttl_s);
   } else if (st->ttl_s > 0) {
      fprintf(a->out, "%" PRId64 "s", st->ttl_s);
   } else {
      fputc('-', a->out);
   }
   fputc('\t', a->out);
   admin_print_time(a->out, st->oldest_ms);
   fputc('\t', a->out);
   admin_print_time(a->out, st->newest_ms);
   fputc('\t', a->out);
   admin_print_age(a->out, st->newest_ms ? now - st->newest_ms : -1);
   fputc('\n', a->out);
}

void
admin_archive_json(const admin_t *a, const admin_archive_stats_t *st, bson_t *doc)
{
   bson_t sub;
   BSON_APPEND_DOCUMENT_BEGIN(doc, "archive", &sub);
   BSON_APPEND_UTF8(&sub, "collection", a->cfg.archive_collection);
   BSON_APPEND_INT64(&sub, "entries", st->entries);
   /* ttlSeconds: in force (0: none); ttlWanted: --archive-ttl, when given. */
   BSON_APPEND_INT64(&sub, "ttlSeconds", st->ttl_s);
   if (a->cfg.archive_ttl_s > 0) {
      BSON_APPEND_INT64(&sub, "ttlWanted", a->cfg.archive_ttl_s);
      BSON_APPEND_BOOL(&sub, "ttlMissing", admin_archive_ttl_missing(a, st));
   }
   if (st->oldest_ms) {
      BSON_APPEND_DATE_TIME(&sub, "oldest", st->oldest_ms);
      BSON_APPEND_DATE_TIME(&sub, "newest", st->newest_ms);
   }
   bson_append_document_end(doc, &sub);
}
