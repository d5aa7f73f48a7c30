/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `status`: per namespace, pending events (documents, events, age of the oldest) and dead
 * letters, counted by liboutbox through the partial indexes, the --top N namespaces with the
 * most pending events first and the totals over all; then the relays (relays.c).
 * Ages are measured against the server's clock. Exit status ADMIN_EXIT_THRESHOLD when a
 * pending event is older than --max-age, so the command works in cron and monitoring scripts,
 * and EX_DATAERR when documents break the stored contract (liboutbox counts them apart).
 * The counts are read with the read preference of --mongodb-uri (the relay itself always
 * reads the primary): when that picks a secondary, status names it and says the counts may
 * be stale (issue 26).
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"
#include "admin/relays.h"

typedef struct {
   const char *name;
   outbox_counts_t counts;
} coll_status_t;

/* Namespaces listed at most without --top: status stays readable with a thousand. */
#define TOP_DEFAULT 20

static void
print_row(admin_t *a, const char *name, const outbox_counts_t *c, int64_t now)
{
   fprintf(a->out, "%s\t%" PRId64 "\t%" PRId64 "\t", name, c->pending_documents, c->pending_events);
   admin_print_age(a->out, c->oldest_pending_ms ? now - c->oldest_pending_ms : -1);
   fprintf(a->out, "\t%" PRId64 "\t%" PRId64 "\t", c->dead_letters, c->dead_letter_documents);
   admin_print_time(a->out, c->newest_dead_letter_ms);
   fputc('\n', a->out);
}

/* The most pending events first, then the most dead letters, then by name. */
static int
by_pending(const void *x, const void *y)
{
   const coll_status_t *a = x, *b = y;
   if (a->counts.pending_events != b->counts.pending_events) {
      return a->counts.pending_events > b->counts.pending_events ? -1 : 1;
   }
   if (a->counts.dead_letters != b->counts.dead_letters) {
      return a->counts.dead_letters > b->counts.dead_letters ? -1 : 1;
   }
   return strcmp(a->name, b->name);
}

/* Sums @n counts (the oldest pending is the oldest of all, the last dead letter the last). */
static outbox_counts_t
total_of(const coll_status_t *cs, size_t n)
{
   outbox_counts_t t = {0};
   for (size_t i = 0; i < n; i++) {
      const outbox_counts_t *c = &cs[i].counts;
      t.pending_documents += c->pending_documents;
      t.pending_events += c->pending_events;
      t.dead_letters += c->dead_letters;
      t.dead_letter_documents += c->dead_letter_documents;
      t.malformed_documents += c->malformed_documents;
      if (c->oldest_pending_ms &&
          (!t.oldest_pending_ms || c->oldest_pending_ms < t.oldest_pending_ms)) {
         t.oldest_pending_ms = c->oldest_pending_ms;
      }
      if (c->newest_dead_letter_ms > t.newest_dead_letter_ms) {
         t.newest_dead_letter_ms = c->newest_dead_letter_ms;
      }
   }
   return t;
}

static size_t
shown(const admin_t *a, size_t n)
{
   size_t top = a->top > 0 ? (size_t)a->top : TOP_DEFAULT;
   return n < top ? n : top;
}

static void
print_collections(admin_t *a, const coll_status_t *cs, size_t n, int64_t now)
{
   fputs("COLLECTION\tPENDING-DOCUMENTS\tPENDING-EVENTS\tOLDEST-PENDING\tDEAD-LETTERS\t"
         "DEAD-LETTER-DOCUMENTS\tLAST-DEAD-LETTER\n",
         a->out);
   for (size_t i = 0; i < shown(a, n); i++) {
      print_row(a, cs[i].name, &cs[i].counts, now);
   }
   if (n > 1) {
      outbox_counts_t t = total_of(cs, n);
      char *name = bson_strdup_printf("TOTAL(%zu namespaces%s)", n,
                                      shown(a, n) < n ? ", the --top shown above" : "");
      print_row(a, name, &t, now);
      bson_free(name);
   }
}

