/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The group document (state collection): created by the first member, checked by every
 * other one (the same partition count or no start), and migrated from the checkpoint
 * document of a relay before groups. Also makes sure the group's P lease documents exist.
 * relay_lease_store_init() (lease-store.c) decides which of these applies. Lease thread
 * only, once, before its first tick.
 */
#include "group/lease-store.h"

#include <string.h>

#include "util/error.h"
#include "util/log.h"

/* Makes sure lease documents 0..P-1 exist; new ones get @token as their checkpoint. */
static bool
ensure_leases(const relay_lease_store_t *st, const bson_t *token, bson_error_t *error)
{
   bson_t opts = BSON_INITIALIZER, reply;
   mongoc_bulk_operation_t *bulk;
   bool ok = true;

   BSON_APPEND_BOOL(&opts, "ordered", false);
   bulk = mongoc_collection_create_bulk_operation_with_opts(st->leases, &opts);
   for (int p = 0; p < st->partitions && ok; p++) {
      bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, soi, up = BSON_INITIALIZER;
      relay_lease_store_append_id(&q, "_id", st, p);
      BSON_APPEND_DOCUMENT_BEGIN(&u, "$setOnInsert", &soi);
      BSON_APPEND_INT32(&soi, "partitions", st->partitions);
      BSON_APPEND_NULL(&soi, "owner");
      BSON_APPEND_INT64(&soi, "epoch", 0);
      BSON_APPEND_NULL(&soi, "expiresAt");
      if (token) {
         BSON_APPEND_DOCUMENT(&soi, "token", token);
      } else {
         BSON_APPEND_NULL(&soi, "token");
      }
      BSON_APPEND_NULL(&soi, "handoff");
      BSON_APPEND_NULL(&soi, "reservedFor");
      BSON_APPEND_NULL(&soi, "reservedUntil");
      bson_append_document_end(&u, &soi);
      BSON_APPEND_BOOL(&up, "upsert", true);
      ok = mongoc_bulk_operation_update_one_with_opts(bulk, &q, &u, &up, error);
      bson_destroy(&q);
      bson_destroy(&u);
      bson_destroy(&up);
   }
   if (ok) {
      /* The reply is initialised whatever the outcome. */
      ok = mongoc_bulk_operation_execute(bulk, &reply, error);
      bson_destroy(&reply);
   }
   mongoc_bulk_operation_destroy(bulk);
   bson_destroy(&opts);
   return ok;
}

/* A new group document: leases left from an earlier group of this name lose their
 * checkpoints (so deleting the state document still means "sweep") and leases of another
 * partition count go. Epochs keep counting. */
static bool
start_new_group(const relay_lease_store_t *st, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, set = BSON_INITIALIZER, s;
   bool ok;

   BSON_APPEND_UTF8(&filter, "_id.relay", st->name);
   BSON_APPEND_DOCUMENT_BEGIN(&set, "$set", &s);
   BSON_APPEND_NULL(&s, "token");
   bson_append_document_end(&set, &s);
   ok = relay_lease_store_update_many(st->leases, &filter, &set, false, error);
   if (ok) {
      bson_t ne;
      BSON_APPEND_DOCUMENT_BEGIN(&filter, "partitions", &ne);
      BSON_APPEND_INT32(&ne, "$ne", st->partitions);
      bson_append_document_end(&filter, &ne);
      BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id.partition", &ne);
      BSON_APPEND_BOOL(&ne, "$exists", true);
      bson_append_document_end(&filter, &ne);
      ok = mongoc_collection_delete_many(st->leases, &filter, NULL, NULL, error);
   }
   bson_destroy(&filter);
   bson_destroy(&set);
   return ok;
}

/* Turns an old {_id: name, token, updatedAt} into the group document. */
static bool
migrate(const relay_lease_store_t *st, const bson_t *token, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, u = BSON_INITIALIZER, d;
   bool ok;

   BSON_APPEND_UTF8(&filter, "_id", st->name);
   BSON_APPEND_DOCUMENT_BEGIN(&filter, "partitions", &d);
   BSON_APPEND_BOOL(&d, "$exists", false);
   bson_append_document_end(&filter, &d);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$set", &d);
   BSON_APPEND_INT32(&d, "partitions", st->partitions);
   bson_append_document_end(&u, &d);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$unset", &d);
   BSON_APPEND_UTF8(&d, "token", "");
   BSON_APPEND_UTF8(&d, "updatedAt", "");
   bson_append_document_end(&u, &d);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$currentDate", &d);
   BSON_APPEND_BOOL(&d, "migratedAt", true);
   BSON_APPEND_BOOL(&d, "createdAt", true);
   bson_append_document_end(&u, &d);
   /* Leases first: a crash in between leaves the old document, and the next start
    * migrates again ($setOnInsert keeps what exists). */
   ok = ensure_leases(st, token, error) &&
        mongoc_collection_update_one(st->state, &filter, &u, NULL, NULL, error);
   if (ok) {
      relay_log(RELAY_LOG_INFO, "group",
                "migrated the checkpoint of '%s' (%s) to %d partition leases", st->name,
                mongoc_collection_get_name(st->state), st->partitions);
   }
   bson_destroy(&filter);
   bson_destroy(&u);
   return ok;
}

