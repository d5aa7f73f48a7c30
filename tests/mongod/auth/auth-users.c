/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The user table: users created at start-up (--user) or by createUser, changed by updateUser,
 * removed by dropUser, shown by usersInfo. Only SCRAM credentials are kept, never passwords.
 * Guarded by the server lock.
 */
#include <string.h>

#include <openssl/crypto.h>

#include "auth/auth-cmd.h"
#include "auth/auth-private.h"

void
md_users_init(md_users_t *users, bool enabled)
{
   users->enabled = enabled;
   users->head = NULL;
}

static void
free_roles(md_user_t *u)
{
   for (size_t i = 0; i < u->n_roles; i++) {
      bson_free(u->roles[i].role);
      bson_free(u->roles[i].db);
   }
   bson_free(u->roles);
   u->roles = NULL;
   u->n_roles = 0;
}

static void
user_free(md_user_t *u)
{
   free_roles(u);
   bson_free(u->db);
   bson_free(u->name);
   OPENSSL_cleanse(u->creds, sizeof u->creds);
   bson_free(u);
}

void
md_users_destroy(md_users_t *users)
{
   while (users->head) {
      md_user_t *next = users->head->next;
      user_free(users->head);
      users->head = next;
   }
}

md_user_t *
md_users_find(const md_users_t *users, const char *db, const char *name)
{
   for (md_user_t *u = users->head; u; u = u->next) {
      if (strcmp(u->db, db) == 0 && strcmp(u->name, name) == 0) {
         return u;
      }
   }
   return NULL;
}

static bool
add_role(md_user_t *u, const char *role, const char *db, bson_error_t *error)
{
   if (!md_role_find(role, db)) {
      return tm_error_set(error, 31, "Could not find role: %s@%s", role, db);
   }
   u->roles = bson_realloc(u->roles, (u->n_roles + 1) * sizeof *u->roles);
   u->roles[u->n_roles].role = bson_strdup(role);
   u->roles[u->n_roles].db = bson_strdup(db);
   u->n_roles++;
   return true;
}

/* Sets the credentials of the mechanisms in `mechs` (bit 0 SHA-1, bit 1 SHA-256). */
static bool
set_password(md_user_t *u, const char *pwd, unsigned mechs, bson_error_t *error)
{
   char err[128];
   if (!*pwd) {
      return tm_error_set(error, 2, "Password cannot be empty");
   }
   for (int m = MD_SCRAM_SHA1; m <= MD_SCRAM_SHA256; m++) {
      memset(&u->creds[m], 0, sizeof u->creds[m]);
      if ((mechs & (1u << m)) &&
          !md_scram_cred_derive((md_scram_mech_t)m, u->name, pwd, &u->creds[m], err, sizeof err)) {
         return tm_error_set(error, 2, "Error preflighting SCRAM-SHA-256 password: %s", err);
      }
   }
   return true;
}

static md_user_t *
user_new(const char *db, const char *name)
{
   md_user_t *u = bson_malloc0(sizeof *u);
   u->db = bson_strdup(db);
   u->name = bson_strdup(name);
   md_random_bytes(u->user_id, sizeof u->user_id);
   u->user_id[6] = (uint8_t)((u->user_id[6] & 0x0f) | 0x40); /* UUID version 4 */
   u->user_id[8] = (uint8_t)((u->user_id[8] & 0x3f) | 0x80);
   return u;
}

