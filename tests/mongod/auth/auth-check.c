/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Authorization: MongoDB's built-in roles as sets of actions, which actions each command
 * needs, and the check (with mongod 6.0's messages) that runs before every known command.
 * Roles are per database (or any database, for the *AnyDatabase roles and root); the
 * collection-level resources of custom roles are not modelled. Runs under the server lock.
 */
#include <string.h>

#include "auth/auth-cmd.h"
#include "auth/auth-private.h"

#define READ_ACTS                                                                                  \
   (MD_ACT_FIND | MD_ACT_LIST_COLLECTIONS | MD_ACT_LIST_INDEXES | MD_ACT_CHANGE_STREAM |           \
    MD_ACT_KILL_CURSORS)
#define READ_WRITE_ACTS                                                                            \
   (READ_ACTS | MD_ACT_INSERT | MD_ACT_UPDATE | MD_ACT_REMOVE | MD_ACT_CREATE_COLLECTION |         \
    MD_ACT_CREATE_INDEX | MD_ACT_DROP_COLLECTION | MD_ACT_DROP_INDEX | MD_ACT_RENAME_SAME_DB)
#define DB_ADMIN_ACTS                                                                              \
   (MD_ACT_COLL_MOD | MD_ACT_CREATE_COLLECTION | MD_ACT_CREATE_INDEX | MD_ACT_DROP_COLLECTION |    \
    MD_ACT_DROP_DATABASE | MD_ACT_DROP_INDEX | MD_ACT_LIST_COLLECTIONS | MD_ACT_LIST_INDEXES |     \
    MD_ACT_RENAME_SAME_DB | MD_ACT_BYPASS_VALIDATION)
#define USER_ADMIN_ACTS                                                                            \
   (MD_ACT_CREATE_USER | MD_ACT_DROP_USER | MD_ACT_CHANGE_PASSWORD | MD_ACT_VIEW_USER)
#define CLUSTER_ACTS                                                                               \
   (MD_ACT_LIST_DATABASES | MD_ACT_SERVER_STATUS | MD_ACT_FAIL_POINT | MD_ACT_KILL_ANY_SESSION |   \
    MD_ACT_REPL_STATE_CHANGE)

/* The built-in roles (MongoDB manual, "Built-In Roles"), reduced to the actions above. */
static const md_role_def_t roles[] = {
   {"read", false, READ_ACTS, 0},
   {"readWrite", false, READ_WRITE_ACTS, 0},
   {"dbAdmin", false, DB_ADMIN_ACTS, 0},
   {"userAdmin", false, USER_ADMIN_ACTS, 0},
   {"dbOwner", false, READ_WRITE_ACTS | DB_ADMIN_ACTS | USER_ADMIN_ACTS, 0},
   {"readAnyDatabase", true, READ_ACTS, MD_ACT_LIST_DATABASES},
   {"readWriteAnyDatabase", true, READ_WRITE_ACTS, MD_ACT_LIST_DATABASES},
   {"dbAdminAnyDatabase", true, DB_ADMIN_ACTS, MD_ACT_LIST_DATABASES},
   {"userAdminAnyDatabase", true, USER_ADMIN_ACTS, MD_ACT_LIST_DATABASES},
   {"clusterMonitor", true, 0, MD_ACT_LIST_DATABASES | MD_ACT_SERVER_STATUS},
   {"root", true, READ_WRITE_ACTS | DB_ADMIN_ACTS | USER_ADMIN_ACTS, CLUSTER_ACTS},
   {NULL, false, 0, 0},
};

const md_role_def_t *
md_role_find(const char *role, const char *db)
{
   for (int i = 0; roles[i].name; i++) {
      /* The AnyDatabase roles, clusterMonitor and root exist in admin only. */
      if (strcmp(roles[i].name, role) == 0 && (!roles[i].any_db || strcmp(db, "admin") == 0)) {
         return &roles[i];
      }
   }
   return NULL;
}

/* The user the connection is authenticated as, if it still exists (dropUser ends it). */
static const md_user_t *
current_user(const md_cmd_t *c)
{
   const md_auth_conn_t *ac = &c->conn->auth;
   return ac->user_name ? md_users_find(&c->srv->users, ac->user_db, ac->user_name) : NULL;
}

/* No user exists yet and the client is local: mongod 6.0 lets it do anything (the localhost
 * exception; 7.0 narrowed it to creating the first user). */
static bool
localhost_exception(const md_cmd_t *c)
{
   return !c->srv->users.head && c->conn->auth.loopback;
}

bool
md_auth_allowed(const md_cmd_t *c, const char *db, uint32_t actions)
{
   if (!c->srv->users.enabled || localhost_exception(c)) {
      return true;
   }
   const md_user_t *u = current_user(c);
   uint32_t held = 0;
   for (size_t i = 0; u && i < u->n_roles; i++) {
      const md_role_def_t *def = md_role_find(u->roles[i].role, u->roles[i].db);
      if (!def) {
         continue;
      }
      if (!db) {
         held |= def->cluster_actions;
      } else if (def->any_db || strcmp(u->roles[i].db, db) == 0) {
         held |= def->db_actions;
      }
   }
   return (held & actions) == actions;
}

/* What a command needs. `db` NULL with actions: cluster actions; actions 0 with
 * `needs_auth`: any authenticated user; `any_db`: on every database (cluster-wide streams). */
typedef struct {
   bool needs_auth;
   const char *db;
   uint32_t actions;
   bool any_db;
   const char *db2; /* a second database and its actions (renameCollection across them) */
   uint32_t actions2;
} need_t;

static const char *const no_auth_commands[] = {"hello",
                                               "isMaster",
                                               "ismaster",
                                               "ping",
                                               "buildInfo",
                                               "buildinfo",
                                               "saslStart",
                                               "saslContinue",
                                               "authenticate",
                                               "logout",
                                               "endSessions",
                                               "whatsmyuri",
                                               "connectionStatus",
                                               NULL};

static bool
is_no_auth(const char *name)
{
   for (int i = 0; no_auth_commands[i]; i++) {
      if (strcmp(no_auth_commands[i], name) == 0) {
         return true;
      }
   }
   return false;
}

static bool
array_has_true(const bson_t *cmd, const char *array, const char *field)
{
   bson_iter_t it, el, f;
   if (!bson_iter_init_find(&it, cmd, array) || !BSON_ITER_HOLDS_ARRAY(&it) ||
       !bson_iter_recurse(&it, &el)) {
      return false;
   }
   while (bson_iter_next(&el)) {
      if (BSON_ITER_HOLDS_DOCUMENT(&el) && bson_iter_recurse(&el, &f) &&
          bson_iter_find(&f, field) && bson_iter_as_bool(&f)) {
         return true;
      }
   }
   return false;
}

static bool
field_true(const bson_t *cmd, const char *field)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, cmd, field) && bson_iter_as_bool(&it);
}

