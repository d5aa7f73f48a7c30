/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The group's collections must be unsharded (sharding.h): asked of mongos once, before the
 * lease thread sets the group up. No state.
 */
#include "store/sharding.h"

#include <string.h>

#include "util/error.h"

bool
relay_sharding_is_mongos(const bson_t *hello)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, hello, "msg") && BSON_ITER_HOLDS_UTF8(&it) &&
          strcmp(bson_iter_utf8(&it, NULL), "isdbgrid") == 0;
}

bool
relay_sharding_entry_is_sharded(const bson_t *entry, const char *role, bson_error_t *error)
{
   bson_iter_t it;
   const char *ns = "?";
   char *key;
   bson_t key_doc;
   uint32_t len;
   const uint8_t *data;

   if (bson_iter_init_find(&it, entry, "dropped") && bson_iter_as_bool(&it)) {
      return false;
   }
   if (!bson_iter_init_find(&it, entry, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return false;
   }
   bson_iter_document(&it, &len, &data);
   if (!bson_init_static(&key_doc, data, len) || bson_count_keys(&key_doc) == 0) {
      return false;
   }
   if (bson_iter_init_find(&it, entry, "_id") && BSON_ITER_HOLDS_UTF8(&it)) {
      ns = bson_iter_utf8(&it, NULL);
   }
   key = bson_as_relaxed_extended_json(&key_doc, NULL);
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                  "the %s collection %s is sharded (shard key %s): a relay group's lease and "
                  "state collections must be unsharded, so that one primary judges every "
                  "lease; give --state-collection (and --lease-collection) an unsharded "
                  "collection",
                  role, ns, key);
   bson_free(key);
   return true;
}

/* The names of the group's collections as config.collections has them ("db.coll"). */
static bson_t *
namespaces_filter(const char *db, const char *state, const char *lease)
{
   char *state_ns = bson_strdup_printf("%s.%s", db, state);
   char *lease_ns = bson_strdup_printf("%s.%s", db, lease);
   bson_t *filter =
      BCON_NEW("_id", "{", "$in", "[", BCON_UTF8(state_ns), BCON_UTF8(lease_ns), "]", "}");
   bson_free(state_ns);
   bson_free(lease_ns);
   return filter;
}

static const char *
role_of(const bson_t *entry, const char *db, const char *state)
{
   bson_iter_t it;
   size_t n = strlen(db);
   if (bson_iter_init_find(&it, entry, "_id") && BSON_ITER_HOLDS_UTF8(&it)) {
      const char *ns = bson_iter_utf8(&it, NULL);
      if (strncmp(ns, db, n) == 0 && ns[n] == '.' && strcmp(ns + n + 1, state) == 0) {
         return "state";
      }
   }
   return "lease";
}

relay_sharding_t
relay_sharding_check_group(mongoc_client_t *client, const char *db, const char *state,
                           const char *lease, bson_error_t *error)
{
   bson_t hello = BSON_INITIALIZER, reply;
   relay_sharding_t rc = RELAY_SHARDING_OK;

   BSON_APPEND_INT32(&hello, "hello", 1);
   bool asked = mongoc_client_command_simple(client, "admin", &hello, NULL, &reply, error);
   bool mongos = asked && relay_sharding_is_mongos(&reply);
   bson_destroy(&reply);
   bson_destroy(&hello);
   if (!asked) {
      return error->domain == MONGOC_ERROR_SERVER ? RELAY_SHARDING_OK : RELAY_SHARDING_RETRY;
   }
   if (!mongos) {
      return RELAY_SHARDING_OK;
   }
   mongoc_collection_t *colls = mongoc_client_get_collection(client, "config", "collections");
   bson_t *filter = namespaces_filter(db, state, lease ? lease : state);
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(colls, filter, NULL, NULL);
   const bson_t *entry;
   while (rc == RELAY_SHARDING_OK && mongoc_cursor_next(cursor, &entry)) {
      if (relay_sharding_entry_is_sharded(entry, role_of(entry, db, state), error)) {
         rc = RELAY_SHARDING_REFUSE;
      }
   }
   if (rc == RELAY_SHARDING_OK && mongoc_cursor_error(cursor, error)) {
      rc = relay_error_is_refusal(error) ? RELAY_SHARDING_UNKNOWN : RELAY_SHARDING_RETRY;
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);
   mongoc_collection_destroy(colls);
   return rc;
}