bool
md_users_add_spec(md_users_t *users, const char *spec, bson_error_t *error)
{
   const char *c1 = strchr(spec, ':'), *c2 = strrchr(spec, ':');
   if (!c1 || c1 == c2 || c1 == spec || c2 == c1 + 1 || !c2[1]) {
      return tm_error_set(error, 2, "--user wants NAME:PASSWORD:ROLE[@DB][,ROLE[@DB]]...");
   }
   char *name = bson_strndup(spec, (size_t)(c1 - spec));
   char *pwd = bson_strndup(c1 + 1, (size_t)(c2 - c1 - 1));
   char *roles = bson_strdup(c2 + 1);
   bool ok = !md_users_find(users, "admin", name);
   if (!ok) {
      tm_error_set(error, 51003, "User \"%s@admin\" already exists", name);
   }
   md_user_t *u = user_new("admin", name);
   char *save = NULL;
   for (char *r = strtok_r(roles, ",", &save); ok && r; r = strtok_r(NULL, ",", &save)) {
      char *at = strchr(r, '@');
      if (at) {
         *at = '\0';
      }
      ok = add_role(u, r, at ? at + 1 : "admin", error);
   }
   ok = ok && set_password(u, pwd, 3, error);
   if (ok) {
      u->next = users->head;
      users->head = u;
   } else {
      user_free(u);
   }
   OPENSSL_cleanse(pwd, strlen(pwd));
   bson_free(pwd);
   bson_free(name);
   bson_free(roles);
   return ok;
}

/* roles: ["read", {role: "readWrite", db: "x"}]; a bare name means a role on `db`. */
static bool
parse_roles(md_user_t *u, const bson_t *cmd, const char *db, bson_error_t *error)
{
   bson_iter_t it, el, f;
   if (!bson_iter_init_find(&it, cmd, "roles") || !BSON_ITER_HOLDS_ARRAY(&it)) {
      return tm_error_set(error, 2, "\"roles\" field must be provided and be an array");
   }
   free_roles(u);
   bson_iter_recurse(&it, &el);
   while (bson_iter_next(&el)) {
      const char *role = NULL, *rdb = db;
      if (BSON_ITER_HOLDS_UTF8(&el)) {
         role = bson_iter_utf8(&el, NULL);
      } else if (BSON_ITER_HOLDS_DOCUMENT(&el) && bson_iter_recurse(&el, &f)) {
         while (bson_iter_next(&f)) {
            if (strcmp(bson_iter_key(&f), "role") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
               role = bson_iter_utf8(&f, NULL);
            } else if (strcmp(bson_iter_key(&f), "db") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
               rdb = bson_iter_utf8(&f, NULL);
            }
         }
      }
      if (!role) {
         return tm_error_set(error, 14, "Role names must be either strings or objects");
      }
      if (!add_role(u, role, rdb, error)) {
         return false;
      }
   }
   return true;
}

/* mechanisms: a subset of the SCRAM ones (default both); returns the bit set or 0. */
static unsigned
parse_mechanisms(const bson_t *cmd, unsigned current, bson_error_t *error)
{
   bson_iter_t it, el;
   if (!bson_iter_init_find(&it, cmd, "mechanisms")) {
      return current;
   }
   unsigned mechs = 0;
   md_scram_mech_t m;
   if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &el)) {
      tm_error_set(error, 14, "mechanisms field must be an array");
      return 0;
   }
   while (bson_iter_next(&el)) {
      const char *name = BSON_ITER_HOLDS_UTF8(&el) ? bson_iter_utf8(&el, NULL) : "";
      if (!md_scram_mech_parse(name, &m)) {
         tm_error_set(error, 2, "Unknown auth mechanism '%s'", name);
         return 0;
      }
      mechs |= 1u << m;
   }
   if (!mechs) {
      tm_error_set(error, 2, "mechanisms field must not be empty");
   }
   return mechs;
}

static const char *
cmd_string(const bson_t *cmd, const char *field)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, cmd, field) && BSON_ITER_HOLDS_UTF8(&it)
             ? bson_iter_utf8(&it, NULL)
             : NULL;
}

static bool
check_digest_password(const md_cmd_t *c, bson_error_t *error)
{
   bson_iter_t it;
   if (bson_iter_init_find(&it, c->cmd, "digestPassword") && !bson_iter_as_bool(&it)) {
      return tm_error_set(error, 2,
                          "digestPassword: false (client-side digests) is not "
                          "supported by test-mongod");
   }
   if (strcmp(c->db, "$external") == 0) {
      return tm_error_set(error, 2,
                          "users in $external (X.509, LDAP, Kerberos) are not "
                          "supported by test-mongod");
   }
   return true;
}

