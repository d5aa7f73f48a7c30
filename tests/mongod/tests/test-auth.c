/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Authentication against test-mongod --auth with mongo-c-driver as the client: SCRAM-SHA-1
 * and SCRAM-SHA-256, speculative authentication in the handshake (counted in serverStatus as
 * mongod does), wrong passwords (18, never echoing the password), SASLprep, updateUser and
 * dropUser. Each test creates its own users with the root client from the fixture, so the
 * same tests run against a real mongod --auth whose root credentials are in the URI.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/test-util.h"

static mongoc_client_t *admin;

static void
setup(void)
{
   admin = md_test_client(NULL, false);
   md_test_require_auth(admin);
}

static void
teardown(void)
{
   mongoc_client_destroy(admin);
}

TestSuite(auth, .init = setup, .fini = teardown, .timeout = 60);

/* createUser `name` in `db` with `roles` (JSON array) and `mechs` (JSON array or NULL). */
static void
create_user(const char *db, const char *name, const char *pwd, const char *roles, const char *mechs)
{
   char *json =
      bson_strdup_printf("{\"createUser\": \"%s\", \"pwd\": \"%s\", \"roles\": %s%s%s}", name, pwd,
                         roles, mechs ? ", \"mechanisms\": " : "", mechs ? mechs : "");
   bson_error_t error;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(cmd, "%s", error.message);
   cr_assert(md_test_try(admin, db, cmd, &error), "createUser %s: %s", name, error.message);
   bson_destroy(cmd);
   bson_free(json);
}

static void
drop_user(const char *db, const char *name)
{
   bson_t *cmd = BCON_NEW("dropUser", BCON_UTF8(name));
   bson_error_t error;
   cr_assert(md_test_try(admin, db, cmd, &error), "dropUser %s: %s", name, error.message);
   bson_destroy(cmd);
}

static bool
ping(mongoc_client_t *client, bson_error_t *error)
{
   bson_t *cmd = BCON_NEW("find", BCON_UTF8("auth_probe"), "limit", BCON_INT32(1));
   bool ok = md_test_try(client, "outbox_auth_test", cmd, error);
   bson_destroy(cmd);
   return ok;
}

static void
assert_login(const char *user, const char *pwd, const char *source, const char *mech)
{
   mongoc_client_t *c = md_test_client_as(user, pwd, source, mech);
   bson_error_t error;
   cr_assert(ping(c, &error), "%s as %s: %s", mech ? mech : "negotiated", user, error.message);
   mongoc_client_destroy(c);
}

static void
assert_login_fails(const char *user, const char *pwd, const char *source, const char *mech)
{
   mongoc_client_t *c = md_test_client_as(user, pwd, source, mech);
   bson_error_t error;
   cr_assert_not(ping(c, &error), "%s logged in with a wrong password", user);
   cr_assert_eq(error.domain, MONGOC_ERROR_CLIENT, "%u.%u %s", error.domain, error.code,
                error.message);
   cr_assert_eq(error.code, MONGOC_ERROR_CLIENT_AUTHENTICATE, "%s", error.message);
   cr_assert(strstr(error.message, "Authentication failed"), "%s", error.message);
   cr_assert_null(strstr(error.message, pwd), "the password is in: %s", error.message);
   mongoc_client_destroy(c);
}

Test(auth, scram_sha1_and_sha256)
{
   char *name = md_test_name("both");
   create_user("admin", name, "Pw-both-1", "[{\"role\": \"read\", \"db\": \"outbox_auth_test\"}]",
               NULL);
   assert_login(name, "Pw-both-1", "admin", "SCRAM-SHA-1");
   assert_login(name, "Pw-both-1", "admin", "SCRAM-SHA-256");
   assert_login(name, "Pw-both-1", "admin", NULL);
   drop_user("admin", name);
   bson_free(name);
}

Test(auth, wrong_password_and_unknown_user)
{
   char *name = md_test_name("wrong");
   create_user("outbox_auth_test", name, "Pw-right-2", "[\"read\"]", NULL);
   assert_login_fails(name, "Pw-WRONG-secret-2", "outbox_auth_test", "SCRAM-SHA-256");
   assert_login_fails(name, "Pw-WRONG-secret-2", "outbox_auth_test", "SCRAM-SHA-1");
   assert_login_fails(name, "Pw-right-2", "admin", "SCRAM-SHA-256"); /* not in admin */
   assert_login_fails("nobody_here", "Pw-WRONG-secret-2", "admin", NULL);
   assert_login(name, "Pw-right-2", "outbox_auth_test", NULL);
   drop_user("outbox_auth_test", name);
   bson_free(name);
}

static int64_t
status_counter(const char *path)
{
   bson_t *cmd = BCON_NEW("serverStatus", BCON_INT32(1));
   bson_t reply;
   bson_iter_t it;
   md_test_admin(admin, cmd, &reply);
   cr_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, path, &it), "no %s",
             path);
   int64_t n = bson_iter_as_int64(&it);
   bson_destroy(&reply);
   bson_destroy(cmd);
   return n;
}

/* mongoc 1.23 puts saslStart for SCRAM-SHA-256 into its first hello; the server answers it
 * there, which mongod counts as a successful speculative authentication. */
