/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The localhost exception of mongod 6.0 --auth: while no user exists, a client connected over
 * loopback may run any command (how the first user gets created); once one exists, the
 * unauthenticated client gets 13. Needs a server with --auth and no users, which only
 * test-mongod started for it provides (OUTBOX_TEST_MONGOD_AUTH_NO_USERS=1).
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "tests/test-util.h"

Test(auth_localhost, first_user_then_authentication, .timeout = 60)
{
   if (!getenv("OUTBOX_TEST_MONGOD_AUTH_NO_USERS")) {
      cr_skip_test("needs test-mongod --auth without users (a fresh server of its own)");
   }
   mongoc_client_t *anon = md_test_client_as(NULL, NULL, NULL, NULL);
   bson_t *find = BCON_NEW("find", BCON_UTF8("c"));
   bson_t *create = BCON_NEW("createUser", BCON_UTF8("first"), "pwd", BCON_UTF8("Pw-first"),
                             "roles", "[", BCON_UTF8("root"), "]");
   bson_error_t error;
   cr_assert(md_test_try(anon, "db", find, &error), "before any user: %s", error.message);
   cr_assert(md_test_try(anon, "admin", create, &error), "first user: %s", error.message);
   cr_assert_not(md_test_try(anon, "db", find, &error), "still allowed after the first user");
   cr_assert_eq(error.code, 13, "%u %s", error.code, error.message);
   cr_assert_str_eq(error.message, "command find requires authentication");

   mongoc_client_t *root = md_test_client_as("first", "Pw-first", "admin", NULL);
   cr_assert(md_test_try(root, "db", find, &error), "as the first user: %s", error.message);
   bson_t *drop = BCON_NEW("dropUser", BCON_UTF8("first"));
   cr_assert(md_test_try(root, "admin", drop, &error), "%s", error.message);
   /* No user again: the exception is back. */
   cr_assert(md_test_try(anon, "db", find, &error), "after dropping the last user: %s",
             error.message);
   bson_destroy(drop);
   bson_destroy(find);
   bson_destroy(create);
   mongoc_client_destroy(root);
   mongoc_client_destroy(anon);
}
