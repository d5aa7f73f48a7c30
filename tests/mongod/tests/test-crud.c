/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * CRUD through libmongoc, focused on what liboutbox does: guarded updates on _id/version,
 * $push {$each} onto arrays of documents, $pull by condition, unique and partial indexes,
 * hints, findAndModify and bulk updates.
 */
#include <criterion/criterion.h>

#include "tests/test-util.h"

typedef struct {
   mongoc_client_t *client;
   mongoc_collection_t *coll;
   char *name;
} fixture_t;

static fixture_t fx;

static void
setup(void)
{
   fx.client = md_test_client("crud", false);
   fx.name = md_test_name("crud");
   fx.coll = mongoc_client_get_collection(fx.client, "mdtest", fx.name);
}

static void
teardown(void)
{
   mongoc_collection_destroy(fx.coll);
   mongoc_client_destroy(fx.client);
   bson_free(fx.name);
}

static void
insert(const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   cr_assert_not_null(doc, "%s", error.message);
   cr_assert(mongoc_collection_insert_one(fx.coll, doc, NULL, NULL, &error), "%s", error.message);
   bson_destroy(doc);
}

/* Runs update_one and returns modifiedCount (or -1 on error, with *error set). */
static int
update_one(const char *filter, const char *update, bson_error_t *error)
{
   bson_t *f = bson_new_from_json((const uint8_t *)filter, -1, error);
   bson_t *u = bson_new_from_json((const uint8_t *)update, -1, error);
   bson_t reply;
   bson_iter_t it;
   cr_assert(f && u);
   bool ok = mongoc_collection_update_one(fx.coll, f, u, NULL, &reply, error);
   int modified = -1;
   if (ok && bson_iter_init_find(&it, &reply, "modifiedCount")) {
      modified = bson_iter_int32(&it);
   }
   bson_destroy(&reply);
   bson_destroy(f);
   bson_destroy(u);
   return modified;
}

/* The document with _id `id` as relaxed JSON (caller frees), or NULL. */
static char *
find_json(int id)
{
   bson_t *filter = BCON_NEW("_id", BCON_INT32(id));
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(fx.coll, filter, NULL, NULL);
   const bson_t *doc;
   char *json = mongoc_cursor_next(cur, &doc) ? md_test_json(doc) : NULL;
   bson_error_t error;
   cr_assert(!mongoc_cursor_error(cur, &error), "%s", error.message);
   mongoc_cursor_destroy(cur);
   bson_destroy(filter);
   return json;
}

static void
assert_doc(int id, const char *want)
{
   char *got = find_json(id);
   cr_assert_not_null(got);
   cr_assert_str_eq(got, want);
   bson_free(got);
}

TestSuite(crud, .init = setup, .fini = teardown);

Test(crud, insert_find_update_delete)
{
   bson_error_t error;
   insert("{\"_id\": 1, \"a\": {\"b\": 1}}");
   insert("{\"_id\": 2, \"a\": {\"b\": 2}}");
   cr_assert_eq(
      update_one("{\"_id\": 1}", "{\"$set\": {\"a.b\": 5}, \"$inc\": {\"n\": 1}}", &error), 1);
   assert_doc(1, "{ \"_id\" : 1, \"a\" : { \"b\" : 5 }, \"n\" : 1 }");
   bson_t *f = BCON_NEW("a.b", "{", "$gte", BCON_INT32(2), "}");
   int64_t n = mongoc_collection_count_documents(fx.coll, f, NULL, NULL, NULL, &error);
   cr_assert_eq(n, 2, "count_documents: %s", error.message);
   bson_t reply;
   cr_assert(mongoc_collection_delete_one(fx.coll, f, NULL, &reply, &error));
   bson_destroy(&reply);
   cr_assert_null(find_json(1));
   bson_destroy(f);
}

