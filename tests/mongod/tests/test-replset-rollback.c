/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What each member of a set reads, and what an isolated primary's writes become
 * (test-mongod --members 3 --election-timeout-ms 500 --enable-test-commands): a secondary
 * reads at its own applied position (stale reads), readConcern "majority" at the majority
 * commit point; an isolated primary keeps taking w:1 writes while the others elect a new
 * one, drivers follow the newer electionId, and its writes are rolled back when it
 * rejoins. One test at a time (CRITERION_JOBS=1); each heals what it broke. Skipped
 * against a server without testMemberFault (a real set).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

/* testMemberFault `mode` for `target`, through `via`; skips without the command. */
static void
fault(const char *via, const char *target, const char *mode)
{
   bson_t reply;
   bson_error_t error;
   bool ok = md_rs_admin(via, BCON_NEW("testMemberFault", target, "mode", mode), &reply,
                         &error);
   bson_destroy(&reply);
   if (!ok && error.code == 59) {
      cr_skip_test("the server has no testMemberFault (test-mongod --enable-test-commands)");
   }
   cr_assert(ok, "testMemberFault %s %s: %s", target, mode, error.message);
}

static void
heal_all(void)
{
   md_rs_heal_all();
}

/* Field `v` of the document `id` of mdtest.`name` as `host` reads it (-1: no such
 * document), from a secondary with read preference secondary, with readConcern majority
 * when `majority`. */
static int
read_v(const char *host, const char *name, int id, bool majority)
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

static void
write_ok(mongoc_collection_t *coll, const char *json_filter, const char *json_update)
{
   bson_error_t error;
   bson_t *filter = bson_new_from_json((const uint8_t *) json_filter, -1, &error);
   bson_t *update = json_update ? bson_new_from_json((const uint8_t *) json_update, -1, &error)
                                : NULL;
   bool ok = update ? mongoc_collection_update_one(coll, filter, update, NULL, NULL, &error)
                    : mongoc_collection_delete_one(coll, filter, NULL, NULL, &error);
   cr_assert(ok, "%s", error.message);
   bson_destroy(filter);
   if (update) {
      bson_destroy(update);
   }
}

/* A paused secondary answers reads as of the last write it applied: an update, an insert
 * and a delete made since are not visible there, and readConcern "majority" on the primary
 * reads at the commit point (both secondaries paused: before all three); once a secondary
 * resumes, both catch up. */
Test(rollback, secondaries_and_majority_reads_are_stale, .fini = heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s1 = m.host[(m.primary + 1) % MD_RS_MEMBERS],
              *s2 = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("stale");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *one = BCON_NEW("_id", BCON_INT32(1), "v", BCON_INT32(1));
   bson_t *two = BCON_NEW("_id", BCON_INT32(2), "v", BCON_INT32(1));
   bson_t *three = BCON_NEW("_id", BCON_INT32(3), "v", BCON_INT32(1));
   bson_t *wmaj = BCON_NEW("writeConcern", "{", "w", "majority", "}");
   cr_assert(mongoc_collection_insert_one(coll, one, wmaj, NULL, &error), "%s", error.message);
   cr_assert(mongoc_collection_insert_one(coll, two, wmaj, NULL, &error), "%s", error.message);
   fault(p, s1, "pause");
   fault(p, s2, "pause");
   write_ok(coll, "{\"_id\": 1}", "{\"$set\": {\"v\": 2}}");
   write_ok(coll, "{\"_id\": 2}", NULL);
   cr_assert(mongoc_collection_insert_one(coll, three, NULL, NULL, &error), "%s",
             error.message);
   cr_assert_eq(read_v(p, name, 1, false), 2, "the primary reads its own writes");
   cr_assert_eq(read_v(p, name, 3, false), 1);
   cr_assert_eq(read_v(s1, name, 1, false), 1, "a paused secondary saw a later update");
   cr_assert_eq(read_v(s1, name, 2, false), 1, "a paused secondary lost a document early");
   cr_assert_eq(read_v(s1, name, 3, false), -1, "a paused secondary saw a later insert");
   cr_assert_eq(read_v(p, name, 1, true), 1, "a majority read saw an uncommitted update");
   cr_assert_eq(read_v(p, name, 2, true), 1, "a majority read missed a document");
   cr_assert_eq(read_v(p, name, 3, true), -1, "a majority read saw an uncommitted insert");
   fault(p, s1, "resume");
   cr_assert_eq(read_v(s1, name, 1, false), 2);
   cr_assert_eq(read_v(s1, name, 2, false), -1);
   cr_assert_eq(read_v(s1, name, 3, false), 1);
   cr_assert_eq(read_v(p, name, 1, true), 2, "the commit point did not move on");
   cr_assert_eq(read_v(s2, name, 1, false), 1, "the other paused secondary moved on");
   bson_destroy(wmaj);
   bson_destroy(three);
   bson_destroy(two);
   bson_destroy(one);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}
