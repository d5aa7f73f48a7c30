/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers of the replica-set tests (test-replset*.c): the members the seed names, who is
 * primary, direct clients to one member, admin commands and faults (testMemberFault) on
 * one member.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

mongoc_client_t *
md_rs_direct(const char *host)
{
   char *uri_str = bson_strdup_printf("mongodb://%s/?directConnection=true&appname=rs-direct"
                                      "&serverSelectionTimeoutMS=5000&connectTimeoutMS=2000"
                                      "&socketTimeoutMS=5000",
                                      host);
   mongoc_client_t *client = mongoc_client_new(uri_str);
   cr_assert_not_null(client, "bad URI %s", uri_str);
   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   bson_free(uri_str);
   return client;
}

mongoc_client_t *
md_rs_failover_client(const char *app_name, int timeout_ms)
{
   mongoc_client_t *client = md_test_client(app_name, true);
   mongoc_uri_t *uri = mongoc_uri_copy(mongoc_client_get_uri(client));
   mongoc_client_destroy(client);
   if (timeout_ms > 0) {
      mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, timeout_ms);
      mongoc_uri_set_option_as_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS, timeout_ms);
   }
   mongoc_uri_set_option_as_int32(uri, MONGOC_URI_HEARTBEATFREQUENCYMS, 500);
   mongoc_uri_set_option_as_bool(uri, MONGOC_URI_SERVERSELECTIONTRYONCE, false);
   client = mongoc_client_new_from_uri(uri);
   cr_assert_not_null(client);
   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   mongoc_uri_destroy(uri);
   return client;
}

void
md_rs_hello(const char *host, bson_t *reply)
{
   mongoc_client_t *client = md_rs_direct(host);
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   md_test_admin(client, cmd, reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

bool
md_rs_flag(const bson_t *doc, const char *field)
{
   bson_iter_t it;
   return bson_iter_init_find(&it, doc, field) && bson_iter_as_bool(&it);
}

/* Members a test made unreachable: md_rs_members does not ask them. */
static char down[MD_RS_MEMBERS][256];

void
md_rs_mark_down(const char *host, bool is_down)
{
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      if (is_down ? !down[i][0] : strcmp(down[i], host) == 0) {
         bson_strncpy(down[i], is_down ? host : "", sizeof down[i]);
         return;
      }
   }
}

static bool
is_down(const char *host)
{
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      if (strcmp(down[i], host) == 0) {
         return true;
      }
   }
   return false;
}

/* The members the seed names, and which of them says it is primary now. */
void
md_rs_members(md_rs_members_t *m)
{
   static md_rs_members_t known;
   if (known.host[0][0]) {
      *m = known; /* the seed may be down now: ask the members themselves */
      md_rs_find_primary(m);
      return;
   }
   mongoc_client_t *seed = md_test_client(NULL, false);
   bson_t reply;
   bson_iter_t it, h;
   bson_t *cmd = BCON_NEW("hello", BCON_INT32(1));
   md_test_admin(seed, cmd, &reply);
   int n = 0;
   if (bson_iter_init_find(&it, &reply, "hosts") && bson_iter_recurse(&it, &h)) {
      while (bson_iter_next(&h) && n < MD_RS_MEMBERS) {
         bson_strncpy(m->host[n++], bson_iter_utf8(&h, NULL), sizeof m->host[0]);
      }
   }
   if (n < MD_RS_MEMBERS) {
      cr_skip_test("needs a replica set of %d members (test-mongod --members 3)", MD_RS_MEMBERS);
   }
   known = *m;
   md_rs_find_primary(m);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(seed);
}

void
md_rs_find_primary(md_rs_members_t *m)
{
   bson_t sub;
   m->primary = -1;
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      if (is_down(m->host[i])) {
         continue;
      }
      md_rs_hello(m->host[i], &sub);
      if (md_rs_flag(&sub, "isWritablePrimary")) {
         m->primary = i;
      }
      bson_destroy(&sub);
   }
}

bool
md_rs_admin(const char *host, bson_t *cmd, bson_t *reply, bson_error_t *error)
{
   mongoc_client_t *client = md_rs_direct(host);
   bool ok = mongoc_client_command_simple(client, "admin", cmd, NULL, reply, error);
   mongoc_client_destroy(client);
   bson_destroy(cmd);
   return ok;
}

/* testMemberFault, with `ms` when `with_ms`; skips without the command (code 59). */
static void
fault(const char *via, const char *target, const char *mode, bool with_ms, int ms)
{
   bson_t reply;
   bson_error_t error;
   bson_t *cmd = BCON_NEW("testMemberFault", target, "mode", mode);
   if (with_ms) {
      BSON_APPEND_INT32(cmd, "ms", ms);
   }
   bool ok = md_rs_admin(via, cmd, &reply, &error);
   bson_destroy(&reply);
   if (!ok && error.code == 59) {
      cr_skip_test("the server has no testMemberFault (test-mongod --enable-test-commands)");
   }
   cr_assert(ok, "testMemberFault %s %s: %s", target, mode, error.message);
}