Test(crud, guarded_push_each_and_pull_documents)
{
   bson_error_t error;
   insert("{\"_id\": 1, \"version\": 1, \"eventSeq\": 2, "
          "\"events\": [{\"id\": 1, \"t\": \"a\"}, {\"id\": 2, \"t\": \"b\"}]}");
   const char *guard = "{\"_id\": 1, \"version\": 1, \"eventSeq\": 2, "
                       "\"events.999\": {\"$exists\": false}}";
   const char *push = "{\"$inc\": {\"version\": 1, \"eventSeq\": 2}, \"$push\": {\"events\": "
                      "{\"$each\": [{\"id\": 3, \"t\": \"c\"}, {\"id\": 4, \"t\": \"d\"}]}}}";
   cr_assert_eq(update_one(guard, push, &error), 1, "%s", error.message);
   /* The same guard no longer matches: version and eventSeq moved on. */
   cr_assert_eq(update_one(guard, push, &error), 0);
   cr_assert_eq(update_one("{\"_id\": 1}", "{\"$pull\": {\"events\": {\"id\": 2}}}", &error), 1);
   assert_doc(1, "{ \"_id\" : 1, \"version\" : 2, \"eventSeq\" : 4, \"events\" : [ "
                 "{ \"id\" : 1, \"t\" : \"a\" }, { \"id\" : 3, \"t\" : \"c\" }, "
                 "{ \"id\" : 4, \"t\" : \"d\" } ] }");
   cr_assert_eq(
      update_one("{\"_id\": 1}", "{\"$pull\": {\"events\": {\"id\": {\"$in\": [1, 4]}}}}", &error),
      1);
   assert_doc(1, "{ \"_id\" : 1, \"version\" : 2, \"eventSeq\" : 4, \"events\" : [ "
                 "{ \"id\" : 3, \"t\" : \"c\" } ] }");
   /* Pulling nothing is a no-op: modifiedCount 0. */
   cr_assert_eq(update_one("{\"_id\": 1}", "{\"$pull\": {\"events\": {\"id\": 99}}}", &error), 0);
}

Test(crud, push_slice_position_and_elem_match)
{
   bson_error_t error;
   insert("{\"_id\": 1, \"a\": [1, 2, 3]}");
   cr_assert_eq(update_one("{\"_id\": 1}",
                           "{\"$push\": {\"a\": {\"$each\": [0], \"$position\": 0, "
                           "\"$slice\": 3}}}",
                           &error),
                1, "%s", error.message);
   assert_doc(1, "{ \"_id\" : 1, \"a\" : [ 0, 1, 2 ] }");
   insert("{\"_id\": 2, \"ev\": [{\"k\": 1, \"s\": \"x\"}, {\"k\": 2, \"s\": \"y\"}]}");
   cr_assert_eq(update_one("{\"ev\": {\"$elemMatch\": {\"k\": 2, \"s\": \"y\"}}, "
                           "\"ev\": {\"$size\": 2}}",
                           "{\"$set\": {\"ev.$.s\": \"z\"}}", &error),
                1, "%s", error.message);
   assert_doc(2, "{ \"_id\" : 2, \"ev\" : [ { \"k\" : 1, \"s\" : \"x\" }, "
                 "{ \"k\" : 2, \"s\" : \"z\" } ] }");
}

Test(crud, duplicate_key_is_11000_with_key_pattern)
{
   bson_error_t error;
   bson_t reply;
   insert("{\"_id\": 7}");
   bson_t *doc = BCON_NEW("_id", BCON_INT32(7));
   cr_assert(!mongoc_collection_insert_one(fx.coll, doc, NULL, &reply, &error));
   cr_assert_eq(error.code, 11000, "%d %s", error.code, error.message);
   char *json = md_test_json(&reply);
   cr_assert_not_null(strstr(json, "keyPattern"), "%s", json);
   cr_assert_not_null(strstr(json, "keyValue"), "%s", json);
   bson_free(json);
   bson_destroy(&reply);
   bson_destroy(doc);
}

static bool
create_index(const char *json, bson_error_t *error)
{
   bson_t *spec = bson_new_from_json((const uint8_t *)json, -1, error);
   cr_assert_not_null(spec);
   bson_t *cmd =
      BCON_NEW("createIndexes", BCON_UTF8(fx.name), "indexes", "[", BCON_DOCUMENT(spec), "]");
   bool ok = mongoc_collection_write_command_with_opts(fx.coll, cmd, NULL, NULL, error);
   bson_destroy(cmd);
   bson_destroy(spec);
   return ok;
}

Test(crud, unique_partial_index)
{
   bson_error_t error;
   cr_assert(create_index("{\"key\": {\"email\": 1}, \"name\": \"email_1\", \"unique\": true, "
                          "\"partialFilterExpression\": {\"email\": {\"$exists\": true}}}",
                          &error),
             "%s", error.message);
   insert("{\"_id\": 1}");
   insert("{\"_id\": 2}"); /* outside the partial index: no conflict */
   insert("{\"_id\": 3, \"email\": \"a@x\"}");
   bson_t *doc = BCON_NEW("_id", BCON_INT32(4), "email", BCON_UTF8("a@x"));
   cr_assert(!mongoc_collection_insert_one(fx.coll, doc, NULL, NULL, &error));
   cr_assert_eq(error.code, 11000);
   /* An update that would create the duplicate fails the same way. */
   cr_assert_eq(update_one("{\"_id\": 1}", "{\"$set\": {\"email\": \"a@x\"}}", &error), -1);
   cr_assert_eq(error.code, 11000);
   bson_destroy(doc);
}