/* aggregate: a change stream needs find and changeStream (on every database for
 * allChangesForCluster), other pipelines find. */
static void
aggregate_needs(const md_cmd_t *c, need_t *n)
{
   bson_iter_t it, stage, cs;
   n->actions = MD_ACT_FIND;
   if (bson_iter_init_find(&it, c->cmd, "pipeline") && BSON_ITER_HOLDS_ARRAY(&it) &&
       bson_iter_recurse(&it, &stage) && bson_iter_next(&stage) &&
       BSON_ITER_HOLDS_DOCUMENT(&stage) && bson_iter_recurse(&stage, &cs) &&
       bson_iter_find(&cs, "$changeStream")) {
      n->actions |= MD_ACT_CHANGE_STREAM;
      bson_iter_t opts;
      if (BSON_ITER_HOLDS_DOCUMENT(&cs) && bson_iter_recurse(&cs, &opts) &&
          bson_iter_find(&opts, "allChangesForCluster") && bson_iter_as_bool(&opts)) {
         n->any_db = true;
      }
   }
}

/* renameCollection {renameCollection: "a.x", to: "b.y"}: within a database it needs
 * renameCollectionSameDB; across databases find and dropCollection on the source and insert
 * and createIndex on the target. */
static void
rename_needs(const md_cmd_t *c, need_t *n, char *src_db, char *dst_db, size_t len)
{
   bson_iter_t it;
   const char *from =
      bson_iter_init_find(&it, c->cmd, "renameCollection") && BSON_ITER_HOLDS_UTF8(&it)
         ? bson_iter_utf8(&it, NULL)
         : "";
   const char *to = bson_iter_init_find(&it, c->cmd, "to") && BSON_ITER_HOLDS_UTF8(&it)
                       ? bson_iter_utf8(&it, NULL)
                       : "";
   const char *d1 = strchr(from, '.'), *d2 = strchr(to, '.');
   bson_strncpy(src_db, from, d1 && (size_t)(d1 - from) < len ? (size_t)(d1 - from) + 1 : len);
   bson_strncpy(dst_db, to, d2 && (size_t)(d2 - to) < len ? (size_t)(d2 - to) + 1 : len);
   n->db = src_db;
   if (strcmp(src_db, dst_db) == 0) {
      n->actions = MD_ACT_RENAME_SAME_DB;
   } else {
      n->actions = MD_ACT_FIND | MD_ACT_DROP_COLLECTION;
      n->db2 = dst_db;
      n->actions2 = MD_ACT_INSERT | MD_ACT_CREATE_INDEX;
   }
}