void
md_rs_fault(const char *via, const char *target, const char *mode)
{
   fault(via, target, mode, false, 0);
}

void
md_rs_fault_ms(const char *via, const char *target, const char *mode, int ms)
{
   fault(via, target, mode, true, ms);
}

void
md_rs_freeze(const char *host, int secs)
{
   bson_t reply;
   bson_error_t error;
   bool ok = md_rs_admin(host, BCON_NEW("replSetFreeze", BCON_INT32(secs)), &reply, &error);
   cr_assert(ok, "replSetFreeze %d on %s: %s", secs, host, error.message);
   bson_destroy(&reply);
}

/* Waits up to 5 s for a primary; returns its index. */
int
md_rs_await_primary(md_rs_members_t *m)
{
   for (int i = 0; i < 100; i++) {
      md_rs_members(m);
      if (m->primary >= 0) {
         return m->primary;
      }
      usleep(50 * 1000);
   }
   cr_assert_fail("no primary elected within 5 s");
   return -1;
}

int
md_rs_await_other_primary(const md_rs_members_t *m, int old)
{
   bson_oid_t election;
   for (int tries = 0; tries < 250; tries++) {
      for (int i = 0; i < MD_RS_MEMBERS; i++) {
         if (i != old && md_rs_hello_primary(m->host[i], &election)) {
            return i;
         }
      }
      usleep(20 * 1000);
   }
   cr_assert_fail("no new primary was elected");
   return -1;
}

void
md_rs_heal_all(void)
{
   md_rs_members_t m;
   int via = -1;
   md_rs_members(&m);
   for (int i = 0; i < MD_RS_MEMBERS && via < 0; i++) {
      via = is_down(m.host[i]) ? -1 : i;
   }
   for (int i = 0; via >= 0 && i < MD_RS_MEMBERS; i++) {
      bson_t reply;
      bson_error_t error;
      md_rs_admin(m.host[via], BCON_NEW("testMemberFault", m.host[i], "mode", "resume"), &reply,
                  &error);
      bson_destroy(&reply);
      md_rs_admin(m.host[via],
                  BCON_NEW("testMemberFault", m.host[i], "mode", "lag", "ms", BCON_INT32(-1)),
                  &reply, &error);
      bson_destroy(&reply);
      md_rs_admin(m.host[via],
                  BCON_NEW("testMemberFault", m.host[i], "mode", "clock", "ms", BCON_INT32(0)),
                  &reply, &error);
      bson_destroy(&reply);
      if (is_down(m.host[i])) {
         md_rs_admin(m.host[via], BCON_NEW("testMemberFault", m.host[i], "mode", "heal"), &reply,
                     &error);
         bson_destroy(&reply);
         md_rs_mark_down(m.host[i], false);
      }
   }
}

/* Field `v` of the document `id` of mdtest.`name` as `host` reads it (-1: no such
 * document), from a secondary with read preference secondary, with readConcern majority
 * when `majority`. */
int
md_rs_read_v(const char *host, const char *name, int id, bool majority)
{
   mongoc_client_t *client = md_rs_direct(host);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   bson_t *filter = BCON_NEW("_id", BCON_INT32(id));
   bson_t *opts = majority ? BCON_NEW("readConcern", "{", "level", "majority", "}") : bson_new();
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, opts, prefs);
   const bson_t *doc;
   bson_error_t error;
   bson_iter_t it;
   int v = -1;
   if (mongoc_cursor_next(cursor, &doc)) {
      v = bson_iter_init_find(&it, doc, "v") ? bson_iter_int32(&it) : 0;
   }
   cr_assert(!mongoc_cursor_error(cursor, &error), "find on %s: %s", host, error.message);
   mongoc_cursor_destroy(cursor);
   bson_destroy(opts);
   bson_destroy(filter);
   mongoc_read_prefs_destroy(prefs);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   return v;
}

/* `host`'s hello: whether it is a writable primary, and its electionId (zero if none). */
bool
md_rs_hello_primary(const char *host, bson_oid_t *election)
{
   bson_t hello;
   bson_iter_t it;
   md_rs_hello(host, &hello);
   bool primary = md_rs_flag(&hello, "isWritablePrimary");
   bson_oid_init_from_data(election, (const uint8_t *)"\0\0\0\0\0\0\0\0\0\0\0\0");
   if (bson_iter_init_find(&it, &hello, "electionId") && BSON_ITER_HOLDS_OID(&it)) {
      bson_oid_copy(bson_iter_oid(&it), election);
   }
   bson_destroy(&hello);
   return primary;
}
