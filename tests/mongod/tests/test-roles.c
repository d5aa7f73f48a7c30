/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Authorization against test-mongod --auth (mongo-c-driver as the client; the meson test runs
 * it over TLS): which built-in role may run which command, and 13 Unauthorized with mongod's
 * messages otherwise. Users are created per test by the fixture's root user, so the tests
 * also run against a real mongod --auth with root credentials in the URI.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/test-util.h"

#define DB "outbox_roles_test"

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

TestSuite(roles, .init = setup, .fini = teardown, .timeout = 60);

/* A user with one role, in admin, and a client logged in as it. */
static mongoc_client_t *
user_with(const char *role, const char *db, char **name_out)
{
   char *name = md_test_name(role);
   bson_t *cmd = BCON_NEW("createUser", BCON_UTF8(name), "pwd", BCON_UTF8("Pw-roles-1"), "roles",
                          "[", "{", "role", BCON_UTF8(role), "db", BCON_UTF8(db), "}", "]");
   bson_error_t error;
   cr_assert(md_test_try(admin, "admin", cmd, &error), "createUser: %s", error.message);
   bson_destroy(cmd);
   *name_out = name;
   return md_test_client_as(name, "Pw-roles-1", "admin", NULL);
}

static void
done_with(mongoc_client_t *client, char *name)
{
   mongoc_client_destroy(client);
   bson_t *cmd = BCON_NEW("dropUser", BCON_UTF8(name));
   md_test_admin(admin, cmd, NULL);
   bson_destroy(cmd);
   bson_free(name);
}

static bool
run_json(mongoc_client_t *client, const char *db, const char *json, bson_error_t *error)
{
   bson_error_t parse;
   bson_t *cmd = bson_new_from_json((const uint8_t *)json, -1, &parse);
   cr_assert_not_null(cmd, "%s: %s", json, parse.message);
   bool ok = md_test_try(client, db, cmd, error);
   bson_destroy(cmd);
   return ok;
}

static void
allowed(mongoc_client_t *client, const char *db, const char *json)
{
   bson_error_t error;
   cr_assert(run_json(client, db, json, &error), "%s refused: %s", json, error.message);
}

/* 13, and for a logged-in user "not authorized on DB to execute command { NAME: ...". */
static void
refused(mongoc_client_t *client, const char *db, const char *json, const char *name)
{
   bson_error_t error;
   cr_assert_not(run_json(client, db, json, &error), "%s was allowed", json);
   cr_assert_eq(error.code, 13, "%s: %u %s", json, error.code, error.message);
   char *want = bson_strdup_printf("not authorized on %s to execute command { %s: ", db, name);
   cr_assert(strncmp(error.message, want, strlen(want)) == 0, "%s: %s", json, error.message);
   bson_free(want);
}

static void
seed(void)
{
   allowed(admin, DB, "{\"insert\": \"c\", \"documents\": [{\"seed\": 1}]}");
}

Test(roles, unauthenticated)
{
   mongoc_client_t *anon = md_test_client_as(NULL, NULL, NULL, NULL);
   bson_error_t error;
   allowed(anon, "admin", "{\"ping\": 1}");
   allowed(anon, "admin", "{\"buildInfo\": 1}");
   allowed(anon, "admin", "{\"hello\": 1}");
   cr_assert_not(run_json(anon, DB, "{\"find\": \"c\"}", &error));
   cr_assert_eq(error.code, 13, "%u %s", error.code, error.message);
   cr_assert_str_eq(error.message, "command find requires authentication");
   cr_assert_not(run_json(anon, DB, "{\"insert\": \"c\", \"documents\": [{}]}", &error));
   cr_assert_str_eq(error.message, "command insert requires authentication");
   cr_assert_not(run_json(anon, DB, "{\"noSuchCommand\": 1}", &error));
   cr_assert_eq(error.code, 59, "an unknown command is 59 before authorization: %s", error.message);
   mongoc_client_destroy(anon);
}

Test(roles, read)
{
   char *name;
   mongoc_client_t *c = user_with("read", DB, &name);
   seed();
   allowed(c, DB, "{\"find\": \"c\"}");
   allowed(c, DB, "{\"count\": \"c\"}");
   allowed(c, DB, "{\"listCollections\": 1}");
   allowed(c, DB, "{\"listIndexes\": \"c\"}");
   allowed(c, DB,
           "{\"aggregate\": \"c\", \"pipeline\": [{\"$changeStream\": {}}], "
           "\"cursor\": {}}");
   refused(c, DB, "{\"insert\": \"c\", \"documents\": [{\"x\": 1}]}", "insert");
   refused(c, DB, "{\"update\": \"c\", \"updates\": [{\"q\": {}, \"u\": {\"$set\": {\"y\": 1}}}]}",
           "update");
   refused(c, DB, "{\"delete\": \"c\", \"deletes\": [{\"q\": {}, \"limit\": 0}]}", "delete");
   refused(c, DB, "{\"findAndModify\": \"c\", \"query\": {}, \"update\": {\"$set\": {\"y\": 1}}}",
           "findAndModify");
   refused(c, DB,
           "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"y\": 1}, \"name\": "
           "\"y_1\"}]}",
           "createIndexes");
   refused(c, "other_db", "{\"find\": \"c\"}", "find");
   done_with(c, name);
}