relay_group_init_t
relay_group_doc_create(const relay_lease_store_t *st, bson_error_t *error)
{
   bson_t doc = BSON_INITIALIZER;
   bool ok;

   BSON_APPEND_UTF8(&doc, "_id", st->name);
   BSON_APPEND_INT32(&doc, "partitions", st->partitions);
   BSON_APPEND_UTF8(&doc, "leaseCollection", mongoc_collection_get_name(st->leases));
   bson_append_now_utc(&doc, "createdAt", -1);
   ok = mongoc_collection_insert_one(st->state, &doc, NULL, NULL, error);
   bson_destroy(&doc);
   if (!ok) {
      /* 11000: another member created it first; look again. */
      return RELAY_GROUP_RETRY;
   }
   relay_log(RELAY_LOG_INFO, "group", "group '%s' created with %d partitions (%s)", st->name,
             st->partitions, mongoc_collection_get_name(st->state));
   if (!start_new_group(st, error) || !ensure_leases(st, NULL, error)) {
      return RELAY_GROUP_RETRY;
   }
   return RELAY_GROUP_OK;
}

relay_group_init_t
relay_group_doc_check(const relay_lease_store_t *st, const bson_t *doc, bson_error_t *error)
{
   bson_iter_t it;

   if (bson_iter_init_find(&it, doc, "partitions") && BSON_ITER_HOLDS_INT32(&it)) {
      int have = bson_iter_int32(&it);
      const char *leases = mongoc_collection_get_name(st->leases);
      if (have != st->partitions) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "group '%s' has %d partitions (%s); started with --partitions %d: use "
                        "the same value or another --name",
                        st->name, have, mongoc_collection_get_name(st->state), st->partitions);
         return RELAY_GROUP_MISMATCH;
      }
      if (bson_iter_init_find(&it, doc, "leaseCollection") && BSON_ITER_HOLDS_UTF8(&it) &&
          strcmp(bson_iter_utf8(&it, NULL), leases) != 0) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "group '%s' keeps its leases in collection '%s' (%s); started with "
                        "--lease-collection %s: use the same value or another --name",
                        st->name, bson_iter_utf8(&it, NULL), mongoc_collection_get_name(st->state),
                        leases);
         return RELAY_GROUP_MISMATCH;
      }
      return ensure_leases(st, NULL, error) ? RELAY_GROUP_OK : RELAY_GROUP_RETRY;
   }
   if (bson_iter_init_find(&it, doc, "token") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      const uint8_t *data;
      uint32_t len;
      bson_t token;
      bson_iter_document(&it, &len, &data);
      if (bson_init_static(&token, data, len)) {
         return migrate(st, &token, error) ? RELAY_GROUP_OK : RELAY_GROUP_RETRY;
      }
   }
   return migrate(st, NULL, error) ? RELAY_GROUP_OK : RELAY_GROUP_RETRY;
}

/* Whether collection @coll_name of the state collection's database holds a group document
 * of this name: {_id: name, partitions}. */
static bool
group_doc_in(const relay_lease_store_t *st, mongoc_database_t *db, const char *coll_name,
             bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, exists;
   mongoc_collection_t *coll = mongoc_database_get_collection(db, coll_name);
   const bson_t *doc;
   mongoc_cursor_t *cursor;
   bool found;

   BSON_APPEND_UTF8(&filter, "_id", st->name);
   BSON_APPEND_DOCUMENT_BEGIN(&filter, "partitions", &exists);
   BSON_APPEND_BOOL(&exists, "$exists", true);
   bson_append_document_end(&filter, &exists);
   cursor = mongoc_collection_find_with_opts(coll, &filter, NULL, NULL);
   found = mongoc_cursor_next(cursor, &doc);
   if (!found) {
      mongoc_cursor_error(cursor, error);
   }
   mongoc_cursor_destroy(cursor);
   mongoc_collection_destroy(coll);
   bson_destroy(&filter);
   return found;
}

relay_group_init_t
relay_lease_store_find_elsewhere(const relay_lease_store_t *st, bson_error_t *error)
{
   mongoc_database_t *db = st->db;
   const char *mine = mongoc_collection_get_name(st->state);
   bson_t opts = BSON_INITIALIZER;
   relay_group_init_t rc = RELAY_GROUP_OK;
   char **names;

   BSON_APPEND_BOOL(&opts, "nameOnly", true);
   names = mongoc_database_get_collection_names_with_opts(db, &opts, error);
   if (!names) {
      rc = RELAY_GROUP_RETRY;
   }
   for (size_t i = 0; names && names[i] && rc == RELAY_GROUP_OK; i++) {
      bson_error_t ignored;
      if (strcmp(names[i], mine) == 0 || strncmp(names[i], "system.", 7) == 0) {
         continue;
      }
      if (group_doc_in(st, db, names[i], &ignored)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "group '%s' lives in collection '%s'; started with --state-collection "
                        "%s: use the same --state-collection and --lease-collection as its "
                        "members, or another --name (to move the group, stop its members and "
                        "delete that document first)",
                        st->name, names[i], mine);
         rc = RELAY_GROUP_MISMATCH;
      }
   }
   bson_strfreev(names);
   bson_destroy(&opts);
   return rc;
}