static void
append_counts(bson_t *item, const outbox_counts_t *c, int64_t now)
{
   BSON_APPEND_INT64(item, "pendingDocuments", c->pending_documents);
   BSON_APPEND_INT64(item, "pendingEvents", c->pending_events);
   if (c->oldest_pending_ms) {
      BSON_APPEND_DATE_TIME(item, "oldestPendingTime", c->oldest_pending_ms);
      BSON_APPEND_DOUBLE(item, "oldestPendingAgeSeconds",
                         (double)(now - c->oldest_pending_ms) / 1000.0);
   }
   BSON_APPEND_INT64(item, "deadLetters", c->dead_letters);
   BSON_APPEND_INT64(item, "deadLetterDocuments", c->dead_letter_documents);
   BSON_APPEND_INT64(item, "malformedDocuments", c->malformed_documents);
   if (c->newest_dead_letter_ms) {
      BSON_APPEND_DATE_TIME(item, "lastDeadLetterTime", c->newest_dead_letter_ms);
   }
}

static void
append_collections(const admin_t *a, bson_t *doc, const coll_status_t *cs, size_t n, int64_t now)
{
   bson_t arr, item;
   char key[16];
   const char *k;
   BSON_APPEND_ARRAY_BEGIN(doc, "collections", &arr);
   for (size_t i = 0; i < shown(a, n); i++) {
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, k, &item);
      BSON_APPEND_UTF8(&item, "name", cs[i].name);
      const admin_target_t *t = admin_target(a, cs[i].name);
      if (t) {
         BSON_APPEND_UTF8(&item, "database", t->db);
         BSON_APPEND_UTF8(&item, "collection", t->coll);
      }
      append_counts(&item, &cs[i].counts, now);
      bson_append_document_end(&arr, &item);
   }
   bson_append_array_end(doc, &arr);
   outbox_counts_t total = total_of(cs, n);
   BSON_APPEND_DOCUMENT_BEGIN(doc, "totals", &item);
   BSON_APPEND_INT64(&item, "namespaces", (int64_t)n);
   BSON_APPEND_INT64(&item, "shown", (int64_t)shown(a, n));
   append_counts(&item, &total, now);
   bson_append_document_end(doc, &item);
}

/* The member the URI's read preference picks for the counts, and whether it is a secondary. */
typedef struct {
   char member[BSON_HOST_NAME_MAX + 8];
   char type[32];
   const char *mode;
   bool secondary;
} read_source_t;

static const char *
mode_name(mongoc_read_mode_t mode)
{
   switch (mode) {
   case MONGOC_READ_PRIMARY_PREFERRED:
      return "primaryPreferred";
   case MONGOC_READ_SECONDARY:
      return "secondary";
   case MONGOC_READ_SECONDARY_PREFERRED:
      return "secondaryPreferred";
   case MONGOC_READ_NEAREST:
      return "nearest";
   case MONGOC_READ_PRIMARY:
   default:
      return "primary";
   }
}

static void
find_read_source(admin_t *a, read_source_t *src)
{
   mongoc_client_t *client = mongoc_client_pool_pop(a->pool);
   const mongoc_read_prefs_t *prefs = mongoc_client_get_read_prefs(client);
   mongoc_server_description_t *sd;
   bson_error_t error;

   memset(src, 0, sizeof *src);
   src->mode = mode_name(prefs ? mongoc_read_prefs_get_mode(prefs) : MONGOC_READ_PRIMARY);
   sd = mongoc_client_select_server(client, false, prefs, &error);
   if (sd) {
      bson_strncpy(src->member, mongoc_server_description_host(sd)->host_and_port,
                   sizeof src->member);
      bson_strncpy(src->type, mongoc_server_description_type(sd), sizeof src->type);
      src->secondary = !strcmp(src->type, "RSSecondary");
      mongoc_server_description_destroy(sd);
   }
   mongoc_client_pool_push(a->pool, client);
}

static void
append_read_source(bson_t *doc, const read_source_t *src)
{
   bson_t rf;
   BSON_APPEND_DOCUMENT_BEGIN(doc, "readFrom", &rf);
   BSON_APPEND_UTF8(&rf, "member", src->member);
   BSON_APPEND_UTF8(&rf, "type", src->type);
   BSON_APPEND_UTF8(&rf, "readPreference", src->mode);
   BSON_APPEND_BOOL(&rf, "secondary", src->secondary);
   BSON_APPEND_BOOL(&rf, "mayBeStale", src->secondary);
   bson_append_document_end(doc, &rf);
}

static void
print_read_source(admin_t *a, const read_source_t *src)
{
   if (src->secondary) {
      fprintf(a->out,
              "note: read from secondary %s (readPreference %s in --mongodb-uri): the counts "
              "may be stale by its replication lag\n",
              src->member, src->mode);
   }
}

