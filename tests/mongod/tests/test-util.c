/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers shared by the test server's mongoc tests: clients from the fixture's URI
 * (OUTBOX_TEST_MONGODB_URI), as a user or not, unique names, admin commands, turning fail
 * points off, and JSON assertions on replies.
 */
#include "tests/test-util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

mongoc_client_t *
md_test_client(const char *app_name, bool replica_set)
{
   const char *env = getenv("OUTBOX_TEST_MONGODB_URI");
   cr_assert_not_null(env, "OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)");
   mongoc_init();
   char *uri_str = bson_strdup(env);
   if (replica_set) {
      char *q = strstr(uri_str, "directConnection=true");
      if (q) {
         char *fixed = bson_strdup_printf("%.*sreplicaSet=rs0%s", (int)(q - uri_str), uri_str,
                                          q + strlen("directConnection=true"));
         bson_free(uri_str);
         uri_str = fixed;
      }
   }
   bson_error_t error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_str, &error);
   cr_assert_not_null(uri, "bad URI %s: %s", uri_str, error.message);
   if (app_name) {
      mongoc_uri_set_appname(uri, app_name);
   }
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 5000);
   mongoc_client_t *client = mongoc_client_new_from_uri(uri);
   cr_assert_not_null(client);
   mongoc_client_set_error_api(client, 2);
   mongoc_uri_destroy(uri);
   bson_free(uri_str);
   return client;
}

char *
md_test_name(const char *prefix)
{
   static int counter;
   return bson_strdup_printf("%s_%d_%d", prefix, (int)getpid(), ++counter);
}

void
md_test_admin(mongoc_client_t *client, const bson_t *cmd, bson_t *reply)
{
   bson_error_t error;
   bson_t local;
   bool ok =
      mongoc_client_command_simple(client, "admin", cmd, NULL, reply ? reply : &local, &error);
   if (!reply) {
      bson_destroy(&local);
   }
   cr_assert(ok, "admin command failed: %s", error.message);
}

void
md_test_failpoint_off(mongoc_client_t *client, const char *name)
{
   bson_t *cmd = BCON_NEW("configureFailPoint", BCON_UTF8(name), "mode", BCON_UTF8("off"));
   md_test_admin(client, cmd, NULL);
   bson_destroy(cmd);
}

char *
md_test_json(const bson_t *doc)
{
   return bson_as_relaxed_extended_json(doc, NULL);
}

void
md_test_assert_json(const bson_t *doc, const char *path, const char *json)
{
   bson_iter_t it;
   char *all = md_test_json(doc);
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it), "no %s in %s",
             path, all);
   bson_t one = BSON_INITIALIZER;
   bson_append_value(&one, "v", 1, bson_iter_value(&it));
   char *got = md_test_json(&one);
   char *want = bson_strdup_printf("{ \"v\" : %s }", json);
   cr_assert_str_eq(got, want, "%s in %s", path, all);
   bson_free(want);
   bson_free(got);
   bson_destroy(&one);
   bson_free(all);
}

/* OUTBOX_TEST_MONGODB_URI without its credentials and authSource. */
static char *
uri_without_credentials(const char *env)
{
   const char *scheme = strstr(env, "://"), *at = strchr(env, '@'), *slash;
   scheme = scheme ? scheme + 3 : env;
   slash = strchr(scheme, '/');
   bson_string_t *s = bson_string_new(NULL);
   if (at && (!slash || at < slash)) {
      bson_string_append_printf(s, "%.*s%s", (int)(scheme - env), env, at + 1);
   } else {
      bson_string_append(s, env);
   }
   char *src = strstr(s->str, "authSource=");
   if (src) {
      char *end = strchr(src, '&');
      if (end) {
         memmove(src, end + 1, strlen(end + 1) + 1);
      } else {
         *src = '\0';
         if (src[-1] == '&') {
            src[-1] = '\0';
         }
      }
   }
   return bson_string_free(s, false);
}

mongoc_client_t *
md_test_client_as(const char *user, const char *password, const char *source, const char *mechanism)
{
   const char *env = getenv("OUTBOX_TEST_MONGODB_URI");
   cr_assert_not_null(env, "OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)");
   bson_error_t error;
   char *text = uri_without_credentials(env);
   mongoc_uri_t *uri = mongoc_uri_new_with_error(text, &error);
   cr_assert_not_null(uri, "bad URI: %s", error.message);
   bson_free(text);
   if (user) {
      mongoc_uri_set_username(uri, user);
      mongoc_uri_set_password(uri, password);
      mongoc_uri_set_auth_source(uri, source);
      if (mechanism) {
         mongoc_uri_set_auth_mechanism(uri, mechanism);
      }
   }
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, 5000);
   mongoc_client_t *client = mongoc_client_new_from_uri_with_error(uri, &error);
   cr_assert_not_null(client, "client: %s", error.message);
   mongoc_client_set_error_api(client, 2);
   mongoc_uri_destroy(uri);
   return client;
}

bool
md_test_try(mongoc_client_t *client, const char *db, const bson_t *cmd, bson_error_t *error)
{
   return mongoc_client_command_simple(client, db, cmd, NULL, NULL, error);
}

void
md_test_require_auth(mongoc_client_t *admin)
{
   bson_t *cmd = BCON_NEW("connectionStatus", BCON_INT32(1));
   bson_t reply;
   bson_error_t error;
   bool ok = mongoc_client_command_simple(admin, "admin", cmd, NULL, &reply, &error);
   char *json = ok ? bson_as_relaxed_extended_json(&reply, NULL) : NULL;
   bool root = json && strstr(json, "{ \"role\" : \"root\", \"db\" : \"admin\" }");
   bson_free(json);
   bson_destroy(&reply);
   bson_destroy(cmd);
   if (!root) {
      cr_skip_test("needs a server with authentication and root credentials in "
                   "OUTBOX_TEST_MONGODB_URI (with-servers --mongod-user NAME:PASSWORD:root)");
   }
}
