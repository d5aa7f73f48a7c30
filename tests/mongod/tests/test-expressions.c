/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What outbox-relay groups need from the server, through libmongoc: a lease taken with a
 * pipeline-style findAndModify judged by the server's $$NOW (a live lease is refused, an
 * expired one is taken, renewals are fenced by owner and epoch), $$NOW fixed for a whole
 * command, and change streams filtered by ranges of $toHashedIndexKey over the document key.
 * The same tests run against a real MongoDB 6.0 replica set (OUTBOX_TEST_MONGODB_URI).
 *
 * The test `without_hash` needs test-mongod started with --without-expression
 * toHashedIndexKey (OUTBOX_TEST_MONGOD_WITHOUT_EXPRESSION set by meson); it is skipped
 * elsewhere, and the other tests are skipped on such a server.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/test-util.h"

typedef struct {
   mongoc_client_t *client;
   mongoc_collection_t *coll;
   char *name;
} fixture_t;

static fixture_t fx;

/* One suite-wide timeout: per-test .timeout values made Criterion 2.4.1 leak 48 bytes under
 * LSan here (seen with two tests of different timeouts in one run). */
TestSuite(expressions, .timeout = 90);

static bool
without_hash(void)
{
   return getenv("OUTBOX_TEST_MONGOD_WITHOUT_EXPRESSION") && getenv("OUTBOX_TEST_MONGOD_PID");
}

static void
setup(void)
{
   if (without_hash()) {
      cr_skip_test("this server was started without $toHashedIndexKey");
   }
   fx.client = md_test_client("expressions", false);
   fx.name = md_test_name("expr");
   fx.coll = mongoc_client_get_collection(fx.client, "mdtest", fx.name);
}

static void
teardown(void)
{
   mongoc_collection_destroy(fx.coll);
   mongoc_client_destroy(fx.client);
   bson_free(fx.name);
}

static bson_t *
json(const char *s)
{
   bson_error_t error;
   bson_t *b = bson_new_from_json((const uint8_t *)s, -1, &error);
   cr_assert_not_null(b, "%s: %s", s, error.message);
   return b;
}

static int64_t
monotonic_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int ms)
{
   struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
   nanosleep(&ts, NULL);
}

/* ---- leases ---------------------------------------------------------------------------- */

#define LEASE_TTL_MS 1500

/* Tries to take lease `id` for `owner` as outbox-relay does: only if free or expired by the
 * server's clock; epoch + 1; expiry = $$NOW + TTL. Returns the new lease (caller destroys)
 * or NULL if it is held by someone else. */
static bson_t *
acquire(const char *id, const char *owner)
{
   char *q = bson_strdup_printf("{\"_id\": \"%s\", \"$or\": [{\"owner\": null}, {\"$expr\": "
                                "{\"$lt\": [\"$expiresAt\", \"$$NOW\"]}}]}",
                                id);
   char *u = bson_strdup_printf(
      "{\"u\": [{\"$set\": {\"owner\": \"%s\", \"epoch\": {\"$add\": [{\"$ifNull\": "
      "[\"$epoch\", 0]}, 1]}, \"expiresAt\": {\"$add\": [\"$$NOW\", %d]}}}]}",
      owner, LEASE_TTL_MS);
   bson_t *query = json(q), *update = json(u), pipeline, reply;
   mongoc_find_and_modify_opts_t *opts = mongoc_find_and_modify_opts_new();
   bson_error_t error;
   bson_iter_t it;
   bson_t *lease = NULL;

   bson_iter_init_find(&it, update, "u");
   bson_init_static(&pipeline, bson_iter_value(&it)->value.v_doc.data,
                    bson_iter_value(&it)->value.v_doc.data_len);
   mongoc_find_and_modify_opts_set_update(opts, &pipeline);
   mongoc_find_and_modify_opts_set_flags(opts, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
   cr_assert(mongoc_collection_find_and_modify_with_opts(fx.coll, query, opts, &reply, &error),
             "findAndModify: %s", error.message);
   if (bson_iter_init_find(&it, &reply, "value") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      lease = bson_new_from_data(bson_iter_value(&it)->value.v_doc.data,
                                 bson_iter_value(&it)->value.v_doc.data_len);
   }
   bson_destroy(&reply);
   mongoc_find_and_modify_opts_destroy(opts);
   bson_destroy(query);
   bson_destroy(update);
   bson_free(q);
   bson_free(u);
   return lease;
}

static int64_t
get_int64(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, doc, key), "no %s", key);
   return bson_iter_as_int64(&it);
}

