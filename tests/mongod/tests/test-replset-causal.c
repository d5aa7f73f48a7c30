/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Causal consistency across members (test-mongod --members 3 --election-timeout-ms 500
 * --enable-test-commands): readConcern {afterClusterTime} on a secondary that has not yet
 * applied that time waits for it, up to maxTimeMS (then 50 MaxTimeMSExpired), as mongod
 * r6.0 does; a time past the cluster time is 72; a libmongoc causally consistent session
 * reading from lagging secondaries sees its own write. One test at a time
 * (CRITERION_JOBS=1); each heals what it broke. Skipped against a server without
 * testMemberFault (a real set).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

/* Inserts {_id: id} into mdtest.`name` on `primary` (w: 1) and returns the reply's
 * operationTime. */
static void
insert_at(const char *primary, const char *name, int id, uint32_t *t, uint32_t *i)
{
   mongoc_client_t *client = md_rs_direct(primary);
   bson_t *cmd =
      BCON_NEW("insert", BCON_UTF8(name), "documents", "[", "{", "_id", BCON_INT32(id), "}", "]");
   bson_t reply;
   bson_error_t error;
   bson_iter_t it;
   cr_assert(mongoc_client_command_simple(client, "mdtest", cmd, NULL, &reply, &error), "%s",
             error.message);
   cr_assert(bson_iter_init_find(&it, &reply, "operationTime") && BSON_ITER_HOLDS_TIMESTAMP(&it));
   bson_iter_timestamp(&it, t, i);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
}

/* Runs find {_id: id} on `host` (read preference secondaryPreferred) with readConcern
 * {afterClusterTime: Timestamp(t, i)} (level majority when `majority`) and `max_time_ms`
 * (0: none). Returns whether it succeeded; *found whether it returned the document,
 * *elapsed_ms how long it took. */
static bool
find_after(const char *host, const char *name, int id, uint32_t t, uint32_t i, bool majority,
           int max_time_ms, bool *found, int64_t *elapsed_ms, bson_error_t *error)
{
   mongoc_client_t *client = md_rs_direct(host);
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   bson_t *cmd = BCON_NEW("find", BCON_UTF8(name), "filter", "{", "_id", BCON_INT32(id), "}",
                          "readConcern", "{", "afterClusterTime", BCON_TIMESTAMP(t, i), "}");
   if (majority) {
      bson_t *with_level =
         BCON_NEW("find", BCON_UTF8(name), "filter", "{", "_id", BCON_INT32(id), "}", "readConcern",
                  "{", "level", "majority", "afterClusterTime", BCON_TIMESTAMP(t, i), "}");
      bson_destroy(cmd);
      cmd = with_level;
   }
   if (max_time_ms > 0) {
      BSON_APPEND_INT32(cmd, "maxTimeMS", max_time_ms);
   }
   bson_t reply;
   bson_iter_t it;
   int64_t start = bson_get_monotonic_time();
   bool ok = mongoc_client_command_simple(client, "mdtest", cmd, prefs, &reply, error);
   *elapsed_ms = (bson_get_monotonic_time() - start) / 1000;
   *found = ok && bson_iter_init(&it, &reply) &&
            bson_iter_find_descendant(&it, "cursor.firstBatch.0", &it);
   bson_destroy(&reply);
   bson_destroy(cmd);
   mongoc_read_prefs_destroy(prefs);
   mongoc_client_destroy(client);
   return ok;
}

/* A secondary 700 ms behind answers a read after the primary's write only once it has
 * applied the write: the read waits instead of missing it. */
Test(causal, after_cluster_time_waits_for_a_lagging_secondary, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("after");
   uint32_t t, i;
   bool found;
   int64_t elapsed;
   bson_error_t error;
   md_rs_fault_ms(p, s, "lag", 700);
   insert_at(p, name, 1, &t, &i);
   cr_assert(find_after(s, name, 1, t, i, false, 0, &found, &elapsed, &error), "%s", error.message);
   cr_assert(found, "the secondary read before it applied the write (%lld ms)", (long long)elapsed);
   cr_assert_gt(elapsed, 300, "the read did not wait for the lag (%lld ms)", (long long)elapsed);
   bson_free(name);
}

/* A paused secondary never reaches the time: the read fails with 50 once maxTimeMS has
 * passed (also with level majority); after a resume the same read succeeds at once. */
