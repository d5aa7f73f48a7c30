/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Lease thread only (its own client). Why the fence makes late writes harmless is said in
 * lease-store.h; which member may take what is balance.c's job; the group document and its
 * migration are in group-doc.c (relay_lease_store_init() here chooses among them).
 */
#include "group/lease-store.h"

#include <string.h>

#include "util/log.h"
#include "util/version.h"

void
relay_lease_store_append_id(bson_t *doc, const char *key, const relay_lease_store_t *st, int p)
{
   bson_t id;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &id);
   BSON_APPEND_UTF8(&id, "relay", st->name);
   BSON_APPEND_INT32(&id, "partition", p);
   bson_append_document_end(doc, &id);
}

static void
append_member_id(bson_t *doc, const relay_lease_store_t *st)
{
   bson_t id;
   BSON_APPEND_DOCUMENT_BEGIN(doc, "_id", &id);
   BSON_APPEND_UTF8(&id, "relay", st->name);
   BSON_APPEND_UTF8(&id, "member", st->me);
   bson_append_document_end(doc, &id);
}

/* {$add: ["$$NOW", ttl]} under @key. */
static void
append_now_plus_ttl(bson_t *doc, const char *key, const relay_lease_store_t *st)
{
   bson_t add, args;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &add);
   BSON_APPEND_ARRAY_BEGIN(&add, "$add", &args);
   BSON_APPEND_UTF8(&args, "0", "$$NOW");
   BSON_APPEND_INT64(&args, "1", st->ttl_ms);
   bson_append_array_end(&add, &args);
   bson_append_document_end(doc, &add);
}

/* {$literal: value} under @key: a value that a pipeline stage must not evaluate (a resume
 * token, an instance id that might start with "$"). */
static void
append_literal_value(bson_t *doc, const char *key, const bson_value_t *value)
{
   bson_t lit;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &lit);
   BSON_APPEND_VALUE(&lit, "$literal", value);
   bson_append_document_end(doc, &lit);
}

static void
append_literal(bson_t *doc, const char *key, const bson_t *value)
{
   bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
   v.value.v_doc.data = (uint8_t *)bson_get_data(value);
   v.value.v_doc.data_len = value->len;
   append_literal_value(doc, key, &v);
}

static void
append_literal_utf8(bson_t *doc, const char *key, const char *value)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};
   v.value.v_utf8.str = (char *)value;
   v.value.v_utf8.len = (uint32_t)strlen(value);
   append_literal_value(doc, key, &v);
}

/* [{$set: @set}] */
static void
make_pipeline(bson_t *pipeline, const bson_t *set)
{
   bson_t stage;
   bson_init(pipeline);
   BSON_APPEND_DOCUMENT_BEGIN(pipeline, "0", &stage);
   BSON_APPEND_DOCUMENT(&stage, "$set", set);
   bson_append_document_end(pipeline, &stage);
}

bool
relay_lease_store_update_many(mongoc_collection_t *coll, const bson_t *filter, const bson_t *set,
                              bool pipeline, bson_error_t *error)
{
   bson_t update;
   bool ok;
   if (pipeline) {
      make_pipeline(&update, set);
   } else {
      bson_copy_to(set, &update);
   }
   ok = mongoc_collection_update_many(coll, filter, &update, NULL, NULL, error);
   bson_destroy(&update);
   return ok;
}