static int64_t
get_date(const bson_t *doc, const char *key)
{
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, doc, key) && BSON_ITER_HOLDS_DATE_TIME(&it), "no date %s",
             key);
   return bson_iter_date_time(&it);
}

/* Renews with `update` and a pipeline, fenced by owner and epoch; returns matchedCount. */
static int
renew(const char *id, const char *owner, int64_t epoch)
{
   char *f = bson_strdup_printf("{\"_id\": \"%s\", \"owner\": \"%s\", \"epoch\": %lld}", id, owner,
                                (long long)epoch);
   char *u = bson_strdup_printf(
      "{\"u\": [{\"$set\": {\"expiresAt\": {\"$add\": [\"$$NOW\", %d]}}}]}", LEASE_TTL_MS);
   bson_t *filter = json(f), *update = json(u), pipeline, reply;
   bson_error_t error;
   bson_iter_t it;
   int matched;

   bson_iter_init_find(&it, update, "u");
   bson_init_static(&pipeline, bson_iter_value(&it)->value.v_doc.data,
                    bson_iter_value(&it)->value.v_doc.data_len);
   cr_assert(mongoc_collection_update_one(fx.coll, filter, &pipeline, NULL, &reply, &error),
             "renew: %s", error.message);
   matched = (int)get_int64(&reply, "matchedCount");
   bson_destroy(&reply);
   bson_destroy(filter);
   bson_destroy(update);
   bson_free(f);
   bson_free(u);
   return matched;
}

Test(expressions, lease_by_server_clock, .init = setup, .fini = teardown)
{
   bson_t *first, *second, *doc = json("{\"_id\": \"p7\"}");
   bson_error_t error;
   int64_t deadline, tries = 0;

   cr_assert(mongoc_collection_insert_one(fx.coll, doc, NULL, NULL, &error), "%s", error.message);
   first = acquire("p7", "relay-a");
   cr_assert_not_null(first, "a free lease is taken");
   cr_assert_eq(get_int64(first, "epoch"), 1);
   /* While it is live, another member gets nothing, however often it asks. */
   cr_assert_null(acquire("p7", "relay-b"), "a live lease must not be taken");
   cr_assert_eq(renew("p7", "relay-a", 1), 1, "the owner renews");
   cr_assert_eq(renew("p7", "relay-b", 1), 0, "a stranger cannot renew");
   cr_assert_eq(renew("p7", "relay-a", 0), 0, "a stale epoch cannot renew");
   bson_destroy(first);
   first = acquire("p7", "relay-a");
   cr_assert_null(first, "the owner cannot take it twice either (not expired)");
   /* Poll until the server's clock passes the expiry (TTL 1.5 s; generous deadline). */
   deadline = monotonic_ms() + 30000;
   second = NULL;
   while (!second && monotonic_ms() < deadline) {
      second = acquire("p7", "relay-b");
      tries++;
      if (!second) {
         sleep_ms(100);
      }
   }
   cr_assert_not_null(second, "an expired lease is taken (after %lld tries)", (long long)tries);
   cr_assert_gt(tries, 1, "the lease was live at first");
   cr_assert_eq(get_int64(second, "epoch"), 2, "epoch is the fencing token");
   md_test_assert_json(second, "owner", "\"relay-b\"");
   cr_assert_eq(renew("p7", "relay-a", 1), 0, "the old owner is fenced off");
   cr_assert_eq(renew("p7", "relay-b", 2), 1);
   bson_destroy(second);
   bson_destroy(doc);
}

/* The expiry written is $$NOW + TTL, and $$NOW is one value for a whole command: an update of
 * many documents and an aggregation over many give each the same instant. */
