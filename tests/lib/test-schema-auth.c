/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox_collection_ensure_schema() as a user who may write but not collMod (role
 * readWrite): the server's 13 Unauthorized comes back unchanged, and nothing is installed;
 * such a user may not use bypassDocumentValidation either.
 * Needs a server with authentication and a user that may create users (the fixture's root
 * user); skipped on a server without credentials in OUTBOX_TEST_MONGODB_URI.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib-test.h"

static void
admin_command(mongoc_client_pool_t *pool, const bson_t *cmd)
{
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   bson_error_t e;
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, NULL, &e);
   mongoc_client_pool_push(pool, client);
   cr_assert(ok, "%s", e.message);
}

Test(schema_auth, collmod_refused_error_passed_through, .timeout = 60)
{
   const char *env = getenv("OUTBOX_TEST_MONGODB_URI");
   if (!env || !strchr(env, '@')) {
      cr_skip_test("needs a server with authentication (credentials in the URI)");
   }
   lt_t t;
   lt_init(&t, "schema_auth", NULL, NULL);
   char user[64];
   snprintf(user, sizeof user, "schema-writer-%d", (int)getpid());
   bson_t *create_user =
      BCON_NEW("createUser", BCON_UTF8(user), "pwd", BCON_UTF8("Writer-pw-3Kd9"), "roles", "[", "{",
               "role", BCON_UTF8("readWrite"), "db", BCON_UTF8(LT_DB), "}", "]");
   admin_command(t.pool, create_user);
   /* The collection exists (made by someone allowed to), so installing needs collMod. */
   lt_open(&t, NULL);
   bson_t *doc =
      BCON_NEW("_id", BCON_INT32(1), "version", BCON_INT64(1), "eventSeq", BCON_INT64(0));
   lt_raw_insert(&t, doc);

   bson_error_t e;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(env, &e);
   cr_assert_not_null(uri, "%s", e.message);
   mongoc_uri_set_username(uri, user);
   mongoc_uri_set_password(uri, "Writer-pw-3Kd9");
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   outbox_collection_t *coll = outbox_collection_new(pool, LT_DB, t.coll_name, NULL, &e);
   cr_assert_not_null(coll, "%s", e.message);
   cr_assert_not(outbox_collection_ensure_schema(coll, NULL, &e));
   cr_assert_eq(e.domain, MONGOC_ERROR_SERVER, "domain %u: %s", e.domain, e.message);
   cr_assert_eq(e.code, 13, "%s", e.message);
   /* Nor may it skip validation (bypassDocumentValidation is dbAdmin's or restore's). */
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *raw = mongoc_client_get_collection(client, LT_DB, t.coll_name);
   bson_t *bypass = BCON_NEW("bypassDocumentValidation", BCON_BOOL(true));
   bson_t *other = BCON_NEW("_id", BCON_INT32(2));
   cr_assert_not(mongoc_collection_insert_one(raw, other, bypass, NULL, &e));
   cr_assert_eq(e.code, 13, "%s", e.message);
   bson_destroy(other);
   bson_destroy(bypass);
   mongoc_collection_destroy(raw);
   mongoc_client_pool_push(pool, client);
   /* What the writer may do still works. */
   bson_value_t id = lt_str_id("w");
   outbox_commit_t res;
   cr_assert(outbox_collection_create(coll, &id, NULL, NULL, 0, &res, &e), "%s", e.message);
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);

   bson_t *drop_user = BCON_NEW("dropUser", BCON_UTF8(user));
   admin_command(t.pool, drop_user);
   bson_destroy(drop_user);
   bson_destroy(doc);
   bson_destroy(create_user);
   lt_cleanup(&t);
}
