/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Shared by the auth-*.c files only.
 */
#ifndef MD_AUTH_PRIVATE_H
#define MD_AUTH_PRIVATE_H

#include <bson/bson.h>

#include "auth/auth.h"

/* A built-in role: its actions on the database it is granted on (every database when
 * any_db) and on the cluster. */
typedef struct {
   const char *name;
   bool any_db;
   uint32_t db_actions;
   uint32_t cluster_actions;
} md_role_def_t;

/* The built-in role `role` as granted on `db`, or NULL if there is none (root@test). */
const md_role_def_t *md_role_find(const char *role, const char *db);

/* A command as mongod prints it in messages ({ find: "c", filter: {}, $db: "test" }), at most
 * about `max` characters, with passwords ("pwd") shown as "xxx" (bson_free it). */
char *md_auth_format_command(const bson_t *cmd, size_t max);

/* Sets 13 "not authorized on DB to execute command { ... }" and returns false. */
bool md_auth_not_authorized(const char *db, const bson_t *cmd, bson_error_t *error);

#endif