Test(roles, read_write)
{
   char *name;
   mongoc_client_t *c = user_with("readWrite", DB, &name);
   allowed(c, DB, "{\"insert\": \"rw\", \"documents\": [{\"_id\": 1}]}");
   allowed(c, DB,
           "{\"update\": \"rw\", \"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": "
           "{\"y\": 1}}, \"upsert\": true}]}");
   allowed(c, DB, "{\"findAndModify\": \"rw\", \"query\": {\"_id\": 1}, \"remove\": true}");
   allowed(c, DB,
           "{\"createIndexes\": \"rw\", \"indexes\": [{\"key\": {\"y\": 1}, \"name\": "
           "\"y_1\"}]}");
   allowed(c, DB, "{\"drop\": \"rw\"}");
   refused(c, DB, "{\"collMod\": \"c\"}", "collMod");
   refused(c, DB, "{\"dropDatabase\": 1}", "dropDatabase");
   refused(c, DB, "{\"createUser\": \"x\", \"pwd\": \"Pw-never-shown\", \"roles\": []}",
           "createUser");
   refused(c, "admin", "{\"configureFailPoint\": \"failCommand\", \"mode\": \"off\"}",
           "configureFailPoint");
   refused(c, "admin", "{\"serverStatus\": 1}", "serverStatus");
   done_with(c, name);
}

/* The password of a refused createUser is not echoed in the message. */
Test(roles, refused_create_user_hides_password)
{
   char *name;
   mongoc_client_t *c = user_with("read", DB, &name);
   bson_error_t error;
   cr_assert_not(run_json(c, DB,
                          "{\"createUser\": \"x\", \"pwd\": \"Pw-never-shown\", "
                          "\"roles\": []}",
                          &error));
   cr_assert_eq(error.code, 13, "%s", error.message);
   cr_assert_null(strstr(error.message, "Pw-never-shown"), "%s", error.message);
   done_with(c, name);
}

Test(roles, db_admin_and_user_admin)
{
   char *name1, *name2;
   mongoc_client_t *dba = user_with("dbAdmin", DB, &name1);
   mongoc_client_t *ua = user_with("userAdmin", DB, &name2);
   seed();
   allowed(dba, DB,
           "{\"createIndexes\": \"c\", \"indexes\": [{\"key\": {\"z\": 1}, \"name\": "
           "\"z_1\"}]}");
   allowed(dba, DB, "{\"listCollections\": 1}");
   refused(dba, DB, "{\"find\": \"c\"}", "find");
   refused(dba, DB,
           "{\"aggregate\": \"c\", \"pipeline\": [{\"$changeStream\": {}}], "
           "\"cursor\": {}}",
           "aggregate");
   allowed(ua, DB, "{\"createUser\": \"made_by_ua\", \"pwd\": \"Pw-ua\", \"roles\": [\"read\"]}");
   allowed(ua, DB, "{\"usersInfo\": 1}");
   allowed(ua, DB, "{\"dropUser\": \"made_by_ua\"}");
   refused(ua, DB, "{\"find\": \"c\"}", "find");
   done_with(dba, name1);
   done_with(ua, name2);
}

Test(roles, any_database)
{
   char *name;
   mongoc_client_t *c = user_with("readAnyDatabase", "admin", &name);
   seed();
   allowed(c, DB, "{\"find\": \"c\"}");
   allowed(c, "another_db", "{\"find\": \"c\"}");
   allowed(c, "admin", "{\"listDatabases\": 1}");
   allowed(c, "admin",
           "{\"aggregate\": 1, \"pipeline\": [{\"$changeStream\": "
           "{\"allChangesForCluster\": true}}], \"cursor\": {}}");
   refused(c, DB, "{\"insert\": \"c\", \"documents\": [{}]}", "insert");
   done_with(c, name);
}

/* A read user on one database cannot open a change stream on the whole cluster. */
Test(roles, cluster_stream_needs_any_database)
{
   char *name;
   mongoc_client_t *c = user_with("read", DB, &name);
   refused(c, "admin",
           "{\"aggregate\": 1, \"pipeline\": [{\"$changeStream\": "
           "{\"allChangesForCluster\": true}}], \"cursor\": {}}",
           "aggregate");
   done_with(c, name);
}