Test(auth, speculative_authentication)
{
   static const char *path =
      "security.authentication.mechanisms.SCRAM-SHA-256.speculativeAuthenticate.successful";
   char *name = md_test_name("spec");
   create_user("admin", name, "Pw-spec-3", "[{\"role\": \"read\", \"db\": \"outbox_auth_test\"}]",
               NULL);
   int64_t before = status_counter(path);
   assert_login(name, "Pw-spec-3", "admin", "SCRAM-SHA-256");
   cr_assert_gt(status_counter(path), before, "no speculative authentication was counted");
   drop_user("admin", name);
   bson_free(name);
}

/* SCRAM-SHA-256 SASLpreps the password (RFC 7677), SCRAM-SHA-1 does not: U+2168 ROMAN
 * NUMERAL NINE is "IX" after NFKC. */
Test(auth, saslprep)
{
   char *name = md_test_name("prep");
   create_user("admin", name, "IX", "[{\"role\": \"read\", \"db\": \"outbox_auth_test\"}]", NULL);
   assert_login(name, "\xE2\x85\xA8", "admin", "SCRAM-SHA-256");
   assert_login(name, "IX", "admin", "SCRAM-SHA-1");
   assert_login_fails(name, "\xE2\x85\xA8", "admin", "SCRAM-SHA-1");
   drop_user("admin", name);
   bson_free(name);
}

Test(auth, mechanisms_of_a_user)
{
   char *name = md_test_name("sha256only");
   create_user("admin", name, "Pw-mech-4", "[{\"role\": \"read\", \"db\": \"outbox_auth_test\"}]",
               "[\"SCRAM-SHA-256\"]");
   assert_login(name, "Pw-mech-4", "admin", "SCRAM-SHA-256");
   assert_login(name, "Pw-mech-4", "admin", NULL);
   assert_login_fails(name, "Pw-mech-4", "admin", "SCRAM-SHA-1");
   bson_t *cmd = BCON_NEW("usersInfo", "{", "user", BCON_UTF8(name), "db", BCON_UTF8("admin"), "}");
   bson_t reply;
   bson_error_t error;
   cr_assert(mongoc_client_command_simple(admin, "admin", cmd, NULL, &reply, &error), "%s",
             error.message);
   md_test_assert_json(&reply, "users.0.mechanisms", "[ \"SCRAM-SHA-256\" ]");
   md_test_assert_json(&reply, "users.0.roles",
                       "[ { \"role\" : \"read\", \"db\" : \"outbox_auth_test\" } ]");
   char *json = md_test_json(&reply);
   cr_assert_null(strstr(json, "Pw-mech-4"), "%s", json);
   cr_assert_null(strstr(json, "credentials"), "usersInfo shows credentials: %s", json);
   bson_free(json);
   bson_destroy(&reply);
   bson_destroy(cmd);
   drop_user("admin", name);
   bson_free(name);
}

Test(auth, update_and_drop_user)
{
   char *name = md_test_name("upd");
   create_user("admin", name, "Pw-old-5", "[{\"role\": \"read\", \"db\": \"outbox_auth_test\"}]",
               NULL);
   mongoc_client_t *before = md_test_client_as(name, "Pw-old-5", "admin", NULL);
   bson_error_t error;
   cr_assert(ping(before, &error), "%s", error.message);
   bson_t *cmd = BCON_NEW("updateUser", BCON_UTF8(name), "pwd", BCON_UTF8("Pw-new-5"));
   cr_assert(md_test_try(admin, "admin", cmd, &error), "%s", error.message);
   bson_destroy(cmd);
   assert_login_fails(name, "Pw-old-5", "admin", NULL);
   assert_login(name, "Pw-new-5", "admin", NULL);
   drop_user("admin", name);
   /* The dropped user's open connection loses its rights at once. */
   cr_assert_not(ping(before, &error), "a dropped user could still read");
   cr_assert_eq(error.code, 13, "%u %s", error.code, error.message);
   assert_login_fails(name, "Pw-new-5", "admin", NULL);
   cmd = BCON_NEW("dropUser", BCON_UTF8(name));
   cr_assert_not(md_test_try(admin, "admin", cmd, &error));
   cr_assert_eq(error.code, 11, "dropping a missing user: %u %s", error.code, error.message);
   bson_destroy(cmd);
   mongoc_client_destroy(before);
   bson_free(name);
}

Test(auth, create_user_errors)
{
   char *name = md_test_name("dup");
   bson_error_t error;
   create_user("outbox_auth_test", name, "Pw-dup-6", "[\"read\"]", NULL);
   bson_t *cmd =
      BCON_NEW("createUser", BCON_UTF8(name), "pwd", BCON_UTF8("Pw-dup-6"), "roles", "[", "]");
   cr_assert_not(md_test_try(admin, "outbox_auth_test", cmd, &error));
   cr_assert_eq(error.code, 51003, "%u %s", error.code, error.message);
   bson_destroy(cmd);
   cmd = BCON_NEW("createUser", BCON_UTF8("other"), "pwd", BCON_UTF8("Pw-x"), "roles", "[",
                  BCON_UTF8("root"), "]");
   cr_assert_not(md_test_try(admin, "outbox_auth_test", cmd, &error), "root@outbox_auth_test");
   cr_assert_eq(error.code, 31, "%u %s", error.code, error.message);
   cr_assert_null(strstr(error.message, "Pw-x"), "%s", error.message);
   bson_destroy(cmd);
   drop_user("outbox_auth_test", name);
   bson_free(name);
}
