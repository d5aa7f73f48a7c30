/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Administrative commands (hello is in cmd-hello.c). The version is a real 6.0 release, so
 * that anything keyed on it (drivers' runOnRequirements, version checks) sees one.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "auth/auth-cmd.h"
#include "commands/commands.h"

#define SERVER_VERSION "6.0.13"
#define SERVER_VERSION_PATCH 13

static int64_t
wall_ms(void)
{
   struct timeval tv;
   gettimeofday(&tv, NULL);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

bool
md_cmd_ping(md_cmd_t *c, bson_error_t *error)
{
   (void)c;
   (void)error;
   return true;
}

/* endSessions forgets the sessions; killSessions only ends what they run (transactions). */
bool
md_cmd_end_sessions(md_cmd_t *c, bson_error_t *error)
{
   (void)error;
   md_sessions_end(&c->srv->sessions, &c->srv->data.txns, c->cmd,
                   strcmp(c->name, "endSessions") == 0);
   return true;
}

bool
md_cmd_kill_all_sessions(md_cmd_t *c, bson_error_t *error)
{
   (void)error;
   md_sessions_kill_all(&c->srv->sessions, &c->srv->data.txns);
   return true;
}

bool
md_cmd_build_info(md_cmd_t *c, bson_error_t *error)
{
   bson_t arr;
   BSON_APPEND_UTF8(c->reply, "version", SERVER_VERSION);
   BSON_APPEND_UTF8(c->reply, "gitVersion", "test-mongod");
   BSON_APPEND_ARRAY_BEGIN(c->reply, "versionArray", &arr);
   BSON_APPEND_INT32(&arr, "0", 6);
   BSON_APPEND_INT32(&arr, "1", 0);
   BSON_APPEND_INT32(&arr, "2", SERVER_VERSION_PATCH);
   BSON_APPEND_INT32(&arr, "3", 0);
   bson_append_array_end(c->reply, &arr);
   BSON_APPEND_INT32(c->reply, "bits", 64);
   BSON_APPEND_BOOL(c->reply, "debug", false);
   BSON_APPEND_INT32(c->reply, "maxBsonObjectSize", 16777216);
   BSON_APPEND_ARRAY_BEGIN(c->reply, "storageEngines", &arr);
   BSON_APPEND_UTF8(&arr, "0", "inMemory");
   bson_append_array_end(c->reply, &arr);
   (void)error;
   return true;
}

bool
md_cmd_get_parameter(md_cmd_t *c, bson_error_t *error)
{
   bson_iter_t it;
   bool all = bson_iter_init_find(&it, c->cmd, "getParameter") && BSON_ITER_HOLDS_UTF8(&it) &&
              strcmp(bson_iter_utf8(&it, NULL), "*") == 0;
   if (all || bson_has_field(c->cmd, "featureCompatibilityVersion")) {
      bson_t fcv;
      BSON_APPEND_DOCUMENT_BEGIN(c->reply, "featureCompatibilityVersion", &fcv);
      BSON_APPEND_UTF8(&fcv, "version", "6.0");
      bson_append_document_end(c->reply, &fcv);
   }
   if (all || bson_has_field(c->cmd, "enableTestCommands")) {
      BSON_APPEND_BOOL(c->reply, "enableTestCommands", true);
   }
   if (all || bson_has_field(c->cmd, "requireApiVersion")) {
      BSON_APPEND_BOOL(c->reply, "requireApiVersion", false);
   }
   if (all || bson_has_field(c->cmd, "transactionLifetimeLimitSeconds")) {
      BSON_APPEND_INT32(c->reply, "transactionLifetimeLimitSeconds", 60);
   }
   if (bson_count_keys(c->reply) == 0) {
      return tm_error_set(error, 72, "no option found to get");
   }
   return true;
}

bool
md_cmd_configure_fail_point(md_cmd_t *c, bson_error_t *error)
{
   if (strcmp(c->db, "admin") != 0) {
      return tm_error_set(error, 13,
                          "configureFailPoint may only be run against the admin "
                          "database.");
   }
   return md_failpoint_configure(&c->srv->failpoints, c->cmd, c->reply, error);
}

bool
md_cmd_server_status(md_cmd_t *c, bson_error_t *error)
{
   bson_t conns, repl;
   char host[256] = "localhost";
   gethostname(host, sizeof host - 1);
   int64_t up_ms = md_now_ms() - c->srv->started_ms;
   BSON_APPEND_UTF8(c->reply, "host", host);
   BSON_APPEND_UTF8(c->reply, "version", SERVER_VERSION);
   BSON_APPEND_UTF8(c->reply, "process", "mongod");
   BSON_APPEND_INT64(c->reply, "pid", (int64_t)getpid());
   BSON_APPEND_DOUBLE(c->reply, "uptime", (double)(up_ms / 1000));
   BSON_APPEND_INT64(c->reply, "uptimeMillis", up_ms);
   BSON_APPEND_INT64(c->reply, "uptimeEstimate", up_ms / 1000);
   BSON_APPEND_DATE_TIME(c->reply, "localTime", wall_ms());
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "connections", &conns);
   pthread_mutex_lock(&c->srv->conns_lock);
   BSON_APPEND_INT32(&conns, "current", c->srv->n_conns);
   pthread_mutex_unlock(&c->srv->conns_lock);
   BSON_APPEND_INT32(&conns, "available", c->srv->opts.max_connections);
   bson_append_document_end(c->reply, &conns);
   /* mongod's repl section (none on a standalone): its hello fields, then the rollback id. */
   if (!c->srv->opts.standalone) {
      BSON_APPEND_DOCUMENT_BEGIN(c->reply, "repl", &repl);
      md_append_repl_info(c->srv, c->conn->member, &repl, "isWritablePrimary");
      BSON_APPEND_INT32(&repl, "rbid", c->srv->rbid);
      bson_append_document_end(c->reply, &repl);
   }
   md_auth_append_server_status(c);
   (void)error;
   return true;
}

bool
md_cmd_list_databases(md_cmd_t *c, bson_error_t *error)
{
   static const char *const allowed[] = {"filter", "nameOnly", "authorizedDatabases", NULL};
   bson_t arr, filter;
   bool has_filter, name_only = false;
   bson_iter_t it;
   if (!md_cmd_check_fields(c, allowed, error) ||
       !md_cmd_get_doc(c->cmd, "filter", &filter, &has_filter, error)) {
      return false;
   }
   if (bson_iter_init_find(&it, c->cmd, "nameOnly")) {
      name_only = bson_iter_as_bool(&it);
   }
   tm_matcher_t *m = has_filter ? tm_matcher_new(&filter, error) : NULL;
   if (has_filter && !m) {
      return false;
   }
   BSON_APPEND_ARRAY_BEGIN(c->reply, "databases", &arr);
   uint32_t n = 0;
   for (md_db_t *db = c->srv->data.store->dbs; db; db = db->next) {
      /* Without listDatabases, a user sees the databases it holds a role on (6.0's
       * authorizedDatabases default). */
      if (!db->colls || (!md_auth_allowed(c, NULL, MD_ACT_LIST_DATABASES) &&
                         !md_auth_allowed(c, db->name, MD_ACT_FIND) &&
                         !md_auth_allowed(c, db->name, MD_ACT_LIST_COLLECTIONS))) {
         continue;
      }
      bson_t *d = BCON_NEW("name", BCON_UTF8(db->name));
      if (!name_only) {
         BSON_APPEND_INT64(d, "sizeOnDisk", 8192);
         BSON_APPEND_BOOL(d, "empty", false);
      }
      if (!m || tm_matcher_match(m, d, NULL)) {
         char key[16];
         const char *k;
         bson_uint32_to_string(n++, &k, key, sizeof key);
         BSON_APPEND_DOCUMENT(&arr, k, d);
      }
      bson_destroy(d);
   }
   bson_append_array_end(c->reply, &arr);
   if (!name_only) {
      BSON_APPEND_INT64(c->reply, "totalSize", 8192 * (int64_t)n);
      BSON_APPEND_INT64(c->reply, "totalSizeMb", 0);
   }
   tm_matcher_destroy(m);
   return true;
}

bool
md_cmd_connection_status(md_cmd_t *c, bson_error_t *error)
{
   bson_t info;
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "authInfo", &info);
   md_auth_append_status(c, &info);
   bson_append_document_end(c->reply, &info);
   (void)error;
   return true;
}

