/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The command side of authentication (see auth.h): the check every command passes before it
 * runs, the authentication commands, the user-management commands and what hello adds
 * (speculativeAuthenticate, saslSupportedMechs). All run with the server lock held.
 */
#ifndef MD_AUTH_CMD_H
#define MD_AUTH_CMD_H

#include "commands/commands.h"

/* Whether the connection may run the command: true, or false with 13 Unauthorized and
 * MongoDB 6.0's message ("command find requires authentication" when not authenticated,
 * "not authorized on DB to execute command { ... }" when the user lacks a privilege). Always
 * true without --auth, and for everyone while the localhost exception holds (no user exists
 * and the client connected over loopback). */
bool md_auth_check(md_cmd_t *c, bson_error_t *error);

/* Adds speculativeAuthenticate and saslSupportedMechs to a hello reply when asked. */
void md_auth_hello(md_cmd_t *c);

/* Appends security.authentication.mechanisms counters to a serverStatus reply. */
void md_auth_append_server_status(md_cmd_t *c);

/* Whether the connection holds `actions` on database `db` (NULL: the cluster). */
bool md_auth_allowed(const md_cmd_t *c, const char *db, uint32_t actions);

/* The roles of the connection's user as [{role, db}] (empty when unauthenticated). */
void md_auth_append_status(md_cmd_t *c, bson_t *auth_info);

bool md_cmd_sasl_start(md_cmd_t *c, bson_error_t *error);
bool md_cmd_sasl_continue(md_cmd_t *c, bson_error_t *error);
bool md_cmd_authenticate(md_cmd_t *c, bson_error_t *error);
bool md_cmd_logout(md_cmd_t *c, bson_error_t *error);
bool md_cmd_create_user(md_cmd_t *c, bson_error_t *error);
bool md_cmd_update_user(md_cmd_t *c, bson_error_t *error);
bool md_cmd_drop_user(md_cmd_t *c, bson_error_t *error);
bool md_cmd_users_info(md_cmd_t *c, bson_error_t *error);

#endif