bool
md_cmd_create_user(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {
      "pwd", "roles", "mechanisms", "customData", "digestPassword", "authenticationRestrictions",
      NULL};
   const char *name = cmd_string(c->cmd, "createUser");
   const char *pwd = cmd_string(c->cmd, "pwd");
   if (!md_cmd_check_fields(c, allowed, error) || !check_digest_password(c, error)) {
      return false;
   }
   if (!name || !*name) {
      return tm_error_set(error, 2, "User name must be a non-empty string");
   }
   if (md_users_find(&c->srv->users, c->db, name)) {
      return tm_error_set(error, 51003, "User \"%s@%s\" already exists", name, c->db);
   }
   if (!pwd) {
      return tm_error_set(error, 2,
                          "Must provide a 'pwd' field for all user documents, "
                          "except those with '$external' as the user's source db");
   }
   md_user_t *u = user_new(c->db, name);
   unsigned mechs = parse_mechanisms(c->cmd, 3, error);
   if (!mechs || !parse_roles(u, c->cmd, c->db, error) || !set_password(u, pwd, mechs, error)) {
      user_free(u);
      return false;
   }
   u->next = c->srv->users.head;
   c->srv->users.head = u;
   return true;
}

bool
md_cmd_update_user(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {
      "pwd", "roles", "mechanisms", "customData", "digestPassword", "authenticationRestrictions",
      NULL};
   const char *name = cmd_string(c->cmd, "updateUser");
   md_user_t *u = name ? md_users_find(&c->srv->users, c->db, name) : NULL;
   if (!md_cmd_check_fields(c, allowed, error) || !check_digest_password(c, error)) {
      return false;
   }
   if (!u) {
      return tm_error_set(error, 11, "Could not find user \"%s\" for db \"%s\"", name ? name : "",
                          c->db);
   }
   unsigned current = (u->creds[0].set ? 1u : 0u) | (u->creds[1].set ? 2u : 0u);
   unsigned mechs = parse_mechanisms(c->cmd, current, error);
   const char *pwd = cmd_string(c->cmd, "pwd");
   if (!mechs) {
      return false;
   }
   if (mechs != current && !pwd) {
      return tm_error_set(error, 2,
                          "mechanisms field must be a subset of previously set "
                          "mechanisms");
   }
   if (bson_has_field(c->cmd, "roles")) {
      md_user_t tmp = {0};
      if (!parse_roles(&tmp, c->cmd, c->db, error)) {
         free_roles(&tmp);
         return false;
      }
      free_roles(u);
      u->roles = tmp.roles;
      u->n_roles = tmp.n_roles;
   }
   return !pwd || set_password(u, pwd, mechs, error);
}

bool
md_cmd_drop_user(md_cmd_t *c, bson_error_t *error)
{
   const char *name = cmd_string(c->cmd, "dropUser");
   for (md_user_t **p = &c->srv->users.head; name && *p; p = &(*p)->next) {
      if (strcmp((*p)->db, c->db) == 0 && strcmp((*p)->name, name) == 0) {
         md_user_t *u = *p;
         *p = u->next;
         user_free(u);
         return true;
      }
   }
   return tm_error_set(error, 11, "User '%s@%s' not found", name ? name : "", c->db);
}

