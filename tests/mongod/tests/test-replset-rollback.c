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

/* md_rs_heal_all, and no member left frozen by a test that failed half-way (the primary refuses
 * replSetFreeze: ignored). */
static void
heal_and_unfreeze(void)
{
   md_rs_members_t m;
   md_rs_heal_all();
   md_rs_members(&m);
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      bson_t reply;
      bson_error_t error;
      md_rs_admin(m.host[i], BCON_NEW("replSetFreeze", BCON_INT32(0)), &reply, &error);
      bson_destroy(&reply);
   }
}

static void
write_ok(mongoc_collection_t *coll, const char *json_filter, const char *json_update)
{
   bson_error_t error;
   bson_t *filter = bson_new_from_json((const uint8_t *)json_filter, -1, &error);
   bson_t *update =
      json_update ? bson_new_from_json((const uint8_t *)json_update, -1, &error) : NULL;
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
Test(rollback, secondaries_and_majority_reads_are_stale, .fini = md_rs_heal_all)
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
   md_rs_fault(p, s1, "pause");
   md_rs_fault(p, s2, "pause");
   write_ok(coll, "{\"_id\": 1}", "{\"$set\": {\"v\": 2}}");
   write_ok(coll, "{\"_id\": 2}", NULL);
   cr_assert(mongoc_collection_insert_one(coll, three, NULL, NULL, &error), "%s", error.message);
   cr_assert_eq(md_rs_read_v(p, name, 1, false), 2, "the primary reads its own writes");
   cr_assert_eq(md_rs_read_v(p, name, 3, false), 1);
   cr_assert_eq(md_rs_read_v(s1, name, 1, false), 1, "a paused secondary saw a later update");
   cr_assert_eq(md_rs_read_v(s1, name, 2, false), 1, "a paused secondary lost a document early");
   cr_assert_eq(md_rs_read_v(s1, name, 3, false), -1, "a paused secondary saw a later insert");
   cr_assert_eq(md_rs_read_v(p, name, 1, true), 1, "a majority read saw an uncommitted update");
   cr_assert_eq(md_rs_read_v(p, name, 2, true), 1, "a majority read missed a document");
   cr_assert_eq(md_rs_read_v(p, name, 3, true), -1, "a majority read saw an uncommitted insert");
   md_rs_fault(p, s1, "resume");
   cr_assert_eq(md_rs_read_v(s1, name, 1, false), 2);
   cr_assert_eq(md_rs_read_v(s1, name, 2, false), -1);
   cr_assert_eq(md_rs_read_v(s1, name, 3, false), 1);
   cr_assert_eq(md_rs_read_v(p, name, 1, true), 2, "the commit point did not move on");
   cr_assert_eq(md_rs_read_v(s2, name, 1, false), 1, "the other paused secondary moved on");
   bson_destroy(wmaj);
   bson_destroy(three);
   bson_destroy(two);
   bson_destroy(one);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* A secondary that applied a delete but not the write after it reads without the deleted
 * document and without the later one: each change's previous version is numbered with
 * that change's own history entry. */
Test(rollback, secondary_position_between_two_writes, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s1 = m.host[(m.primary + 1) % MD_RS_MEMBERS],
              *s2 = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   mongoc_client_t *client = md_rs_direct(p);
   char *name = md_test_name("between");
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   bson_error_t error;
   bson_t *one = BCON_NEW("_id", BCON_INT32(1), "v", BCON_INT32(1));
   bson_t *two = BCON_NEW("_id", BCON_INT32(2), "v", BCON_INT32(2));
   bson_t *w2 =
      BCON_NEW("writeConcern", "{", "w", BCON_INT32(2), "wtimeout", BCON_INT32(5000), "}");
   bson_t *filter = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, one, w2, NULL, &error), "%s", error.message);
   md_rs_fault(p, s2, "pause");
   cr_assert(mongoc_collection_delete_one(coll, filter, w2, NULL, &error), "%s", error.message);
   md_rs_fault(p, s1, "pause");
   cr_assert(mongoc_collection_insert_one(coll, two, NULL, NULL, &error), "%s", error.message);
   cr_assert_eq(md_rs_read_v(s1, name, 1, false), -1, "a delete it applied is not visible");
   cr_assert_eq(md_rs_read_v(s1, name, 2, false), -1, "a write it did not apply is visible");
   cr_assert_eq(md_rs_read_v(s2, name, 1, false), 1, "a delete it did not apply is visible");
   bson_destroy(filter);
   bson_destroy(w2);
   bson_destroy(two);
   bson_destroy(one);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

