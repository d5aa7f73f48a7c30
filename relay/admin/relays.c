/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading and showing the relays' stored state for `status` (see relays.h). Lease expiry and
 * ages are judged against the server's clock, as the relays themselves judge them. A lease
 * with no owner, or whose expiry has passed, is shown as "free"/"expired": events of that
 * partition are not being published until a member takes it.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <string.h>
#include <sysexits.h>

#include "admin/relays.h"

void
admin_relays_init(admin_relays_t *r)
{
   memset(r, 0, sizeof *r);
}

void
admin_relays_cleanup(admin_relays_t *r)
{
   for (size_t i = 0; i < r->n; i++) {
      admin_relay_t *x = &r->items[i];
      for (size_t j = 0; j < x->n_leases; j++) {
         bson_destroy(x->leases[j]);
      }
      for (size_t j = 0; j < x->n_members; j++) {
         bson_destroy(x->members[j]);
      }
      bson_free(x->leases);
      bson_free(x->members);
      bson_free(x->name);
   }
   bson_free(r->items);
   memset(r, 0, sizeof *r);
}

static admin_relay_t *
relay_named(admin_relays_t *r, const char *name)
{
   for (size_t i = 0; i < r->n; i++) {
      if (!strcmp(r->items[i].name, name)) {
         return &r->items[i];
      }
   }
   r->items = bson_realloc(r->items, (r->n + 1) * sizeof *r->items);
   admin_relay_t *x = &r->items[r->n++];
   memset(x, 0, sizeof *x);
   x->name = bson_strdup(name);
   return x;
}

static int64_t
date_at(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_DATE_TIME(&it)
             ? bson_iter_date_time(&it)
             : 0;
}

static const char *
utf8_at(const bson_t *doc, const char *path)
{
   bson_iter_t it, sub;
   return bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &sub) &&
                BSON_ITER_HOLDS_UTF8(&sub)
             ? bson_iter_utf8(&sub, NULL)
             : NULL;
}

/* -1 when missing, not a number, or a double outside int64 (converting one is undefined
 * behaviour: a malformed lease written by something else). */
static int64_t
int_at(const bson_t *doc, const char *path)
{
   bson_iter_t it, sub;
   if (!bson_iter_init(&it, doc) || !bson_iter_find_descendant(&it, path, &sub) ||
       !BSON_ITER_HOLDS_NUMBER(&sub)) {
      return -1;
   }
   if (BSON_ITER_HOLDS_DOUBLE(&sub)) {
      double d = bson_iter_double(&sub);
      return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : -1;
   }
   return bson_iter_as_int64(&sub);
}

static void
push_doc(bson_t ***arr, size_t *n, const bson_t *doc)
{
   *arr = bson_realloc(*arr, (*n + 1) * sizeof **arr);
   (*arr)[(*n)++] = bson_copy(doc);
}

