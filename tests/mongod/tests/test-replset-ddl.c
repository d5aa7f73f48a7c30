/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Catalog changes reach a secondary in history order (test-mongod --members 3
 * --election-timeout-ms 500 --enable-test-commands): a collection created, an index built
 * or a collection dropped on the primary is visible on a paused or lagging secondary only
 * once it has applied that point, as MongoDB's secondaries apply create, createIndexes and
 * drop oplog entries. One test at a time (CRITERION_JOBS=1); each heals what it broke.
 * Skipped against a server without testMemberFault (a real set).
 */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "tests/replset-util.h"
#include "tests/test-util.h"

/* Runs `cmd` (destroyed here) on mdtest of `host` with read preference secondaryPreferred;
 * returns whether it succeeded, the reply in `reply` (destroyed by the caller). */
static bool
run_on(const char *host, bson_t *cmd, bson_t *reply, bson_error_t *error)
{
   mongoc_client_t *client = md_rs_direct(host);
   mongoc_read_prefs_t *prefs = mongoc_read_prefs_new(MONGOC_READ_SECONDARY_PREFERRED);
   bool ok = mongoc_client_command_simple(client, "mdtest", cmd, prefs, reply, error);
   mongoc_read_prefs_destroy(prefs);
   bson_destroy(cmd);
   mongoc_client_destroy(client);
   return ok;
}

/* Whether `host`'s listCollections names mdtest.`name`. */
static bool
lists(const char *host, const char *name)
{
   bson_t reply;
   bson_error_t error;
   bson_iter_t it;
   cr_assert(run_on(host,
                    BCON_NEW("listCollections", BCON_INT32(1), "filter", "{", "name",
                             BCON_UTF8(name), "}"),
                    &reply, &error),
             "listCollections on %s: %s", host, error.message);
   bool found =
      bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch.0", &it);
   bson_destroy(&reply);
   return found;
}

/* How many documents `host`'s find returns from mdtest.`name`. */
static int
count_docs(const char *host, const char *name)
{
   bson_t reply;
   bson_error_t error;
   bson_iter_t it, batch;
   cr_assert(run_on(host, BCON_NEW("find", BCON_UTF8(name)), &reply, &error), "find: %s",
             error.message);
   int n = 0;
   if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch", &it) &&
       bson_iter_recurse(&it, &batch)) {
      while (bson_iter_next(&batch)) {
         n++;
      }
   }
   bson_destroy(&reply);
   return n;
}

/* Whether `host`'s listIndexes of mdtest.`name` holds an index called `index`. */
static bool
has_index(const char *host, const char *name, const char *index)
{
   bson_t reply;
   bson_error_t error;
   bson_iter_t it, batch, spec;
   cr_assert(run_on(host, BCON_NEW("listIndexes", BCON_UTF8(name)), &reply, &error),
             "listIndexes: %s", error.message);
   bool found = false;
   if (bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "cursor.firstBatch", &it) &&
       bson_iter_recurse(&it, &batch)) {
      while (bson_iter_next(&batch)) {
         found = found || (bson_iter_recurse(&batch, &spec) && bson_iter_find(&spec, "name") &&
                           strcmp(bson_iter_utf8(&spec, NULL), index) == 0);
      }
   }
   bson_destroy(&reply);
   return found;
}

static void
on_primary(const char *p, bson_t *cmd)
{
   bson_t reply;
   bson_error_t error;
   cr_assert(run_on(p, cmd, &reply, &error), "%s", error.message);
   bson_destroy(&reply);
}

/* A paused secondary sees neither a new collection nor an index built since, and still
 * sees a dropped one with its documents; after a resume, all three changes. */
Test(ddl, paused_secondary_sees_the_catalog_it_applied, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 1) % MD_RS_MEMBERS];
   char *made = md_test_name("made"), *gone = md_test_name("gone");
   on_primary(p, BCON_NEW("insert", BCON_UTF8(gone), "documents", "[", "{", "_id", BCON_INT32(1),
                          "}", "{", "_id", BCON_INT32(2), "}", "]", "writeConcern", "{", "w",
                          BCON_INT32(3), "}"));
   cr_assert(lists(s, gone));
   md_rs_fault(p, s, "pause");
   on_primary(p, BCON_NEW("create", BCON_UTF8(made)));
   on_primary(p, BCON_NEW("createIndexes", BCON_UTF8(gone), "indexes", "[", "{", "key", "{", "x",
                          BCON_INT32(1), "}", "name", "x_1", "}", "]"));
   on_primary(p, BCON_NEW("drop", BCON_UTF8(gone)));
   cr_assert(lists(p, made));
   cr_assert_not(lists(p, gone));
   cr_assert_not(lists(s, made), "a paused secondary saw a collection created since");
   cr_assert(lists(s, gone), "a paused secondary lost a collection dropped since");
   cr_assert_eq(count_docs(s, gone), 2, "a paused secondary lost the dropped documents");
   cr_assert_not(has_index(s, gone, "x_1"), "a paused secondary saw an index built since");
   md_rs_fault(p, s, "resume");
   cr_assert(lists(s, made));
   cr_assert_not(lists(s, gone));
   cr_assert_eq(count_docs(s, gone), 0);
   bson_free(gone);
   bson_free(made);
}

/* An index built on the primary shows on a secondary 600 ms behind only after its lag. */
Test(ddl, lagging_secondary_sees_an_index_after_its_lag, .fini = md_rs_heal_all)
{
   md_rs_members_t m;
   md_rs_members(&m);
   const char *p = m.host[m.primary], *s = m.host[(m.primary + 2) % MD_RS_MEMBERS];
   char *name = md_test_name("indexed");
   on_primary(p, BCON_NEW("insert", BCON_UTF8(name), "documents", "[", "{", "_id", BCON_INT32(1),
                          "}", "]", "writeConcern", "{", "w", BCON_INT32(3), "}"));
   md_rs_fault_ms(p, s, "lag", 600);
   on_primary(p, BCON_NEW("createIndexes", BCON_UTF8(name), "indexes", "[", "{", "key", "{", "y",
                          BCON_INT32(1), "}", "name", "y_1", "}", "]"));
   cr_assert(has_index(p, name, "y_1"));
   cr_assert_not(has_index(s, name, "y_1"), "the index reached the secondary before its lag");
   usleep(900 * 1000);
   cr_assert(has_index(s, name, "y_1"), "the index never reached the lagging secondary");
   bson_free(name);
}