static void
insert_id(mongoc_collection_t *coll, int id, const bson_t *opts)
{
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(id), "v", BCON_INT32(id));
   cr_assert(mongoc_collection_insert_one(coll, doc, opts, NULL, &error), "insert %d: %s", id,
             error.message);
   bson_destroy(doc);
}

static void
on_insert_succeeded(const mongoc_apm_command_succeeded_t *e)
{
   char *host = mongoc_apm_command_succeeded_get_context(e);
   if (strcmp(mongoc_apm_command_succeeded_get_command_name(e), "insert") == 0) {
      bson_strncpy(host, mongoc_apm_command_succeeded_get_host(e)->host_and_port, 256);
   }
}

/* Where a client given every member as a seed sends an insert. */
static void
insert_through_all_seeds(const md_rs_members_t *m, const char *name, int id, char *host)
{
   char *uri = bson_strdup_printf("mongodb://%s,%s,%s/?replicaSet=rs0&appname=rs-seeds"
                                  "&serverSelectionTimeoutMS=5000",
                                  m->host[0], m->host[1], m->host[2]);
   mongoc_client_t *client = mongoc_client_new(uri);
   mongoc_client_set_error_api(client, MONGOC_ERROR_API_VERSION_2);
   mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
   mongoc_apm_set_command_succeeded_cb(cbs, on_insert_succeeded);
   mongoc_client_set_apm_callbacks(client, cbs, host);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   insert_id(coll, id, NULL);
   mongoc_collection_destroy(coll);
   mongoc_apm_callbacks_destroy(cbs);
   mongoc_client_destroy(client);
   bson_free(uri);
}

/* An isolated primary keeps taking w:1 writes while the others elect a new primary of a
 * newer term: for a while both say they are primary, the old one with the older
 * electionId, and a driver given every seed writes to the new one. Neither side sees the
 * other's writes. The isolated primary steps down once it notices it lost the majority. */
