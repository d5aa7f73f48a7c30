/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "test-util.h"

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
         char *fixed = bson_strdup_printf("%.*sreplicaSet=rs0%s", (int) (q - uri_str), uri_str,
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
   return bson_strdup_printf("%s_%d_%d", prefix, (int) getpid(), ++counter);
}

void
md_test_admin(mongoc_client_t *client, const bson_t *cmd, bson_t *reply)
{
   bson_error_t error;
   bson_t local;
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, reply ? reply : &local,
                                          &error);
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
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, path, &it),
             "no %s in %s", path, all);
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