void
relay_lease_store_fence(const relay_lease_store_t *st, const relay_partset_t *parts,
                        const int64_t *epochs, bson_t *filter)
{
   bson_t or ;
   uint32_t i = 0;
   char key[16];
   const char *k;

   BSON_APPEND_ARRAY_BEGIN(filter, "$or", & or);
   for (int p = 0; p < st->partitions; p++) {
      bson_t branch;
      if (!relay_partset_has(parts, p)) {
         continue;
      }
      bson_uint32_to_string(i++, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(& or, k, &branch);
      relay_lease_store_append_id(&branch, "_id", st, p);
      BSON_APPEND_INT64(&branch, "epoch", epochs[p]);
      bson_append_document_end(& or, &branch);
   }
   bson_append_array_end(filter, & or);
   BSON_APPEND_UTF8(filter, "owner", st->me);
}

/* Sets @set (a pipeline stage: $$NOW works) on the leases of @parts that @st still holds at
 * @epochs, and destroys @set. */
static bool
fenced_update(const relay_lease_store_t *st, const relay_partset_t *parts, const int64_t *epochs,
              bson_t *set, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER;
   bool ok;

   relay_lease_store_fence(st, parts, epochs, &filter);
   ok = relay_lease_store_update_many(st->leases, &filter, set, true, error);
   bson_destroy(&filter);
   bson_destroy(set);
   return ok;
}

bool
relay_lease_store_renew(const relay_lease_store_t *st, const relay_partset_t *parts,
                        const int64_t *epochs, const bson_t *token, bson_error_t *error)
{
   bson_t set = BSON_INITIALIZER;

   append_now_plus_ttl(&set, "expiresAt", st);
   BSON_APPEND_UTF8(&set, "renewedAt", "$$NOW");
   if (token) {
      append_literal(&set, "token", token);
      BSON_APPEND_UTF8(&set, "tokenAt", "$$NOW");
   }
   return fenced_update(st, parts, epochs, &set, error);
}

bool
relay_lease_store_checkpoint(const relay_lease_store_t *st, const relay_partset_t *parts,
                             const int64_t *epochs, const bson_t *token, bson_error_t *error)
{
   bson_t set = BSON_INITIALIZER;

   append_literal(&set, "token", token);
   BSON_APPEND_UTF8(&set, "tokenAt", "$$NOW");
   return fenced_update(st, parts, epochs, &set, error);
}

/* {$in: [ids of @parts]} under "_id" of @filter. */
static void
append_id_in(bson_t *filter, const relay_lease_store_t *st, const relay_partset_t *parts)
{
   bson_t cond, in;
   uint32_t i = 0;
   char key[16];
   const char *k;

   BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &cond);
   BSON_APPEND_ARRAY_BEGIN(&cond, "$in", &in);
   for (int p = 0; p < st->partitions; p++) {
      if (relay_partset_has(parts, p)) {
         bson_uint32_to_string(i++, &k, key, sizeof key);
         relay_lease_store_append_id(&in, k, st, p);
      }
   }
   bson_append_array_end(&cond, &in);
   bson_append_document_end(filter, &cond);
}

/* {$expr: {$lt: ["$<field>", "$$NOW"]}} under @key of @arr. */
static void
append_past(bson_t *arr, const char *key, const char *field)
{
   bson_t branch, expr, args;
   char *path = bson_strdup_printf("$%s", field);
   BSON_APPEND_DOCUMENT_BEGIN(arr, key, &branch);
   BSON_APPEND_DOCUMENT_BEGIN(&branch, "$expr", &expr);
   BSON_APPEND_ARRAY_BEGIN(&expr, "$lt", &args);
   BSON_APPEND_UTF8(&args, "0", path);
   BSON_APPEND_UTF8(&args, "1", "$$NOW");
   bson_append_array_end(&expr, &args);
   bson_append_document_end(&branch, &expr);
   bson_append_document_end(arr, &branch);
   bson_free(path);
}

/* {epoch: {$gte: 0, $lt: RELAY_EPOCH_MAX}} under @key of @doc: a well-formed epoch (a
 * comparison with numbers never matches a string). */
static void
append_epoch_in_range(bson_t *doc, const char *key)
{
   bson_t b, range;
   BSON_APPEND_DOCUMENT_BEGIN(doc, key, &b);
   BSON_APPEND_DOCUMENT_BEGIN(&b, "epoch", &range);
   BSON_APPEND_INT64(&range, "$gte", 0);
   BSON_APPEND_INT64(&range, "$lt", RELAY_EPOCH_MAX);
   bson_append_document_end(&b, &range);
   bson_append_document_end(doc, &b);
}