static const struct {
   const char *name;
   uint32_t actions;
   bool cluster;
} simple_needs[] = {
   {"find", MD_ACT_FIND, false},
   {"count", MD_ACT_FIND, false},
   {"distinct", MD_ACT_FIND, false},
   {"insert", MD_ACT_INSERT, false},
   {"delete", MD_ACT_REMOVE, false},
   {"drop", MD_ACT_DROP_COLLECTION, false},
   {"dropDatabase", MD_ACT_DROP_DATABASE, false},
   {"createIndexes", MD_ACT_CREATE_INDEX, false},
   {"dropIndexes", MD_ACT_DROP_INDEX, false},
   {"deleteIndexes", MD_ACT_DROP_INDEX, false},
   {"listIndexes", MD_ACT_LIST_INDEXES, false},
   {"listCollections", MD_ACT_LIST_COLLECTIONS, false},
   {"collMod", MD_ACT_COLL_MOD, false},
   {"createUser", MD_ACT_CREATE_USER, false},
   {"dropUser", MD_ACT_DROP_USER, false},
   {"updateUser", MD_ACT_CHANGE_PASSWORD, false},
   {"serverStatus", MD_ACT_SERVER_STATUS, true},
   {"replSetGetStatus", MD_ACT_SERVER_STATUS, true},
   {"replSetGetConfig", MD_ACT_SERVER_STATUS, true},
   {"hostInfo", MD_ACT_SERVER_STATUS, true},
   {"getCmdLineOpts", MD_ACT_SERVER_STATUS, true},
   {"getParameter", MD_ACT_SERVER_STATUS, true},
   {"configureFailPoint", MD_ACT_FAIL_POINT, true},
   {"replSetStepDown", MD_ACT_REPL_STATE_CHANGE, true},
   {"replSetStepUp", MD_ACT_REPL_STATE_CHANGE, true},
   {"replSetFreeze", MD_ACT_REPL_STATE_CHANGE, true},
   {"testMemberFault", MD_ACT_FAIL_POINT, true},
   {"testRollbackLog", MD_ACT_FAIL_POINT, true},
   {"killAllSessions", MD_ACT_KILL_ANY_SESSION, true},
   {NULL, 0, false},
};