Test(causal, after_cluster_time_honours_max_time_ms, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   char *name = md_test_name("maxtime");
   uint32_t t, i;
   bool found;
   int64_t elapsed;
   bson_error_t error;
   md_rs_fault(p, s, "pause");
   insert_at(p, name, 1, &t, &i);
   cr_assert_not(find_after(s, name, 1, t, i, false, 300, &found, &elapsed, &error));
   cr_assert_eq(error.code, 50, "%d %s", error.code, error.message);
   cr_assert_str_eq(error.message, "operation exceeded time limit");
   cr_assert_geq(elapsed, 250, "gave up after %lld ms", (long long)elapsed);
   cr_assert_not(find_after(s, name, 1, t, i, true, 200, &found, &elapsed, &error));
   cr_assert_eq(error.code, 50, "majority: %d %s", error.code, error.message);
   md_rs_fault(p, s, "resume");
   cr_assert(find_after(s, name, 1, t, i, false, 2000, &found, &elapsed, &error), "%s",
             error.message);
   cr_assert(found);
   bson_free(name);
}

/* A time past the member's cluster time is refused with 72, as 6.0 refuses it. */
Test(causal, after_cluster_time_in_the_future_is_72, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary];
   char *name = md_test_name("future");
   uint32_t t, i;
   bool found;
   int64_t elapsed;
   bson_error_t error;
   insert_at(p, name, 1, &t, &i);
   cr_assert_not(find_after(p, name, 1, t + 3600, 0, false, 0, &found, &elapsed, &error));
   cr_assert_eq(error.code, 72, "%d %s", error.code, error.message);
   cr_assert(strstr(error.message, "readConcern afterClusterTime value must not be greater "
                                   "than the current clusterTime"),
             "%s", error.message);
   bson_free(name);
}

/* libmongoc's causally consistent session (the default) writes on the primary and reads
 * with read preference secondary from secondaries 600 ms behind: it sees its own insert
 * and update, because it sends afterClusterTime and the secondary waits. */
Test(causal, mongoc_causal_session_reads_its_writes_on_a_secondary, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary];
   for (int k = 1; k < MD_RS_MEMBERS; k++) {
      md_rs_fault_ms(p, m.host[(m.primary + k) % MD_RS_MEMBERS], "lag", 600);
   }
   char *uri = bson_strdup_printf("mongodb://%s/?replicaSet=rs0&readPreference=secondary", p);
   mongoc_client_t *client = mongoc_client_new(uri);
   mongoc_client_set_error_api(client, 2);
   char *name = md_test_name("session");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   mongoc_client_session_t *session = mongoc_client_start_session(client, NULL, &error);
   cr_assert(session, "%s", error.message);
   bson_t opts = BSON_INITIALIZER;
   cr_assert(mongoc_client_session_append(session, &opts, &error), "%s", error.message);
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "v", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, &opts, NULL, &error), "%s", error.message);
   bson_t *filter = BCON_NEW("_id", BCON_INT32(1));
   for (int round = 1; round <= 2; round++) {
      if (round == 2) {
         bson_t *update = BCON_NEW("$set", "{", "v", BCON_INT32(2), "}");
         cr_assert(mongoc_collection_update_one(coll, filter, update, &opts, NULL, &error), "%s",
                   error.message);
         bson_destroy(update);
      }
      mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, &opts, NULL);
      const bson_t *found;
      bson_iter_t it;
      bool got = mongoc_cursor_next(cursor, &found);
      cr_assert_not(mongoc_cursor_error(cursor, &error), "%s", error.message);
      cr_assert(got, "the session's read on a secondary missed its own insert");
      cr_assert(bson_iter_init_find(&it, found, "v") && bson_iter_int32(&it) == round,
                "round %d: the session's read on a secondary missed its own update", round);
      const mongoc_host_list_t *host = NULL;
      mongoc_server_description_t *sd =
         mongoc_client_get_server_description(client, mongoc_cursor_get_hint(cursor));
      host = mongoc_server_description_host(sd);
      cr_assert_str_neq(host->host_and_port, p, "the read went to the primary");
      mongoc_server_description_destroy(sd);
      mongoc_cursor_destroy(cursor);
   }
   bson_destroy(filter);
   bson_destroy(doc);
   bson_destroy(&opts);
   mongoc_client_session_destroy(session);
   mongoc_collection_destroy(coll);
   bson_free(name);
   mongoc_client_destroy(client);
   bson_free(uri);
}
