/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Authentication and authorization as mongod 6.0 does them with --auth: users with SCRAM
 * credentials and built-in roles, SCRAM-SHA-1/SCRAM-SHA-256 conversations (saslStart,
 * saslContinue, speculative authentication in hello), and a privilege check before every
 * command (13 Unauthorized). The user table (md_users_t) lives in the server and is guarded
 * by the server lock; a connection's state (md_auth_conn_t) belongs to its thread and is only
 * touched while that thread runs a command (also under the lock).
 */
#ifndef MD_AUTH_H
#define MD_AUTH_H

#include <bson/bson.h>

#include "auth/auth-crypto.h"

/* Actions (MongoDB's privilege actions that test-mongod's commands need), as bits. */
enum {
   MD_ACT_FIND = 1u << 0,
   MD_ACT_INSERT = 1u << 1,
   MD_ACT_UPDATE = 1u << 2,
   MD_ACT_REMOVE = 1u << 3,
   MD_ACT_CHANGE_STREAM = 1u << 4,
   MD_ACT_CREATE_COLLECTION = 1u << 5,
   MD_ACT_CREATE_INDEX = 1u << 6,
   MD_ACT_DROP_COLLECTION = 1u << 7,
   MD_ACT_DROP_INDEX = 1u << 8,
   MD_ACT_LIST_COLLECTIONS = 1u << 9,
   MD_ACT_LIST_INDEXES = 1u << 10,
   MD_ACT_COLL_MOD = 1u << 11,
   MD_ACT_DROP_DATABASE = 1u << 12,
   MD_ACT_RENAME_SAME_DB = 1u << 13,
   MD_ACT_KILL_CURSORS = 1u << 14,
   MD_ACT_CREATE_USER = 1u << 15,
   MD_ACT_DROP_USER = 1u << 16,
   MD_ACT_CHANGE_PASSWORD = 1u << 17, /* also grantRole/revokeRole/changeCustomData */
   MD_ACT_VIEW_USER = 1u << 18,
   /* Cluster actions. */
   MD_ACT_LIST_DATABASES = 1u << 19,
   MD_ACT_SERVER_STATUS = 1u << 20, /* serverStatus, replSetGetStatus, hostInfo ... */
   MD_ACT_FAIL_POINT = 1u << 21,    /* configureFailPoint (test command) */
   MD_ACT_KILL_ANY_SESSION = 1u << 22,
   MD_ACT_BYPASS_VALIDATION = 1u << 23, /* bypassDocumentValidation on insert/update/fam */
   MD_ACT_REPL_STATE_CHANGE = 1u << 24, /* replSetStepDown/StepUp/Freeze (clusterManager) */
};

typedef struct {
   char *role;
   char *db;
} md_role_ref_t;

typedef struct _md_user_t {
   char *db; /* the authentication database */
   char *name;
   md_role_ref_t *roles;
   size_t n_roles;
   md_scram_cred_t creds[2]; /* indexed by md_scram_mech_t */
   uint8_t user_id[16];      /* a UUID, as usersInfo shows it */
   struct _md_user_t *next;
} md_user_t;

typedef struct {
   int64_t received, successful;
} md_auth_counter_t;

typedef struct {
   bool enabled; /* --auth */
   md_user_t *head;
   /* serverStatus security.authentication.mechanisms, per md_scram_mech_t. */
   md_auth_counter_t authenticate[2], speculative[2];
} md_users_t;

/* A connection's authentication: the user it is authenticated as and a SCRAM conversation in
 * progress. */
typedef struct {
   char *user_db, *user_name; /* NULL: not authenticated */
   int step;                  /* 0: no conversation; 1: server-first sent; 2: final sent */
   md_scram_mech_t mech;
   char *conv_db, *conv_user;
   char *client_first_bare, *server_first, *nonce;
   bool skip_empty_exchange;
   bool speculative; /* the conversation began in hello */
   bool loopback;    /* connected from a loopback address (for the localhost exception) */
} md_auth_conn_t;

void md_users_init(md_users_t *users, bool enabled);
void md_users_destroy(md_users_t *users);

/* Adds a user from a start-up spec NAME:PASSWORD:ROLE[@DB][,ROLE[@DB]]... (the user is
 * created in DB of its first role, "admin" without one). False with a message on a bad
 * spec. */
bool md_users_add_spec(md_users_t *users, const char *spec, bson_error_t *error);

md_user_t *md_users_find(const md_users_t *users, const char *db, const char *name);

/* Frees a connection's authentication state. */
void md_auth_conn_cleanup(md_auth_conn_t *ac);
/* Forgets a conversation in progress (after a failure or once it is done). */
void md_auth_conn_end_conversation(md_auth_conn_t *ac);

#endif