Test(crud, hint_must_name_an_index)
{
   bson_error_t error;
   const bson_t *doc;
   cr_assert(create_index("{\"key\": {\"pending\": 1}, \"name\": \"pending_1\", "
                          "\"partialFilterExpression\": {\"pending\": true}}",
                          &error));
   insert("{\"_id\": 1, \"pending\": true}");
   bson_t *filter = BCON_NEW("pending", BCON_BOOL(true));
   bson_t *good = BCON_NEW("hint", BCON_UTF8("pending_1"));
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(fx.coll, filter, good, NULL);
   cr_assert(mongoc_cursor_next(cur, &doc));
   mongoc_cursor_destroy(cur);
   bson_t *bad = BCON_NEW("hint", BCON_UTF8("nope_1"));
   cur = mongoc_collection_find_with_opts(fx.coll, filter, bad, NULL);
   cr_assert(!mongoc_cursor_next(cur, &doc));
   cr_assert(mongoc_cursor_error(cur, &error));
   cr_assert_eq(error.code, 2);
   mongoc_cursor_destroy(cur);
   bson_destroy(filter);
   bson_destroy(good);
   bson_destroy(bad);
}

Test(crud, find_and_modify_returns_new)
{
   bson_error_t error;
   bson_t reply;
   insert("{\"_id\": 1, \"n\": 1}");
   bson_t *query = BCON_NEW("_id", BCON_INT32(1));
   bson_t *update = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
   mongoc_find_and_modify_opts_t *opts = mongoc_find_and_modify_opts_new();
   mongoc_find_and_modify_opts_set_update(opts, update);
   mongoc_find_and_modify_opts_set_flags(opts, MONGOC_FIND_AND_MODIFY_RETURN_NEW);
   cr_assert(mongoc_collection_find_and_modify_with_opts(fx.coll, query, opts, &reply, &error),
             "%s", error.message);
   md_test_assert_json(&reply, "value.n", "2");
   md_test_assert_json(&reply, "lastErrorObject.updatedExisting", "true");
   bson_destroy(&reply);
   mongoc_find_and_modify_opts_destroy(opts);
   bson_destroy(update);
   bson_destroy(query);
}

Test(crud, bulk_updates_count_int32)
{
   bson_error_t error;
   bson_t reply;
   for (int i = 0; i < 20; i++) {
      char json[64];
      snprintf(json, sizeof json, "{\"_id\": %d, \"v\": 0}", i);
      insert(json);
   }
   mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(fx.coll, NULL);
   for (int i = 0; i < 20; i++) {
      bson_t *f = BCON_NEW("_id", BCON_INT32(i), "v", BCON_INT32(0));
      bson_t *u = BCON_NEW("$set", "{", "v", BCON_INT32(i % 2), "}");
      cr_assert(mongoc_bulk_operation_update_one_with_opts(bulk, f, u, NULL, &error));
      bson_destroy(f);
      bson_destroy(u);
   }
   cr_assert(mongoc_bulk_operation_execute(bulk, &reply, &error), "%s", error.message);
   md_test_assert_json(&reply, "nMatched", "20");
   md_test_assert_json(&reply, "nModified", "10");
   bson_destroy(&reply);
   mongoc_bulk_operation_destroy(bulk);
}

Test(crud, upsert_reports_id)
{
   bson_error_t error;
   bson_t reply;
   bson_t *f = BCON_NEW("_id", BCON_UTF8("k"), "a", BCON_INT32(1));
   bson_t *u = BCON_NEW("$set", "{", "b", BCON_INT32(2), "}");
   bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
   cr_assert(mongoc_collection_update_one(fx.coll, f, u, opts, &reply, &error), "%s",
             error.message);
   md_test_assert_json(&reply, "upsertedId", "\"k\"");
   md_test_assert_json(&reply, "matchedCount", "0");
   bson_destroy(&reply);
   bson_destroy(opts);
   bson_destroy(u);
   bson_destroy(f);
}

Test(crud, oversized_insert_is_rejected)
{
   bson_error_t error;
   size_t len = 16 * 1024 * 1024 + 10;
   char *big = bson_malloc(len + 1);
   memset(big, 'x', len);
   big[len] = '\0';
   bson_t *doc = BCON_NEW("_id", BCON_INT32(1), "s", BCON_UTF8(big));
   cr_assert(!mongoc_collection_insert_one(fx.coll, doc, NULL, NULL, &error));
   cr_assert_neq(error.code, 0);
   bson_destroy(doc);
   bson_free(big);
}
