/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The start-up probe (group/probe.c) against a real server (integration: test-mongod from
 * tests/fixtures/with-servers, or OUTBOX_TEST_MONGODB_URI): a server that computes
 * $toHashedIndexKey as the relay does is trusted to filter partitions (1); one without the
 * expression (test-mongod --without-expression toHashedIndexKey: the group-probe-without-hash
 * test) is not (-1); an empty collection (with the expression), or a server that cannot be
 * reached, leaves the question open (0).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <unistd.h>

#include "deployment.h" /* tests/fixtures: the run's database prefix */
#include "group/probe.h"

static mongoc_client_t *client;
static mongoc_collection_t *coll;

static void
setup(void)
{
   const char *uri = getenv("OUTBOX_TEST_MONGODB_URI");
   char name[64], db[96];
   bson_error_t error;

   mongoc_init();
   if (!uri) {
      cr_skip_test("OUTBOX_TEST_MONGODB_URI is not set (run through tests/fixtures/with-servers)");
   }
   client = mongoc_client_new(uri);
   cr_assert_not_null(client, "bad URI %s", uri);
   bson_snprintf(name, sizeof name, "probe_%ld", (long)getpid());
   deployment_db_name("outbox_test_probe", db, sizeof db);
   coll = mongoc_client_get_collection(client, db, name);
   mongoc_collection_drop(coll, &error);
}

static void
teardown(void)
{
   bson_error_t error;
   if (coll) {
      mongoc_collection_drop(coll, &error);
   }
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
   mongoc_cleanup();
}

TestSuite(probe, .init = setup, .fini = teardown);

static void
insert_one(void)
{
   bson_error_t error;
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1));
   cr_assert(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
}

/* The group-probe test runs against a server with $toHashedIndexKey (test-mongod, MongoDB
 * 6.0+), group-probe-without-hash against test-mongod without it (OUTBOX_TEST_PROBE=-1). */
Test(probe, the_server_is_trusted_only_when_it_hashes_like_the_relay)
{
   const char *want = getenv("OUTBOX_TEST_PROBE");
   int expected = want ? atoi(want) : 1;

   if (expected == -1 && !getenv("OUTBOX_TEST_MONGOD_PID")) {
      cr_skip_test("needs test-mongod started without $toHashedIndexKey, not a server given "
                   "by URI");
   }
   insert_one();
   cr_assert_eq(relay_group_probe(coll), expected);
}

/* An empty collection gives the expression nothing to run on: asked again later (a server
 * without the expression refuses the pipeline itself, empty or not). */
Test(probe, an_empty_collection_leaves_it_open)
{
   const char *want = getenv("OUTBOX_TEST_PROBE");
   cr_assert_eq(relay_group_probe(coll), want && atoi(want) == -1 ? -1 : 0);
}

/* A server that cannot be reached: asked again later, never taken for "cannot hash". */
Test(probe, an_unreachable_server_leaves_it_open)
{
   mongoc_client_t *down =
      mongoc_client_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=200&connectTimeoutMS=200");
   mongoc_collection_t *c = mongoc_client_get_collection(down, "outbox_test_probe", "none");
   cr_assert_eq(relay_group_probe(c), 0);
   mongoc_collection_destroy(c);
   mongoc_client_destroy(down);
}