Test(rollback, isolated_primary_and_the_new_one_coexist, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int old = m.primary;
   const char *p = m.host[old], *via = m.host[(old + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("isolate");
   mongoc_client_t *old_client = md_rs_direct(p);
   mongoc_collection_t *old_coll = mongoc_client_get_collection(old_client, "mdtest", name);
   bson_t *wmaj = BCON_NEW("writeConcern", "{", "w", "majority", "}");
   insert_id(old_coll, 0, wmaj);
   bson_oid_t before, after, fresh;
   cr_assert(md_rs_hello_primary(p, &before));
   md_rs_fault(via, p, "isolate");
   md_rs_mark_down(p, true);
   insert_id(old_coll, 1, NULL); /* w:1 on the isolated primary */
   int now = md_rs_await_other_primary(&m, old);
   cr_assert(md_rs_hello_primary(p, &after), "the isolated primary stepped down with the election");
   cr_assert(md_rs_hello_primary(m.host[now], &fresh));
   cr_assert_eq(bson_oid_compare(&before, &after), 0, "the isolated primary's term moved");
   cr_assert_lt(bson_oid_compare(&after, &fresh), 0, "the new electionId is not newer");
   insert_id(old_coll, 2, NULL); /* two primaries: both take writes */
   bson_t status;
   bson_error_t error;
   char path[32];
   cr_assert(md_rs_admin(m.host[now], BCON_NEW("replSetGetStatus", BCON_INT32(1)), &status, &error),
             "%s", error.message);
   snprintf(path, sizeof path, "members.%d.stateStr", old);
   md_test_assert_json(&status, path, "\"(not reachable/healthy)\"");
   bson_destroy(&status);
   char host[256] = "";
   insert_through_all_seeds(&m, name, 3, host);
   cr_assert_str_eq(host, m.host[now], "the driver wrote to %s, not the new primary", host);
   cr_assert_eq(md_rs_read_v(m.host[now], name, 1, false), -1, "the set saw an isolated write");
   cr_assert_eq(md_rs_read_v(m.host[now], name, 0, false), 0);
   cr_assert_eq(md_rs_read_v(p, name, 1, false), 1, "the isolated primary lost its own write");
   cr_assert_eq(md_rs_read_v(p, name, 3, false), -1, "the isolated primary saw the set's write");
   bool stepped_down = false;
   for (int i = 0; i < 250 && !stepped_down; i++) {
      stepped_down = !md_rs_hello_primary(p, &after);
      usleep(20 * 1000);
   }
   cr_assert(stepped_down, "the isolated primary never noticed it lost the majority");
   md_rs_fault(via, p, "heal");
   md_rs_mark_down(p, false);
   bson_destroy(wmaj);
   bson_free(name);
   mongoc_collection_destroy(old_coll);
   mongoc_client_destroy(old_client);
}

/* testRollbackLog: the rollback id and how many undone writes of mdtest.`name` it lists. */
static int
rollback_log(const char *host, const char *name, int *count)
{
   bson_t reply;
   bson_error_t error;
   bson_iter_t it, arr, entry;
   cr_assert(md_rs_admin(host, BCON_NEW("testRollbackLog", BCON_INT32(1)), &reply, &error),
             "testRollbackLog: %s", error.message);
   char *ns = bson_strdup_printf("mdtest.%s", name);
   *count = 0;
   cr_assert(bson_iter_init_find(&arr, &reply, "rolledBack") && bson_iter_recurse(&arr, &it));
   while (bson_iter_next(&it)) {
      bson_iter_recurse(&it, &entry);
      *count += bson_iter_find(&entry, "ns") && strcmp(bson_iter_utf8(&entry, NULL), ns) == 0;
   }
   cr_assert(bson_iter_init_find(&it, &reply, "rbid"));
   int rbid = bson_iter_int32(&it);
   bson_free(ns);
   bson_destroy(&reply);
   return rbid;
}

static bool
write_w(mongoc_collection_t *coll, const char *filter, const char *update, bson_t *opts,
        bson_error_t *error)
{
   bson_t *f = bson_new_from_json((const uint8_t *)filter, -1, NULL);
   bson_t *u = bson_new_from_json((const uint8_t *)update, -1, NULL);
   bool ok = mongoc_collection_update_one(coll, f, u, opts, NULL, error);
   bson_destroy(f);
   bson_destroy(u);
   return ok;
}

/* The events a change stream delivers within about 2 s, as "op:_id:v" words. */
static void
drain_events(mongoc_change_stream_t *stream, char *out, size_t len, int want)
{
   const bson_t *event;
   bson_iter_t it;
   int got = 0;
   out[0] = '\0';
   for (int i = 0; i < 10 && got < want; i++) {
      while (mongoc_change_stream_next(stream, &event)) {
         int id =
            bson_iter_init(&it, event) && bson_iter_find_descendant(&it, "documentKey._id", &it)
               ? bson_iter_int32(&it)
               : -1;
         int v = bson_iter_init(&it, event) &&
                       (bson_iter_find_descendant(&it, "fullDocument.v", &it) ||
                        (bson_iter_init(&it, event) &&
                         bson_iter_find_descendant(&it, "updateDescription.updatedFields.v", &it)))
                    ? bson_iter_int32(&it)
                    : -1;
         bson_iter_init_find(&it, event, "operationType");
         size_t n = strlen(out);
         snprintf(out + n, len - n, "%s%s:%d:%d", n ? " " : "", bson_iter_utf8(&it, NULL), id, v);
         got++;
      }
   }
}

/* An isolated primary's w:1 writes are rolled back when it rejoins after another was
 * elected: gone from every member, the new primary's write to the same document kept,
 * listed by testRollbackLog under a new rollback id (serverStatus repl.rbid too), never
 * shown by a change stream. Its w: "majority" write never returned success (64), and a
 * write acknowledged with w: "majority" before the isolation stays. */
Test(rollback, isolated_writes_are_rolled_back_at_the_heal, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int old = m.primary;
   const char *p = m.host[old], *via = m.host[(old + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("rollback");
   mongoc_client_t *old_client = md_rs_direct(p), *via_client = md_rs_direct(via);
   mongoc_collection_t *old_coll = mongoc_client_get_collection(old_client, "mdtest", name);
   mongoc_collection_t *via_coll = mongoc_client_get_collection(via_client, "mdtest", name);
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   mongoc_collection_set_read_prefs(via_coll, prefs);
   bson_t *wmaj = BCON_NEW("writeConcern", "{", "w", "majority", "wtimeout", BCON_INT32(300), "}");
   insert_id(old_coll, 0, wmaj);
   int count, rbid = rollback_log(p, name, &count);
   bson_t *stream_opts = BCON_NEW("maxAwaitTimeMS", BCON_INT64(200));
   bson_t *pipeline = bson_new();
   mongoc_change_stream_t *stream = mongoc_collection_watch(via_coll, pipeline, stream_opts);
   md_rs_fault(via, p, "isolate");
   md_rs_mark_down(p, true);
   bson_error_t error;
   insert_id(old_coll, 1, NULL);
   cr_assert(write_w(old_coll, "{\"_id\": 0}", "{\"$set\": {\"v\": 10}}", NULL, &error), "%s",
             error.message);
   bson_t *two = BCON_NEW("_id", BCON_INT32(2), "v", BCON_INT32(2));
   cr_assert(!mongoc_collection_insert_one(old_coll, two, wmaj, NULL, &error),
             "w: majority succeeded on an isolated primary");
   cr_assert_eq(error.code, 64, "%u %s", error.code, error.message);
   int now = md_rs_await_other_primary(&m, old);
   mongoc_client_t *new_client = md_rs_direct(m.host[now]);
   mongoc_collection_t *new_coll = mongoc_client_get_collection(new_client, "mdtest", name);
   cr_assert(write_w(new_coll, "{\"_id\": 0}", "{\"$set\": {\"v\": 20}}", wmaj, &error), "%s",
             error.message);
   insert_id(new_coll, 5, wmaj);
   md_rs_fault(via, p, "heal");
   md_rs_mark_down(p, false);
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      cr_assert_eq(md_rs_read_v(m.host[i], name, 0, false), 20, "on %s", m.host[i]);
      cr_assert_eq(md_rs_read_v(m.host[i], name, 1, false), -1, "not rolled back on %s", m.host[i]);
      cr_assert_eq(md_rs_read_v(m.host[i], name, 2, false), -1, "not rolled back on %s", m.host[i]);
      cr_assert_eq(md_rs_read_v(m.host[i], name, 5, false), 5, "on %s", m.host[i]);
   }
   cr_assert_eq(rollback_log(p, name, &count), rbid + 1, "the rollback id did not rise");
   cr_assert_eq(count, 3, "%d undone writes listed", count);
   bson_t status, *cmd = BCON_NEW("serverStatus", BCON_INT32(1));
   bson_iter_t it;
   cr_assert(mongoc_client_command_simple(old_client, "admin", cmd, NULL, &status, &error), "%s",
             error.message);
   cr_assert(bson_iter_init(&it, &status) && bson_iter_find_descendant(&it, "repl.rbid", &it));
   cr_assert_eq(bson_iter_int32(&it), rbid + 1, "serverStatus repl.rbid");
   bson_destroy(cmd);
   char events[512];
   drain_events(stream, events, sizeof events, 2);
   cr_assert_str_eq(events, "update:0:20 insert:5:5", "the stream showed: %s", events);
   bson_destroy(&status);
   mongoc_change_stream_destroy(stream);
   bson_destroy(pipeline);
   bson_destroy(stream_opts);
   bson_destroy(two);
   bson_destroy(wmaj);
   mongoc_read_prefs_destroy(prefs);
   mongoc_collection_destroy(new_coll);
   mongoc_client_destroy(new_client);
   mongoc_collection_destroy(via_coll);
   mongoc_collection_destroy(old_coll);
   mongoc_client_destroy(via_client);
   mongoc_client_destroy(old_client);
   bson_free(name);
}

/* An isolation that ends before anyone else is elected (here the others are frozen, so
 * the test does not race the election timeout) changes nothing: the primary's writes
 * meanwhile are the set's history, nothing is rolled back and it is still primary. */
Test(rollback, short_isolation_keeps_the_writes, .fini = heal_and_unfreeze)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *via = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("blip");
   mongoc_client_t *client = md_rs_direct(p);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   int count, rbid = rollback_log(p, name, &count);
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_freeze(m.host[(m.primary + i) % MD_RS_MEMBERS], 30);
   }
   md_rs_fault(via, p, "isolate");
   md_rs_mark_down(p, true);
   insert_id(coll, 1, NULL);
   md_rs_fault(via, p, "heal");
   md_rs_mark_down(p, false);
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_freeze(m.host[(m.primary + i) % MD_RS_MEMBERS], 0);
   }
   bson_oid_t election;
   cr_assert(md_rs_hello_primary(p, &election), "a primary back before an election lost its role");
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      cr_assert_eq(md_rs_read_v(m.host[i], name, 1, false), 1, "the write is missing on %s",
                   m.host[i]);
   }
   cr_assert_eq(rollback_log(p, name, &count), rbid, "a rollback happened");
   cr_assert_eq(count, 0);
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}