bool
relay_lease_store_repair(const relay_lease_store_t *st, const relay_partset_t *parts,
                         bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, set = BSON_INITIALIZER, nor, or, free_;
   bool ok;

   append_id_in(&filter, st, parts);
   BSON_APPEND_ARRAY_BEGIN(&filter, "$nor", &nor);
   append_epoch_in_range(&nor, "0");
   bson_append_array_end(&filter, &nor);
   BSON_APPEND_ARRAY_BEGIN(&filter, "$or", & or);
   BSON_APPEND_DOCUMENT_BEGIN(& or, "0", &free_);
   BSON_APPEND_NULL(&free_, "owner");
   bson_append_document_end(& or, &free_);
   append_past(& or, "1", "expiresAt");
   bson_append_array_end(&filter, & or);
   BSON_APPEND_NULL(&set, "owner");
   BSON_APPEND_INT64(&set, "epoch", 0);
   BSON_APPEND_NULL(&set, "expiresAt");
   BSON_APPEND_NULL(&set, "handoff");
   ok = relay_lease_store_update_many(st->leases, &filter, &set, true, error);
   bson_destroy(&filter);
   bson_destroy(&set);
   return ok;
}

bool
relay_lease_store_acquire(const relay_lease_store_t *st, const relay_partset_t *parts,
                          bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, set = BSON_INITIALIZER, and, or, b, add, args;
   bool ok;

   append_id_in(&filter, st, parts);
   BSON_APPEND_ARRAY_BEGIN(&filter, "$and", &and);
   /* free or expired */
   BSON_APPEND_DOCUMENT_BEGIN(&and, "0", &b);
   BSON_APPEND_ARRAY_BEGIN(&b, "$or", & or);
   {
      bson_t free_;
      BSON_APPEND_DOCUMENT_BEGIN(& or, "0", &free_);
      BSON_APPEND_NULL(&free_, "owner");
      bson_append_document_end(& or, &free_);
   }
   append_past(& or, "1", "expiresAt");
   bson_append_array_end(&b, & or);
   bson_append_document_end(&and, &b);
   /* not reserved for another member */
   BSON_APPEND_DOCUMENT_BEGIN(&and, "1", &b);
   BSON_APPEND_ARRAY_BEGIN(&b, "$or", & or);
   {
      bson_t r;
      BSON_APPEND_DOCUMENT_BEGIN(& or, "0", &r);
      BSON_APPEND_NULL(&r, "reservedFor");
      bson_append_document_end(& or, &r);
      BSON_APPEND_DOCUMENT_BEGIN(& or, "1", &r);
      BSON_APPEND_UTF8(&r, "reservedFor", st->me);
      bson_append_document_end(& or, &r);
   }
   append_past(& or, "2", "reservedUntil");
   bson_append_array_end(&b, & or);
   bson_append_document_end(&and, &b);
   /* a malformed epoch would fail the $add below, and with it the whole update */
   append_epoch_in_range(&and, "2");
   bson_append_array_end(&filter, &and);

   append_literal_utf8(&set, "owner", st->me);
   BSON_APPEND_DOCUMENT_BEGIN(&set, "epoch", &add);
   BSON_APPEND_ARRAY_BEGIN(&add, "$add", &args);
   BSON_APPEND_UTF8(&args, "0", "$epoch");
   BSON_APPEND_INT64(&args, "1", 1);
   bson_append_array_end(&add, &args);
   bson_append_document_end(&set, &add);
   append_now_plus_ttl(&set, "expiresAt", st);
   BSON_APPEND_UTF8(&set, "acquiredAt", "$$NOW");
   BSON_APPEND_UTF8(&set, "renewedAt", "$$NOW");
   BSON_APPEND_NULL(&set, "handoff");
   BSON_APPEND_NULL(&set, "reservedFor");
   BSON_APPEND_NULL(&set, "reservedUntil");
   ok = relay_lease_store_update_many(st->leases, &filter, &set, true, error);
   bson_destroy(&filter);
   bson_destroy(&set);
   return ok;
}