Test(expressions, now_is_fixed_per_command, .init = setup, .fini = teardown)
{
   bson_error_t error;
   bson_t *filter = json("{}"), reply;
   bson_t *pipeline = json("{\"u\": [{\"$set\": {\"t\": \"$$NOW\", \"ct\": \"$$CLUSTER_TIME\"}}]}");
   bson_t *agg = json("{\"pipeline\": [{\"$addFields\": {\"n\": \"$$NOW\", \"late\": {\"$lt\": "
                      "[\"$t\", \"$$NOW\"]}, \"age\": {\"$subtract\": [\"$$NOW\", \"$t\"]}}}]}");
   bson_t stages, u;
   bson_iter_t it;
   const bson_t *doc;
   int64_t t = -1, n = -1;
   int count = 0;

   for (int i = 0; i < 50; i++) {
      bson_t *d = BCON_NEW("_id", BCON_INT32(i));
      cr_assert(mongoc_collection_insert_one(fx.coll, d, NULL, NULL, &error), "%s", error.message);
      bson_destroy(d);
   }
   bson_iter_init_find(&it, pipeline, "u");
   bson_init_static(&u, bson_iter_value(&it)->value.v_doc.data,
                    bson_iter_value(&it)->value.v_doc.data_len);
   cr_assert(mongoc_collection_update_many(fx.coll, filter, &u, NULL, &reply, &error), "%s",
             error.message);
   cr_assert_eq(get_int64(&reply, "modifiedCount"), 50);
   bson_destroy(&reply);
   sleep_ms(20);
   bson_iter_init_find(&it, agg, "pipeline");
   bson_init_static(&stages, bson_iter_value(&it)->value.v_doc.data,
                    bson_iter_value(&it)->value.v_doc.data_len);
   mongoc_cursor_t *cursor =
      mongoc_collection_aggregate(fx.coll, MONGOC_QUERY_NONE, &stages, NULL, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      cr_assert(bson_iter_init_find(&it, doc, "ct") && BSON_ITER_HOLDS_TIMESTAMP(&it));
      t = t < 0 ? get_date(doc, "t") : t;
      n = n < 0 ? get_date(doc, "n") : n;
      cr_assert_eq(get_date(doc, "t"), t, "one $$NOW per update command");
      cr_assert_eq(get_date(doc, "n"), n, "one $$NOW per aggregate command");
      md_test_assert_json(doc, "late", "true");
      cr_assert_eq(get_int64(doc, "age"), n - t);
      count++;
   }
   cr_assert_not(mongoc_cursor_error(cursor, &error), "%s", error.message);
   cr_assert_eq(count, 50);
   cr_assert_gt(n, t, "the aggregate ran later than the update");
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);
   bson_destroy(pipeline);
   bson_destroy(agg);
}

/* ---- hash partitions ------------------------------------------------------------------- */

#define RANGE_LOW (-4611686018427387904LL) /* [-2^62, 2^62): the middle half of the hashes */
#define RANGE_HIGH 4611686018427387904LL

/* Ids whose hashes MongoDB publishes (see engine/test-hash.c for the sources). */
static const struct {
   const char *id_json;
   int64_t hash;
} published[] = {
   {"{\"_id\": {\"$oid\": \"010203040506070809101112\"}}", -5588663249627035708LL},
   {"{\"_id\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}}",
    6084661258071355978LL},
   {"{\"_id\": \"abc\"}", 8478485326885698097LL},
   {"{\"_id\": {\"$numberInt\": \"42\"}}", -944302157085130861LL},
   {"{\"_id\": {\"$numberLong\": \"1\"}}", 5902408780260971510LL},
   {"{\"_id\": {\"$numberInt\": \"-1\"}}", 1140205862565771219LL},
};

static const char *sentinel_json = "{\"_id\": \"string to hash\"}"; /* 763543691661428748 */

static void
insert_json(const char *s)
{
   bson_error_t error;
   bson_t *doc = json(s);
   cr_assert(mongoc_collection_insert_one(fx.coll, doc, NULL, NULL, &error), "%s: %s", s,
             error.message);
   bson_destroy(doc);
}

/* The ids of the collection whose hash is in [RANGE_LOW, RANGE_HIGH), computed by the server's
 * own $toHashedIndexKey; the published hashes are checked on the way. Returns the count and
 * fills `ids` with their relaxed JSON (caller frees). */
