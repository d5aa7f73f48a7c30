/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay refuses a sharded lease or state collection (store/sharding.h): what it reads
 * in a hello reply and in config.collections, and what it does when nobody answers. No
 * server: mongos itself is not available to unit tests (see relay/README.md for what is
 * checked against it).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "store/sharding.h"
#include "util/error.h"

static void
setup(void)
{
   mongoc_init();
}

static void
teardown(void)
{
   mongoc_cleanup();
}

TestSuite(sharding, .init = setup, .fini = teardown);

static bool
is_mongos(const char *json)
{
   bson_error_t e;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &e);
   cr_assert_not_null(doc, "%s", e.message);
   bool r = relay_sharding_is_mongos(doc);
   bson_destroy(doc);
   return r;
}

Test(sharding, only_isdbgrid_is_mongos)
{
   cr_assert(is_mongos("{\"isWritablePrimary\": true, \"msg\": \"isdbgrid\", \"ok\": 1}"));
   cr_assert_not(is_mongos("{\"isWritablePrimary\": true, \"setName\": \"rs0\", \"ok\": 1}"));
   cr_assert_not(is_mongos("{\"msg\": \"isdbgridx\"}"));
   cr_assert_not(is_mongos("{\"msg\": 1}"));
}

static bool
sharded(const char *json, bson_error_t *error)
{
   bson_error_t e;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &e);
   cr_assert_not_null(doc, "%s", e.message);
   memset(error, 0, sizeof *error);
   bool r = relay_sharding_entry_is_sharded(doc, "state", error);
   bson_destroy(doc);
   return r;
}

Test(sharding, a_collection_with_a_shard_key_is_named_with_its_key)
{
   bson_error_t e;

   cr_assert(sharded("{\"_id\": \"shop.outbox_relay_state\", \"key\": {\"_id\": \"hashed\"}}", &e));
   cr_assert_eq(e.domain, RELAY_ERROR_DOMAIN);
   cr_assert_eq(e.code, RELAY_ERROR_CONFIG);
   cr_assert(strstr(e.message, "state collection shop.outbox_relay_state is sharded"), "%s",
             e.message);
   cr_assert(strstr(e.message, "hashed"), "%s", e.message);
   cr_assert(strstr(e.message, "must be unsharded"), "%s", e.message);
   cr_assert(sharded("{\"_id\": \"shop.s\", \"key\": {\"tenant\": 1, \"_id\": 1}}", &e));
   cr_assert(strstr(e.message, "tenant"), "%s", e.message);
}

Test(sharding, dropped_or_keyless_entries_are_not_sharded)
{
   bson_error_t e;

   cr_assert_not(sharded("{\"_id\": \"shop.s\", \"key\": {\"_id\": 1}, \"dropped\": true}", &e));
   cr_assert_not(sharded("{\"_id\": \"shop.s\"}", &e));
   cr_assert_not(sharded("{\"_id\": \"shop.s\", \"key\": {}}", &e));
   cr_assert_eq(e.code, 0);
}

/* Nobody answers: the lease thread must ask again, neither refuse nor go on unchecked. */
Test(sharding, an_unreachable_server_is_asked_again)
{
   mongoc_client_t *client =
      mongoc_client_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100&connectTimeoutMS=100");
   bson_error_t e;

   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   cr_assert_eq(relay_sharding_check_group(client, "shop", "outbox_relay_state", NULL, &e),
                RELAY_SHARDING_RETRY);
   mongoc_client_destroy(client);
}
