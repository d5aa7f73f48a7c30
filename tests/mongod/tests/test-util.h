/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers for the C integration tests of test-mongod (mongo-c-driver as the client). The
 * server comes from tests/fixtures/with-servers through OUTBOX_TEST_MONGODB_URI, so the same
 * tests run against a real `mongod --replSet rs0 --setParameter enableTestCommands=1`.
 */
#ifndef MD_TEST_UTIL_H
#define MD_TEST_UTIL_H

#include <mongoc/mongoc.h>

/* A client for OUTBOX_TEST_MONGODB_URI (aborts the test if unset), error API 2, with
 * `app_name` (may be NULL) so fail points can target it. Destroy with
 * mongoc_client_destroy. `replica_set`: connect with replicaSet=rs0 instead of
 * directConnection=true. */
mongoc_client_t *md_test_client(const char *app_name, bool replica_set);

/* A client for OUTBOX_TEST_MONGODB_URI with other credentials: `user` and `password` in
 * database `source` (user NULL: no credentials at all), `mechanism` NULL to let the driver
 * negotiate. Error API 2; destroy with mongoc_client_destroy. */
mongoc_client_t *md_test_client_as(const char *user, const char *password, const char *source,
                                   const char *mechanism);

/* Skips the test unless the server enforces authentication and `admin` (a client for
 * OUTBOX_TEST_MONGODB_URI) holds root (with-servers --mongod-user NAME:PASSWORD:root, or a
 * real mongod --auth with root credentials in the URI). */
void md_test_require_auth(mongoc_client_t *admin);

/* Runs `cmd` on `db` and returns false with `error` filled on failure. */
bool md_test_try(mongoc_client_t *client, const char *db, const bson_t *cmd, bson_error_t *error);

/* A collection name unique to this process and call, e.g. "crud_1234_7". */
char *md_test_name(const char *prefix);

/* Runs a command on admin and asserts success; the reply is returned (caller destroys). */
void md_test_admin(mongoc_client_t *client, const bson_t *cmd, bson_t *reply);

/* Turns failCommand off. */
void md_test_failpoint_off(mongoc_client_t *client, const char *name);

/* Asserts that `doc` at dotted `path` holds a value whose relaxed JSON is `json`. */
void md_test_assert_json(const bson_t *doc, const char *path, const char *json);

/* Relaxed extended JSON of `doc`, for messages (caller bson_free). */
char *md_test_json(const bson_t *doc);

#endif