static int
expected_in_range(char **ids, int max)
{
   bson_t *stages = json("{\"p\": [{\"$project\": {\"h\": {\"$toHashedIndexKey\": \"$_id\"}}}]}");
   bson_t p;
   bson_iter_t it;
   const bson_t *doc;
   int n = 0, checked = 0;

   bson_iter_init_find(&it, stages, "p");
   bson_init_static(&p, bson_iter_value(&it)->value.v_doc.data,
                    bson_iter_value(&it)->value.v_doc.data_len);
   mongoc_cursor_t *cursor =
      mongoc_collection_aggregate(fx.coll, MONGOC_QUERY_NONE, &p, NULL, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t h, id;
      cr_assert(bson_iter_init_find(&h, doc, "h") && BSON_ITER_HOLDS_INT64(&h));
      cr_assert(bson_iter_init_find(&id, doc, "_id"));
      bson_t one = BSON_INITIALIZER;
      bson_append_value(&one, "_id", 3, bson_iter_value(&id));
      char *id_json = md_test_json(&one);
      for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
         bson_t *want = json(published[i].id_json);
         char *want_json = md_test_json(want);
         if (strcmp(want_json, id_json) == 0) {
            cr_assert_eq(bson_iter_int64(&h), published[i].hash, "%s", published[i].id_json);
            checked++;
         }
         bson_free(want_json);
         bson_destroy(want);
      }
      if (bson_iter_int64(&h) >= RANGE_LOW && bson_iter_int64(&h) < RANGE_HIGH) {
         cr_assert_lt(n, max);
         ids[n++] = id_json;
      } else {
         bson_free(id_json);
      }
      bson_destroy(&one);
   }
   cr_assert_not(mongoc_cursor_error(cursor, NULL));
   cr_assert_eq(checked, (int)(sizeof published / sizeof published[0]),
                "every published id was checked");
   mongoc_cursor_destroy(cursor);
   bson_destroy(stages);
   return n;
}

static mongoc_change_stream_t *
watch_range(void)
{
   char *s = bson_strdup_printf(
      "{\"pipeline\": [{\"$match\": {\"$expr\": {\"$and\": ["
      "{\"$gte\": [{\"$toHashedIndexKey\": \"$documentKey._id\"}, {\"$numberLong\": \"%lld\"}]},"
      "{\"$lt\": [{\"$toHashedIndexKey\": \"$documentKey._id\"}, {\"$numberLong\": \"%lld\"}]}"
      "]}}}]}",
      (long long)RANGE_LOW, (long long)RANGE_HIGH);
   bson_t *pipeline = json(s);
   bson_t *opts = BCON_NEW("maxAwaitTimeMS", BCON_INT32(500));
   mongoc_change_stream_t *cs = mongoc_collection_watch(fx.coll, pipeline, opts);
   const bson_t *err_doc;
   bson_error_t error;

   cr_assert_not(mongoc_change_stream_error_document(cs, &error, &err_doc), "watch: %s",
                 error.message);
   bson_destroy(opts);
   bson_destroy(pipeline);
   bson_free(s);
   return cs;
}