static void
append_user(bson_t *arr, uint32_t i, const md_user_t *u)
{
   char key[16], *id = bson_strdup_printf("%s.%s", u->db, u->name);
   const char *k;
   bson_t d, roles, r, mechs;
   bson_uint32_to_string(i, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(arr, k, &d);
   BSON_APPEND_UTF8(&d, "_id", id);
   bson_append_binary(&d, "userId", -1, BSON_SUBTYPE_UUID, u->user_id, 16);
   BSON_APPEND_UTF8(&d, "user", u->name);
   BSON_APPEND_UTF8(&d, "db", u->db);
   BSON_APPEND_ARRAY_BEGIN(&d, "roles", &roles);
   for (size_t j = 0; j < u->n_roles; j++) {
      bson_uint32_to_string((uint32_t)j, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&roles, k, &r);
      BSON_APPEND_UTF8(&r, "role", u->roles[j].role);
      BSON_APPEND_UTF8(&r, "db", u->roles[j].db);
      bson_append_document_end(&roles, &r);
   }
   bson_append_array_end(&d, &roles);
   BSON_APPEND_ARRAY_BEGIN(&d, "mechanisms", &mechs);
   uint32_t n = 0;
   for (int m = MD_SCRAM_SHA1; m <= MD_SCRAM_SHA256; m++) {
      if (u->creds[m].set) {
         bson_uint32_to_string(n++, &k, key, sizeof key);
         BSON_APPEND_UTF8(&mechs, k, md_scram_mech_name((md_scram_mech_t)m));
      }
   }
   bson_append_array_end(&d, &mechs);
   bson_append_document_end(arr, &d);
   bson_free(id);
}

/* A user may always see itself; others need viewUser on the user's database. */
static bool
may_view(md_cmd_t *c, const char *db, const char *name)
{
   const md_auth_conn_t *ac = &c->conn->auth;
   if (name && ac->user_name && strcmp(ac->user_db, db) == 0 && strcmp(ac->user_name, name) == 0) {
      return true;
   }
   return md_auth_allowed(c, db, MD_ACT_VIEW_USER);
}

/* One usersInfo target: "name" (in $db) or {user, db}. */
static bool
target(const bson_iter_t *it, const char *cmd_db, const char **db, const char **name)
{
   bson_iter_t f;
   *db = cmd_db;
   *name = NULL;
   if (BSON_ITER_HOLDS_UTF8(it)) {
      *name = bson_iter_utf8(it, NULL);
      return true;
   }
   if (!BSON_ITER_HOLDS_DOCUMENT(it) || !bson_iter_recurse(it, &f)) {
      return false;
   }
   while (bson_iter_next(&f)) {
      if (strcmp(bson_iter_key(&f), "user") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
         *name = bson_iter_utf8(&f, NULL);
      } else if (strcmp(bson_iter_key(&f), "db") == 0 && BSON_ITER_HOLDS_UTF8(&f)) {
         *db = bson_iter_utf8(&f, NULL);
      }
   }
   return *name != NULL;
}

static bool
unauthorized(md_cmd_t *c, bson_error_t *error)
{
   return md_auth_not_authorized(c->db, c->cmd, error);
}

bool
md_cmd_users_info(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"showCredentials",
                                         "showPrivileges",
                                         "showAuthenticationRestrictions",
                                         "showCustomData",
                                         "forAllDBs",
                                         "filter",
                                         NULL};
   bson_iter_t it, el;
   bson_t arr;
   uint32_t n = 0;
   const char *db, *name;
   if (!md_cmd_check_fields(c, allowed, error)) {
      return false;
   }
   bson_iter_init_find(&it, c->cmd, "usersInfo");
   bool all = BSON_ITER_HOLDS_NUMBER(&it);
   bool many = BSON_ITER_HOLDS_ARRAY(&it);
   if (!all && !many && !target(&it, c->db, &db, &name)) {
      return tm_error_set(error, 2, "User name must be a string or an object with user and db");
   }
   if (all && !may_view(c, c->db, NULL)) {
      return unauthorized(c, error);
   }
   if (many) {
      bson_iter_recurse(&it, &el);
      while (bson_iter_next(&el)) {
         if (!target(&el, c->db, &db, &name)) {
            return tm_error_set(error, 2, "User name must be a string or an object");
         }
         if (!may_view(c, db, name)) {
            return unauthorized(c, error);
         }
      }
   } else if (!all && !may_view(c, db, name)) {
      return unauthorized(c, error);
   }
   BSON_APPEND_ARRAY_BEGIN(c->reply, "users", &arr);
   for (const md_user_t *u = c->srv->users.head; u; u = u->next) {
      bool match = all && strcmp(u->db, c->db) == 0;
      if (many) {
         bson_iter_recurse(&it, &el);
         while (!match && bson_iter_next(&el)) {
            match = target(&el, c->db, &db, &name) && strcmp(u->db, db) == 0 &&
                    strcmp(u->name, name) == 0;
         }
      } else if (!all) {
         match = strcmp(u->db, db) == 0 && strcmp(u->name, name) == 0;
      }
      if (match) {
         append_user(&arr, n++, u);
      }
   }
   bson_append_array_end(c->reply, &arr);
   return true;
}