/* Counts every configured collection into @cs. Returns an exit status. */
static int
count_all(admin_t *a, coll_status_t *cs)
{
   for (size_t i = 0; i < a->n_targets; i++) {
      bson_error_t error;
      outbox_collection_t *c = admin_collection(a, a->targets[i].label);
      bool ok = c && outbox_collection_count_events(c, &cs[i].counts, &error);
      outbox_collection_destroy(c);
      cs[i].name = a->targets[i].label;
      if (!c) {
         return EX_CONFIG;
      }
      if (!ok) {
         return admin_fail(cs[i].name, &error);
      }
   }
   return EX_OK;
}

/* The first collection holding documents that break the stored contract (an events or
 * dead letters field that is not an array: not counted, never published), as a problem
 * line; NULL if none. */
static char *
malformed(const coll_status_t *cs, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      int64_t m = cs[i].counts.malformed_documents;
      if (m > 0) {
         return bson_strdup_printf(
            "%s: %" PRId64 " document%s break%s the stored contract (an events or dead letters "
            "field that is not an array): not counted above, and the relay cannot publish "
            "their events",
            cs[i].name, m, m == 1 ? "" : "s", m == 1 ? "s" : "");
      }
   }
   return NULL;
}

/* The first pending event older than --max-age, as a problem line; NULL if none. */
static char *
too_old(const admin_t *a, const coll_status_t *cs, size_t n, int64_t now)
{
   for (size_t i = 0; a->max_age_given && i < n; i++) {
      int64_t t = cs[i].counts.oldest_pending_ms;
      /* --max-age 0: no pending event at all (one just written is 0 ms old). */
      if (t && (a->max_age_ms == 0 || now - t > a->max_age_ms)) {
         return bson_strdup_printf("%s: the oldest pending event is %.1f s old (--max-age %.1f s)",
                                   cs[i].name, (double)(now - t) / 1000.0,
                                   (double)a->max_age_ms / 1000.0);
      }
   }
   return NULL;
}

int
admin_status(admin_t *a)
{
   size_t n = a->n_targets;
   coll_status_t *cs = bson_malloc0((n + 1) * sizeof *cs);
   admin_relays_t relays;
   admin_archive_stats_t archive = {0};
   read_source_t src;
   bson_error_t error;
   int64_t now;
   int rc;

   admin_relays_init(&relays);
   if (!admin_server_now(a, &now, &error)) {
      rc = admin_fail("MongoDB", &error);
      goto done;
   }
   find_read_source(a, &src);
   if ((rc = count_all(a, cs)) != EX_OK || (rc = admin_relays_read(a, &relays)) != EX_OK ||
       (a->cfg.archive_collection && (rc = admin_archive_stats(a, &archive)) != EX_OK)) {
      goto done;
   }
   qsort(cs, n, sizeof *cs, by_pending);
   char *bad = malformed(cs, n);
   char *problem = bad ? bad : too_old(a, cs, n, now);
   if (a->json) {
      bson_t doc = BSON_INITIALIZER;
      BSON_APPEND_DATE_TIME(&doc, "serverTime", now);
      append_read_source(&doc, &src);
      append_collections(a, &doc, cs, n, now);
      admin_relays_append_json(&relays, &doc, now);
      if (a->cfg.archive_collection) {
         admin_archive_json(a, &archive, &doc);
      }
      BSON_APPEND_BOOL(&doc, "ok", problem == NULL);
      if (problem) {
         BSON_APPEND_UTF8(&doc, "problem", problem);
      }
      admin_print_json(a->out, &doc);
      bson_destroy(&doc);
   } else {
      print_collections(a, cs, n, now);
      admin_relays_print(&relays, a->out, now);
      if (a->cfg.archive_collection) {
         admin_archive_print(a, &archive, now);
      }
      print_read_source(a, &src);
   }
   if (a->cfg.archive_collection && admin_archive_ttl_missing(a, &archive)) {
      /* A warning, not a failed status: nothing is pending longer for it. */
      fprintf(stderr,
              "outbox-admin: warning: --archive-ttl %" PRId64 "s is not in force on %s (TTL "
              "index: %" PRId64 "s): entries do not expire; ensure-schema says why\n",
              a->cfg.archive_ttl_s, a->cfg.archive_collection, archive.ttl_s);
   }
   if (problem) {
      fprintf(stderr, "outbox-admin: %s\n", problem);
      rc = bad ? EX_DATAERR : ADMIN_EXIT_THRESHOLD;
      bson_free(problem);
   }
done:
   admin_relays_cleanup(&relays);
   bson_free(cs);
   return rc;
}