bool
relay_lease_store_read_mine(const relay_lease_store_t *st, const relay_partset_t *parts,
                            relay_partset_t *owned, int64_t *epochs, bson_t **tokens,
                            bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, proj;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bool ok;

   relay_partset_clear(owned);
   append_id_in(&filter, st, parts);
   BSON_APPEND_UTF8(&filter, "owner", st->me);
   BSON_APPEND_DOCUMENT_BEGIN(&opts, "projection", &proj);
   BSON_APPEND_INT32(&proj, "epoch", 1);
   BSON_APPEND_INT32(&proj, "token", 1);
   bson_append_document_end(&opts, &proj);
   cursor = mongoc_collection_find_with_opts(st->leases, &filter, &opts, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t it;
      int p = -1;
      if (bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "_id.partition", &it) &&
          BSON_ITER_HOLDS_INT32(&it)) {
         p = bson_iter_int32(&it);
      }
      if (p < 0 || p >= st->partitions || !bson_iter_init_find(&it, doc, "epoch") ||
          !relay_lease_epoch_read(&it, &epochs[p])) {
         continue;
      }
      relay_partset_add(owned, p);
      tokens[p] = NULL;
      if (bson_iter_init_find(&it, doc, "token") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         const uint8_t *data;
         uint32_t len;
         bson_iter_document(&it, &len, &data);
         tokens[p] = bson_new_from_data(data, len);
      }
   }
   ok = !mongoc_cursor_error(cursor, error);
   mongoc_cursor_destroy(cursor);
   bson_destroy(&filter);
   bson_destroy(&opts);
   return ok;
}

bool
relay_lease_store_release(const relay_lease_store_t *st, const relay_partset_t *parts,
                          const int64_t *epochs, const char *reserve_for, bson_error_t *error)
{
   bson_t set = BSON_INITIALIZER;

   BSON_APPEND_NULL(&set, "owner");
   BSON_APPEND_NULL(&set, "expiresAt");
   BSON_APPEND_NULL(&set, "handoff");
   if (reserve_for) {
      append_literal_utf8(&set, "reservedFor", reserve_for);
      append_now_plus_ttl(&set, "reservedUntil", st);
   } else {
      BSON_APPEND_NULL(&set, "reservedFor");
      BSON_APPEND_NULL(&set, "reservedUntil");
   }
   return fenced_update(st, parts, epochs, &set, error);
}

bool
relay_lease_store_request(const relay_lease_store_t *st, int p, const char *owner, int64_t epoch,
                          bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, set = BSON_INITIALIZER, handoff, pipeline;
   bool ok;

   relay_lease_store_append_id(&filter, "_id", st, p);
   BSON_APPEND_UTF8(&filter, "owner", owner);
   BSON_APPEND_INT64(&filter, "epoch", epoch);
   BSON_APPEND_NULL(&filter, "handoff");
   BSON_APPEND_DOCUMENT_BEGIN(&set, "handoff", &handoff);
   append_literal_utf8(&handoff, "to", st->me);
   BSON_APPEND_UTF8(&handoff, "at", "$$NOW");
   bson_append_document_end(&set, &handoff);
   make_pipeline(&pipeline, &set);
   ok = mongoc_collection_update_one(st->leases, &filter, &pipeline, NULL, NULL, error);
   bson_destroy(&pipeline);
   bson_destroy(&filter);
   bson_destroy(&set);
   return ok;
}