static void
command_needs(const md_cmd_t *c, need_t *n, char *buf1, char *buf2, size_t len)
{
   memset(n, 0, sizeof *n);
   n->needs_auth = !is_no_auth(c->name);
   n->db = c->db;
   for (int i = 0; simple_needs[i].name; i++) {
      if (strcmp(simple_needs[i].name, c->name) == 0) {
         n->actions = simple_needs[i].actions;
         n->db = simple_needs[i].cluster ? NULL : c->db;
         return;
      }
   }
   if (strcmp(c->name, "update") == 0) {
      n->actions =
         MD_ACT_UPDATE | (array_has_true(c->cmd, "updates", "upsert") ? MD_ACT_INSERT : 0);
   } else if (strcmp(c->name, "findAndModify") == 0 || strcmp(c->name, "findandmodify") == 0) {
      n->actions = MD_ACT_FIND | (field_true(c->cmd, "remove") ? MD_ACT_REMOVE : MD_ACT_UPDATE) |
                   (field_true(c->cmd, "upsert") ? MD_ACT_INSERT : 0);
   } else if (strcmp(c->name, "aggregate") == 0) {
      aggregate_needs(c, n);
   } else if (strcmp(c->name, "create") == 0) {
      /* createCollection, or insert (mongod accepts either). */
      n->actions =
         md_auth_allowed(c, c->db, MD_ACT_INSERT) ? MD_ACT_INSERT : MD_ACT_CREATE_COLLECTION;
   } else if (strcmp(c->name, "renameCollection") == 0) {
      rename_needs(c, n, buf1, buf2, len);
   }
   /* Everything else (getMore, killCursors, usersInfo, sessions, transactions ...) only
    * needs an authenticated user; usersInfo checks viewUser itself. */
}

static bool
allowed_everywhere(const md_cmd_t *c, uint32_t actions)
{
   return md_auth_allowed(c, "\x01any", actions); /* a name no database has: any_db roles */
}

bool
md_auth_check(md_cmd_t *c, bson_error_t *error)
{
   if (!c->srv->users.enabled || localhost_exception(c)) {
      return true;
   }
   char db1[128], db2[128];
   need_t n;
   command_needs(c, &n, db1, db2, sizeof db1);
   /* Skipping the collection's validator is an action of its own (dbAdmin, restore). */
   if ((n.actions & (MD_ACT_INSERT | MD_ACT_UPDATE)) &&
       field_true(c->cmd, "bypassDocumentValidation")) {
      n.actions |= MD_ACT_BYPASS_VALIDATION;
   }
   if (!n.needs_auth) {
      return true;
   }
   if (!current_user(c)) {
      return tm_error_set(error, 13, "command %s requires authentication", c->name);
   }
   bool ok = n.any_db ? allowed_everywhere(c, n.actions) : md_auth_allowed(c, n.db, n.actions);
   if (ok && n.db2) {
      ok = md_auth_allowed(c, n.db2, n.actions2);
   }
   return ok || md_auth_not_authorized(c->db, c->cmd, error);
}

void
md_auth_append_status(md_cmd_t *c, bson_t *auth_info)
{
   const md_user_t *u = c->srv->users.enabled ? current_user(c) : NULL;
   bson_t users, roles_arr, d;
   BSON_APPEND_ARRAY_BEGIN(auth_info, "authenticatedUsers", &users);
   if (u) {
      BSON_APPEND_DOCUMENT_BEGIN(&users, "0", &d);
      BSON_APPEND_UTF8(&d, "user", u->name);
      BSON_APPEND_UTF8(&d, "db", u->db);
      bson_append_document_end(&users, &d);
   }
   bson_append_array_end(auth_info, &users);
   BSON_APPEND_ARRAY_BEGIN(auth_info, "authenticatedUserRoles", &roles_arr);
   for (size_t i = 0; u && i < u->n_roles; i++) {
      char key[16];
      const char *k;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&roles_arr, k, &d);
      BSON_APPEND_UTF8(&d, "role", u->roles[i].role);
      BSON_APPEND_UTF8(&d, "db", u->roles[i].db);
      bson_append_document_end(&roles_arr, &d);
   }
   bson_append_array_end(auth_info, &roles_arr);
}
