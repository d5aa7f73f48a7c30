/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox against a server with authentication and TLS (with-servers --mongod-user ...
 * --mongod-tls): a read-only user's commits fail with mongoc's 13 passed through and change
 * nothing, a readWrite user's work, a wrong password and a wrong CA give clear errors and
 * write nothing, and no error message or mongoc log line carries a password. Users are made
 * by the fixture's root user, so this also runs against a real mongod --auth (TLS cases need
 * OUTBOX_TEST_TLS_DIR with the CA and a wrong CA).
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib-test.h"

#define PW_READ "Ro-pw-Zq81"
#define PW_WRITE "Rw-pw-Kd47"
#define PW_WRONG "Wrong-pw-Xu55"

static lt_t t;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static bson_string_t *log_text; /* every mongoc log line of the test */

static void
capture_log(mongoc_log_level_t level, const char *domain, const char *message, void *ctx)
{
   pthread_mutex_lock(&log_lock);
   bson_string_append_printf(log_text, "%s %s: %s\n", mongoc_log_level_str(level), domain, message);
   pthread_mutex_unlock(&log_lock);
}

static bool
server_has_root_auth(void)
{
   mongoc_client_t *c = mongoc_client_pool_pop(t.pool);
   bson_t *cmd = BCON_NEW("connectionStatus", BCON_INT32(1)), reply;
   bool ok = mongoc_client_command_simple(c, "admin", cmd, NULL, &reply, NULL);
   char *json = ok ? bson_as_relaxed_extended_json(&reply, NULL) : NULL;
   bool root = json && strstr(json, "{ \"role\" : \"root\", \"db\" : \"admin\" }");
   bson_free(json);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_pool_push(t.pool, c);
   return root;
}

static void
admin_command(const bson_t *cmd)
{
   mongoc_client_t *c = mongoc_client_pool_pop(t.pool);
   bson_error_t error;
   cr_assert(mongoc_client_command_simple(c, "admin", cmd, NULL, NULL, &error), "%s",
             error.message);
   mongoc_client_pool_push(t.pool, c);
}

static void
create_user(const char *name, const char *pwd, const char *role)
{
   bson_t *cmd = BCON_NEW("createUser", BCON_UTF8(name), "pwd", BCON_UTF8(pwd), "roles", "[", "{",
                          "role", BCON_UTF8(role), "db", BCON_UTF8(LT_DB), "}", "]");
   admin_command(cmd);
   bson_destroy(cmd);
}

static char user_read[80], user_write[80];

static void
setup(void)
{
   log_text = bson_string_new(NULL);
   mongoc_log_set_handler(capture_log, NULL);
   mongoc_log_trace_disable();
   lt_init(&t, "auth", NULL, NULL);
   lt_open(&t, NULL);
   if (!server_has_root_auth()) {
      lt_skip("needs a server with authentication and root credentials in "
              "OUTBOX_TEST_MONGODB_URI (with-servers --mongod-user NAME:PASSWORD:root)");
   }
   snprintf(user_read, sizeof user_read, "ro_%s", t.coll_name);
   snprintf(user_write, sizeof user_write, "rw_%s", t.coll_name);
   create_user(user_read, PW_READ, "read");
   create_user(user_write, PW_WRITE, "readWrite");
}

static void
teardown(void)
{
   if (user_read[0]) {
      bson_t *cmd = BCON_NEW("dropUser", BCON_UTF8(user_read));
      admin_command(cmd);
      bson_destroy(cmd);
      cmd = BCON_NEW("dropUser", BCON_UTF8(user_write));
      admin_command(cmd);
      bson_destroy(cmd);
   }
   lt_cleanup(&t);
   /* mongoc's own log lines must not carry a password either. */
   const char *pws[] = {PW_READ, PW_WRITE, PW_WRONG};
   for (int i = 0; i < 3; i++) {
      cr_assert_null(strstr(log_text->str, pws[i]), "a password in mongoc's log:\n%s",
                     log_text->str);
   }
   bson_string_free(log_text, true);
   mongoc_log_set_handler(mongoc_log_default_handler, NULL);
}

TestSuite(auth, .init = setup, .fini = teardown, .timeout = 60);

/* A pool on the fixture's server as `user` (in admin) with `password`; `ca` (may be NULL)
 * replaces tlsCAFile. */
static mongoc_client_pool_t *
pool_as(const char *user, const char *password, const char *ca)
{
   bson_error_t error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(getenv("OUTBOX_TEST_MONGODB_URI"), &error);
   cr_assert_not_null(uri, "%s", error.message);
   mongoc_uri_set_username(uri, user);
   mongoc_uri_set_password(uri, password);
   mongoc_uri_set_auth_source(uri, "admin");
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 2000);
   if (ca) {
      mongoc_uri_set_option_as_bool(uri, MONGOC_URI_TLS, true);
      mongoc_uri_set_option_as_utf8(uri, MONGOC_URI_TLSCAFILE, ca);
   }
   mongoc_client_pool_t *pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   mongoc_uri_destroy(uri);
   return pool;
}

static void
assert_no_password(const bson_error_t *error)
{
   cr_assert_null(strstr(error->message, PW_READ), "%s", error->message);
   cr_assert_null(strstr(error->message, PW_WRITE), "%s", error->message);
   cr_assert_null(strstr(error->message, PW_WRONG), "%s", error->message);
}