Test(expressions, change_stream_hash_range, .init = setup, .fini = teardown)
{
   mongoc_change_stream_t *cs;
   char *expected[128], *seen[128];
   int n_expected, n_seen = 0;
   bool sentinel = false;
   int64_t deadline;
   const bson_t *ev;
   bson_error_t error;

   /* Create the collection first: a stream on a missing collection is fine on 6.0, but this
    * keeps the stream's start unambiguous. */
   insert_json("{\"_id\": \"setup\"}");
   cs = watch_range();
   for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
      insert_json(published[i].id_json);
   }
   for (int i = 0; i < 60; i++) {
      bson_oid_t oid;
      bson_t *d = bson_new();
      bson_oid_init(&oid, NULL);
      BSON_APPEND_OID(d, "_id", &oid);
      cr_assert(mongoc_collection_insert_one(fx.coll, d, NULL, NULL, &error), "%s", error.message);
      bson_destroy(d);
   }
   n_expected = expected_in_range(expected, 128);
   /* "setup" was inserted before the stream opened: drop it from what must be seen. */
   for (int i = 0; i < n_expected; i++) {
      if (strstr(expected[i], "\"setup\"")) {
         bson_free(expected[i]);
         expected[i--] = expected[--n_expected];
      }
   }
   cr_assert_gt(n_expected, 5, "a useful share falls in the range (%d)", n_expected);
   cr_assert_lt(n_expected, 60, "and a useful share outside it (%d)", n_expected);
   /* Everything before the sentinel (in range) has been delivered once it arrives. */
   insert_json(sentinel_json);
   deadline = monotonic_ms() + 60000;
   while (!sentinel && monotonic_ms() < deadline) {
      if (!mongoc_change_stream_next(cs, &ev)) {
         cr_assert_not(mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
         continue;
      }
      bson_iter_t it, key;
      cr_assert(bson_iter_init_find(&it, ev, "documentKey") && bson_iter_recurse(&it, &key));
      bson_t dk;
      bson_init_static(&dk, bson_iter_value(&it)->value.v_doc.data,
                       bson_iter_value(&it)->value.v_doc.data_len);
      char *id = md_test_json(&dk);
      if (strstr(id, "string to hash")) {
         sentinel = true;
         bson_free(id);
      } else {
         cr_assert_lt(n_seen, 128);
         seen[n_seen++] = id;
      }
   }
   cr_assert(sentinel, "the in-range sentinel arrived");
   cr_assert_eq(n_seen, n_expected, "saw %d events, %d ids are in the range", n_seen, n_expected);
   for (int i = 0; i < n_expected; i++) {
      bool found = false;
      for (int j = 0; j < n_seen && !found; j++) {
         found = strcmp(expected[i], seen[j]) == 0;
      }
      cr_expect(found, "%s is in the range but its event did not come", expected[i]);
   }
   for (int i = 0; i < n_expected; i++) {
      bson_free(expected[i]);
   }
   for (int i = 0; i < n_seen; i++) {
      bson_free(seen[i]);
   }
   mongoc_change_stream_destroy(cs);
}

/* ---- a server without the expression (test-mongod --without-expression) --------------- */

static void
assert_168(const bson_error_t *error, const bson_t *reply, const char *message, const char *what)
{
   cr_assert_eq(error->code, 168, "%s: %u %s", what, error->code, error->message);
   cr_assert_str_eq(error->message, message, "%s", what);
   if (reply) {
      md_test_assert_json(reply, "codeName", "\"InvalidPipelineOperator\"");
   }
}

Test(expressions, without_hash)
{
   bson_error_t error;
   bson_t reply;
   const bson_t *doc, *err_doc;

   if (!without_hash()) {
      cr_skip_test("needs test-mongod --without-expression toHashedIndexKey");
   }
   fx.client = md_test_client("expressions", false);
   fx.name = md_test_name("nohash");
   fx.coll = mongoc_client_get_collection(fx.client, "mdtest", fx.name);
   insert_json("{\"_id\": 1}");

   bson_t *agg =
      BCON_NEW("aggregate", BCON_UTF8(fx.name), "pipeline", "[", "{", "$addFields", "{", "h", "{",
               "$toHashedIndexKey", BCON_UTF8("$_id"), "}", "}", "}", "]", "cursor", "{", "}");
   cr_assert_not(mongoc_collection_command_simple(fx.coll, agg, NULL, &reply, &error));
   assert_168(&error, &reply,
              "Invalid $addFields :: caused by :: Unrecognized expression '$toHashedIndexKey'",
              "aggregate");
   bson_destroy(&reply);
   bson_destroy(agg);

   bson_t *filter = json("{\"$expr\": {\"$gte\": [{\"$toHashedIndexKey\": \"$_id\"}, 0]}}");
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(fx.coll, filter, NULL, NULL);
   cr_assert_not(mongoc_cursor_next(cursor, &doc));
   cr_assert(mongoc_cursor_error_document(cursor, &error, &err_doc));
   assert_168(&error, err_doc, "Unrecognized expression '$toHashedIndexKey'", "find");
   mongoc_cursor_destroy(cursor);
   bson_destroy(filter);

   mongoc_change_stream_t *cs = NULL;
   bson_t *pipeline = json("{\"pipeline\": [{\"$match\": {\"$expr\": {\"$gte\": "
                           "[{\"$toHashedIndexKey\": \"$documentKey._id\"}, 0]}}}]}");
   cs = mongoc_collection_watch(fx.coll, pipeline, NULL);
   cr_assert(mongoc_change_stream_error_document(cs, &error, &err_doc), "watch must fail");
   assert_168(&error, err_doc, "Unrecognized expression '$toHashedIndexKey'", "watch");
   mongoc_change_stream_destroy(cs);
   bson_destroy(pipeline);
   teardown();
}