/* Sorts one state/lease document into its relay. Unknown shapes are ignored. */
static void
take(admin_relays_t *r, const bson_t *doc)
{
   bson_iter_t it;
   if (!bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   if (BSON_ITER_HOLDS_UTF8(&it)) {
      admin_relay_t *x = relay_named(r, bson_iter_utf8(&it, NULL));
      x->has_token = bson_has_field(doc, "token");
      x->checkpoint_at = date_at(doc, "updatedAt");
      x->partitions = (int32_t)int_at(doc, "partitions");
      x->created_at = date_at(doc, "createdAt");
      return;
   }
   const char *relay = utf8_at(doc, "_id.relay");
   if (!relay) {
      return;
   }
   admin_relay_t *x = relay_named(r, relay);
   if (int_at(doc, "_id.partition") >= 0) {
      push_doc(&x->leases, &x->n_leases, doc);
   } else if (utf8_at(doc, "_id.member")) {
      push_doc(&x->members, &x->n_members, doc);
   }
}

static int
read_collection(admin_t *a, const char *name, admin_relays_t *r)
{
   mongoc_client_t *client = mongoc_client_pool_pop(a->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, a->cfg.state_database, name);
   bson_t filter = BSON_INITIALIZER;
   bson_t *opts = BCON_NEW("sort", "{", "_id", BCON_INT32(1), "}");
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, &filter, opts, NULL);
   const bson_t *doc;
   bson_error_t error;
   int rc = EX_OK;

   while (mongoc_cursor_next(cursor, &doc)) {
      take(r, doc);
   }
   if (mongoc_cursor_error(cursor, &error)) {
      rc = admin_fail(name, &error);
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(a->pool, client);
   return rc;
}

int
admin_relays_read(admin_t *a, admin_relays_t *r)
{
   const char *lease_coll = admin_lease_collection(a);
   int rc = read_collection(a, a->cfg.state_collection, r);
   if (rc == EX_OK && lease_coll && strcmp(lease_coll, a->cfg.state_collection) != 0) {
      rc = read_collection(a, lease_coll, r);
   }
   return rc;
}

/* A lease's owner if it holds the lease now, else NULL (free or expired). */
static const char *
live_owner(const bson_t *lease, int64_t now)
{
   const char *owner = utf8_at(lease, "owner");
   int64_t expires = date_at(lease, "expiresAt");
   return owner && expires > now ? owner : NULL;
}

static size_t
live_members(const admin_relay_t *x, int64_t now)
{
   size_t n = 0;
   for (size_t i = 0; i < x->n_members; i++) {
      n += date_at(x->members[i], "expiresAt") > now;
   }
   return n;
}

static size_t
owned_leases(const admin_relay_t *x, int64_t now)
{
   size_t n = 0;
   for (size_t i = 0; i < x->n_leases; i++) {
      n += live_owner(x->leases[i], now) != NULL;
   }
   return n;
}

static void
print_lease(FILE *out, const bson_t *l, int64_t now)
{
   const char *owner = live_owner(l, now);
   int64_t expires = date_at(l, "expiresAt"), token_at = date_at(l, "tokenAt");
   /* Lease and member documents can be written by anything with access: escaped. */
   fprintf(out, "  %" PRId64 "\t", int_at(l, "_id.partition"));
   admin_print_str(out, owner ? owner : (utf8_at(l, "owner") ? "(expired)" : "(free)"));
   fprintf(out, "\t%" PRId64 "\t", int_at(l, "epoch"));
   if (owner) {
      admin_print_age(out, expires - now);
      fputs(" left", out);
   } else {
      fputs("-", out);
   }
   fputc('\t', out);
   admin_print_age(out, token_at ? now - token_at : -1);
   const char *handoff = utf8_at(l, "handoff.to");
   if (handoff) {
      fputs("\thandoff to ", out);
      admin_print_str(out, handoff);
   }
   fputc('\n', out);
}

static void
print_member(FILE *out, const bson_t *m, int64_t now)
{
   int64_t expires = date_at(m, "expiresAt");
   fputs("  ", out);
   admin_print_str(out, utf8_at(m, "_id.member"));
   fputc('\t', out);
   admin_print_str(out, utf8_at(m, "host"));
   fprintf(out, "\t%" PRId64 "\t%" PRId64 "\t", int_at(m, "pid"), int_at(m, "owned"));
   admin_print_time(out, date_at(m, "startedAt"));
   fputs(expires > now ? "\tlive\n" : "\tgone\n", out);
}

void
admin_relays_print(const admin_relays_t *r, FILE *out, int64_t now)
{
   for (size_t i = 0; i < r->n; i++) {
      const admin_relay_t *x = &r->items[i];
      fputs("\nRELAY ", out);
      admin_print_str(out, x->name);
      if (x->has_token) {
         fputs(": checkpoint ", out);
         admin_print_age(out, x->checkpoint_at ? now - x->checkpoint_at : -1);
         fputs(" old (a relay without groups)", out);
      }
      if (x->partitions > 0 || x->n_leases > 0) {
         fprintf(out, ": %d partitions, %zu owned, %zu live member(s)", (int)x->partitions,
                 owned_leases(x, now), live_members(x, now));
      }
      fputc('\n', out);
      if (x->n_leases) {
         fputs("  PARTITION\tOWNER\tEPOCH\tLEASE\tCHECKPOINT-AGE\n", out);
      }
      for (size_t j = 0; j < x->n_leases; j++) {
         print_lease(out, x->leases[j], now);
      }
      if (x->n_members) {
         fputs("  MEMBER\tHOST\tPID\tOWNS\tSTARTED\tSTATE\n", out);
      }
      for (size_t j = 0; j < x->n_members; j++) {
         print_member(out, x->members[j], now);
      }
   }
}

static void
append_lease(bson_t *arr, const char *key, const bson_t *l, int64_t now)
{
   bson_t item;
   const char *owner = live_owner(l, now), *handoff = utf8_at(l, "handoff.to");
   int64_t expires = date_at(l, "expiresAt"), token_at = date_at(l, "tokenAt");
   BSON_APPEND_DOCUMENT_BEGIN(arr, key, &item);
   BSON_APPEND_INT64(&item, "partition", int_at(l, "_id.partition"));
   BSON_APPEND_UTF8(&item, "state", owner ? "owned" : utf8_at(l, "owner") ? "expired" : "free");
   if (utf8_at(l, "owner")) {
      BSON_APPEND_UTF8(&item, "owner", utf8_at(l, "owner"));
   }
   BSON_APPEND_INT64(&item, "epoch", int_at(l, "epoch"));
   if (expires) {
      BSON_APPEND_DOUBLE(&item, "expiresInSeconds", (double)(expires - now) / 1000.0);
   }
   if (token_at) {
      BSON_APPEND_DOUBLE(&item, "checkpointAgeSeconds", (double)(now - token_at) / 1000.0);
   }
   if (handoff) {
      BSON_APPEND_UTF8(&item, "handoffTo", handoff);
   }
   bson_append_document_end(arr, &item);
}

static void
append_member(bson_t *arr, const char *key, const bson_t *m, int64_t now)
{
   bson_t item;
   int64_t expires = date_at(m, "expiresAt");
   BSON_APPEND_DOCUMENT_BEGIN(arr, key, &item);
   BSON_APPEND_UTF8(&item, "member", utf8_at(m, "_id.member"));
   if (utf8_at(m, "host")) {
      BSON_APPEND_UTF8(&item, "host", utf8_at(m, "host"));
   }
   BSON_APPEND_INT64(&item, "pid", int_at(m, "pid"));
   BSON_APPEND_INT64(&item, "owned", int_at(m, "owned"));
   BSON_APPEND_BOOL(&item, "live", expires > now);
   bson_append_document_end(arr, &item);
}

static void
append_relay(bson_t *arr, const char *key, const admin_relay_t *x, int64_t now)
{
   bson_t item, sub;
   char k[16];
   const char *kk;
   BSON_APPEND_DOCUMENT_BEGIN(arr, key, &item);
   BSON_APPEND_UTF8(&item, "name", x->name);
   if (x->has_token && x->checkpoint_at) {
      BSON_APPEND_DOUBLE(&item, "checkpointAgeSeconds", (double)(now - x->checkpoint_at) / 1000.0);
   }
   if (x->partitions > 0) {
      BSON_APPEND_INT32(&item, "partitions", x->partitions);
   }
   BSON_APPEND_INT64(&item, "owned", (int64_t)owned_leases(x, now));
   BSON_APPEND_INT64(&item, "liveMembers", (int64_t)live_members(x, now));
   BSON_APPEND_ARRAY_BEGIN(&item, "leases", &sub);
   for (size_t j = 0; j < x->n_leases; j++) {
      bson_uint32_to_string((uint32_t)j, &kk, k, sizeof k);
      append_lease(&sub, kk, x->leases[j], now);
   }
   bson_append_array_end(&item, &sub);
   BSON_APPEND_ARRAY_BEGIN(&item, "members", &sub);
   for (size_t j = 0; j < x->n_members; j++) {
      bson_uint32_to_string((uint32_t)j, &kk, k, sizeof k);
      append_member(&sub, kk, x->members[j], now);
   }
   bson_append_array_end(&item, &sub);
   bson_append_document_end(arr, &item);
}

void
admin_relays_append_json(const admin_relays_t *r, bson_t *doc, int64_t now)
{
   bson_t arr;
   char k[16];
   const char *kk;
   BSON_APPEND_ARRAY_BEGIN(doc, "relays", &arr);
   for (size_t i = 0; i < r->n; i++) {
      bson_uint32_to_string((uint32_t)i, &kk, k, sizeof k);
      append_relay(&arr, kk, &r->items[i], now);
   }
   bson_append_array_end(doc, &arr);
}