/* Tries to create entity `name` and to append to the existing entity "e" through `pool`. */
static bool
try_commits(mongoc_client_pool_t *pool, const char *name, bson_error_t *error)
{
   outbox_collection_t *coll = outbox_collection_new(pool, LT_DB, t.coll_name, NULL, error);
   cr_assert_not_null(coll, "%s", error->message);
   outbox_event_t *ev = outbox_event_new("t.appended", NULL);
   bson_value_t id = lt_str_id("e"), new_id = lt_str_id(name);
   bool appended = outbox_collection_append(coll, &id, &ev, 1, NULL, error);
   outbox_event_destroy(ev);
   bson_error_t create_error;
   ev = outbox_event_new("t.created", NULL);
   bool created = outbox_collection_create(coll, &new_id, NULL, &ev, 1, NULL, &create_error);
   outbox_event_destroy(ev);
   cr_assert_eq(appended, created, "append %d but create %d (%s)", appended, created,
                create_error.message);
   outbox_collection_destroy(coll);
   return appended;
}

/* Entity "e" with one event, written as root; returns its stored document. */
static bson_t *
seed(void)
{
   outbox_event_t *ev = outbox_event_new("t.created", NULL);
   bson_value_t id = lt_str_id("e");
   bson_error_t error;
   cr_assert(outbox_collection_create(t.coll, &id, NULL, &ev, 1, NULL, &error), "%s",
             error.message);
   outbox_event_destroy(ev);
   return lt_raw_get(&t, &id);
}

static void
assert_nothing_written(const bson_t *before, const char *new_name)
{
   bson_value_t id = lt_str_id("e"), new_id = lt_str_id(new_name);
   lt_assert_unchanged(&t, &id, before);
   bson_t *created = lt_raw_get(&t, &new_id);
   cr_assert_null(created, "entity %s was written", new_name);
}

Test(auth, read_only_user_cannot_commit)
{
   bson_t *before = seed();
   mongoc_client_pool_t *pool = pool_as(user_read, PW_READ, NULL);
   bson_error_t error;
   cr_assert_not(try_commits(pool, "by-reader", &error), "a read-only user committed");
   cr_assert_eq(error.domain, MONGOC_ERROR_SERVER, "%u.%u %s", error.domain, error.code,
                error.message);
   cr_assert_eq(error.code, 13, "%u %s", error.code, error.message);
   cr_assert(strstr(error.message, "not authorized on ") && strstr(error.message, LT_DB), "%s",
             error.message);
   assert_no_password(&error);
   assert_nothing_written(before, "by-reader");
   /* Reading is what the role allows. */
   outbox_collection_t *coll = outbox_collection_new(pool, LT_DB, t.coll_name, NULL, &error);
   bson_value_t id = lt_str_id("e");
   int64_t version = 0;
   cr_assert(outbox_collection_read(coll, &id, NULL, &version, &error), "%s", error.message);
   cr_assert_eq(version, 1);
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   bson_destroy(before);
}

Test(auth, read_write_user_commits)
{
   bson_t *before = seed();
   mongoc_client_pool_t *pool = pool_as(user_write, PW_WRITE, NULL);
   bson_error_t error;
   cr_assert(try_commits(pool, "by-writer", &error), "%s", error.message);
   bson_value_t id = lt_str_id("e");
   bson_t *after = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(after, "version"), 2);
   cr_assert_eq(lt_array_len(after, "events"), 2);
   bson_destroy(after);
   mongoc_client_pool_destroy(pool);
   bson_destroy(before);
}

Test(auth, wrong_password)
{
   bson_t *before = seed();
   mongoc_client_pool_t *pool = pool_as(user_write, PW_WRONG, NULL);
   bson_error_t error;
   cr_assert_not(try_commits(pool, "by-wrong", &error), "a wrong password committed");
   cr_assert_eq(error.domain, MONGOC_ERROR_CLIENT, "%u.%u %s", error.domain, error.code,
                error.message);
   cr_assert_eq(error.code, MONGOC_ERROR_CLIENT_AUTHENTICATE, "%s", error.message);
   cr_assert(strstr(error.message, "Authentication failed"), "%s", error.message);
   assert_no_password(&error);
   assert_nothing_written(before, "by-wrong");
   mongoc_client_pool_destroy(pool);
   bson_destroy(before);
}

/* TLS needs the fixture's certificates (or OUTBOX_TEST_TLS_DIR with ca.pem and wrong-ca.pem
 * for a real server) and a TLS URI. */
static const char *
tls_dir_or_skip(void)
{
   const char *dir = getenv("OUTBOX_TEST_TLS_DIR");
   const char *uri = getenv("OUTBOX_TEST_MONGODB_URI");
   if (!dir || !strstr(uri, "tls=true")) {
      lt_skip("needs a TLS server and OUTBOX_TEST_TLS_DIR with ca.pem and wrong-ca.pem "
              "(with-servers --mongod-tls)");
   }
   return dir;
}

Test(auth, tls_wrong_ca_and_right_ca)
{
   const char *dir = tls_dir_or_skip();
   char *wrong = bson_strdup_printf("%s/wrong-ca.pem", dir);
   char *right = bson_strdup_printf("%s/ca.pem", dir);
   bson_t *before = seed();
   bson_error_t error;
   mongoc_client_pool_t *pool = pool_as(user_write, PW_WRITE, wrong);
   cr_assert_not(try_commits(pool, "by-wrong-ca", &error), "committed through a wrong CA");
   cr_assert_eq(error.domain, MONGOC_ERROR_SERVER_SELECTION, "%u.%u %s", error.domain, error.code,
                error.message);
   cr_assert(strstr(error.message, "TLS handshake failed"), "%s", error.message);
   assert_no_password(&error);
   assert_nothing_written(before, "by-wrong-ca");
   mongoc_client_pool_destroy(pool);
   pool = pool_as(user_write, PW_WRITE, right);
   cr_assert(try_commits(pool, "by-right-ca", &error), "%s", error.message);
   mongoc_client_pool_destroy(pool);
   bson_free(wrong);
   bson_free(right);
   bson_destroy(before);
}