/* An isolated primary that stepped down while nobody else could be elected (the others
 * frozen) keeps its writes when it rejoins: no newer term exists, so there is nothing to
 * roll back to, and the set elects a primary again. Its w: "majority" write without
 * wtimeout waited until the stepdown: 189 PrimarySteppedDown. */
Test(rollback, no_newer_term_no_rollback, .fini = heal_and_unfreeze)
{
   md_rs_members_t m;
   md_rs_members(&m);
   int old = m.primary;
   const char *p = m.host[old], *via = m.host[(old + 1) % MD_RS_MEMBERS];
   char *name = md_test_name("noterm");
   mongoc_client_t *client = md_rs_direct(p);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   int count, rbid = rollback_log(p, name, &count);
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_freeze(m.host[(old + i) % MD_RS_MEMBERS], 30);
   }
   md_rs_fault(via, p, "isolate");
   md_rs_mark_down(p, true);
   /* The insert command itself: libmongoc's insert helper would retry it after 189. */
   bson_t *insert = BCON_NEW("insert", BCON_UTF8(name), "documents", "[", "{", "_id", BCON_INT32(1),
                             "v", BCON_INT32(1), "}", "]");
   bson_t *wmaj = BCON_NEW("writeConcern", "{", "w", "majority", "}");
   bson_t reply;
   bson_error_t error;
   cr_assert(!mongoc_collection_write_command_with_opts(coll, insert, wmaj, &reply, &error),
             "w: majority succeeded on an isolated primary");
   md_test_assert_json(&reply, "writeConcernError.code", "189");
   md_test_assert_json(&reply, "writeConcernError.codeName", "\"PrimarySteppedDown\"");
   bson_destroy(&reply);
   bson_destroy(wmaj);
   bson_destroy(insert);
   bson_oid_t election;
   bool stepped_down = false;
   for (int i = 0; i < 250 && !stepped_down; i++) {
      stepped_down = !md_rs_hello_primary(p, &election);
      usleep(20 * 1000);
   }
   cr_assert(stepped_down, "the isolated primary never stepped down");
   md_rs_fault(via, p, "heal");
   md_rs_mark_down(p, false);
   for (int i = 1; i < MD_RS_MEMBERS; i++) {
      md_rs_freeze(m.host[(old + i) % MD_RS_MEMBERS], 0);
   }
   cr_assert_eq(rollback_log(p, name, &count), rbid, "a rollback happened");
   cr_assert_geq(md_rs_await_primary(&m), 0);
   for (int i = 0; i < MD_RS_MEMBERS; i++) {
      cr_assert_eq(md_rs_read_v(m.host[i], name, 1, false), 1, "the write is missing on %s",
                   m.host[i]);
   }
   bson_free(name);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}