bool
md_cmd_whatsmyuri(md_cmd_t *c, bson_error_t *error)
{
   BSON_APPEND_UTF8(c->reply, "you", c->conn->peer);
   (void)error;
   return true;
}

bool
md_cmd_host_info(md_cmd_t *c, bson_error_t *error)
{
   bson_t sys;
   char host[256] = "localhost";
   gethostname(host, sizeof host - 1);
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "system", &sys);
   BSON_APPEND_UTF8(&sys, "hostname", host);
   BSON_APPEND_INT32(&sys, "numCores", (int32_t)sysconf(_SC_NPROCESSORS_ONLN));
   bson_append_document_end(c->reply, &sys);
   (void)error;
   return true;
}

bool
md_cmd_get_cmd_line_opts(md_cmd_t *c, bson_error_t *error)
{
   bson_t argv, parsed, repl;
   BSON_APPEND_ARRAY_BEGIN(c->reply, "argv", &argv);
   BSON_APPEND_UTF8(&argv, "0", "test-mongod");
   bson_append_array_end(c->reply, &argv);
   BSON_APPEND_DOCUMENT_BEGIN(c->reply, "parsed", &parsed);
   BSON_APPEND_DOCUMENT_BEGIN(&parsed, "replication", &repl);
   BSON_APPEND_UTF8(&repl, "replSet", "rs0");
   bson_append_document_end(&parsed, &repl);
   bson_append_document_end(c->reply, &parsed);
   (void)error;
   return true;
}