bool
relay_lease_store_member(const relay_lease_store_t *st, const char *host, int pid, int owned,
                         bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, set = BSON_INITIALIZER, opts = BSON_INITIALIZER, pipeline,
          ifnull, args;
   bool ok;

   append_member_id(&filter, st);
   append_literal_utf8(&set, "host", host);
   BSON_APPEND_INT32(&set, "pid", pid);
   BSON_APPEND_DOCUMENT_BEGIN(&set, "startedAt", &ifnull);
   BSON_APPEND_ARRAY_BEGIN(&ifnull, "$ifNull", &args);
   BSON_APPEND_UTF8(&args, "0", "$startedAt");
   BSON_APPEND_UTF8(&args, "1", "$$NOW");
   bson_append_array_end(&ifnull, &args);
   bson_append_document_end(&set, &ifnull);
   append_now_plus_ttl(&set, "expiresAt", st);
   BSON_APPEND_INT32(&set, "owned", owned);
   append_literal_utf8(&set, "version", relay_version());
   append_literal_utf8(&set, "settings", st->settings);
   make_pipeline(&pipeline, &set);
   BSON_APPEND_BOOL(&opts, "upsert", true);
   ok = mongoc_collection_update_one(st->leases, &filter, &pipeline, &opts, NULL, error);
   bson_destroy(&pipeline);
   bson_destroy(&filter);
   bson_destroy(&set);
   bson_destroy(&opts);
   return ok;
}

bool
relay_lease_store_leave(const relay_lease_store_t *st, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER;
   bool ok;
   append_member_id(&filter, st);
   ok = mongoc_collection_delete_one(st->leases, &filter, NULL, NULL, error);
   bson_destroy(&filter);
   return ok;
}

bool
relay_lease_store_forget_dead(const relay_lease_store_t *st, bson_error_t *error)
{
   bson_t filter = BSON_INITIALIZER, exists, expr, add, args, ltargs;
   bool ok;

   BSON_APPEND_UTF8(&filter, "_id.relay", st->name);
   BSON_APPEND_DOCUMENT_BEGIN(&filter, "_id.member", &exists);
   BSON_APPEND_BOOL(&exists, "$exists", true);
   bson_append_document_end(&filter, &exists);
   /* {$expr: {$lt: [{$add: ["$expiresAt", 10 ttl]}, "$$NOW"]}} */
   BSON_APPEND_DOCUMENT_BEGIN(&filter, "$expr", &expr);
   BSON_APPEND_ARRAY_BEGIN(&expr, "$lt", &ltargs);
   BSON_APPEND_DOCUMENT_BEGIN(&ltargs, "0", &add);
   BSON_APPEND_ARRAY_BEGIN(&add, "$add", &args);
   BSON_APPEND_UTF8(&args, "0", "$expiresAt");
   BSON_APPEND_INT64(&args, "1", 10 * st->ttl_ms);
   bson_append_array_end(&add, &args);
   bson_append_document_end(&ltargs, &add);
   BSON_APPEND_UTF8(&ltargs, "1", "$$NOW");
   bson_append_array_end(&expr, &ltargs);
   bson_append_document_end(&filter, &expr);
   ok = mongoc_collection_delete_many(st->leases, &filter, NULL, NULL, error);
   bson_destroy(&filter);
   return ok;
}

relay_group_init_t
relay_lease_store_init(const relay_lease_store_t *st, bson_error_t *error)
{
   for (int attempt = 0; attempt < 3; attempt++) {
      bson_t filter = BSON_INITIALIZER;
      const bson_t *doc;
      mongoc_cursor_t *cursor;
      relay_group_init_t rc;

      BSON_APPEND_UTF8(&filter, "_id", st->name);
      cursor = mongoc_collection_find_with_opts(st->state, &filter, NULL, NULL);
      if (mongoc_cursor_next(cursor, &doc)) {
         rc = relay_group_doc_check(st, doc, error);
      } else if (mongoc_cursor_error(cursor, error)) {
         rc = RELAY_GROUP_RETRY;
         attempt = 3;
      } else {
         rc = relay_lease_store_find_elsewhere(st, error);
         if (rc == RELAY_GROUP_OK) {
            rc = relay_group_doc_create(st, error);
         }
      }
      mongoc_cursor_destroy(cursor);
      bson_destroy(&filter);
      if (rc != RELAY_GROUP_RETRY || attempt >= 2) {
         return rc;
      }
   }
   return RELAY_GROUP_RETRY;
}
