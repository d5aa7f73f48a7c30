/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Collection validators through libmongoc: create/collMod and listCollections, error 121
 * with errInfo on insert, update (operators, replacement, pipeline, upsert) and
 * findAndModify, validationLevel strict/moderate/off, validationAction warn,
 * bypassDocumentValidation, refused validators, and $jsonSchema in find. Commands are sent
 * raw so the server's own replies are checked. Runs unchanged against a real MongoDB 6.0.
 */
#include <criterion/criterion.h>

#include "tests/test-util.h"

static mongoc_client_t *client;
static char *name;

static void
setup(void)
{
   client = md_test_client("validation", false);
   name = md_test_name("validation");
}

static void
teardown(void)
{
   bson_t *drop = BCON_NEW("drop", BCON_UTF8(name));
   mongoc_client_command_simple(client, "mdtest", drop, NULL, NULL, NULL);
   bson_destroy(drop);
   mongoc_client_destroy(client);
   bson_free(name);
}

TestSuite(validation, .init = setup, .fini = teardown);

/* The validator of most tests: version must be a long >= 1 when present, name required. */
static const char *const schema =
   "{\"$jsonSchema\": {\"bsonType\": \"object\", \"required\": [\"name\"], \"properties\": "
   "{\"version\": {\"bsonType\": \"long\"}, \"name\": {\"bsonType\": \"string\"}}}}";

static bson_t *
json(const char *text)
{
   bson_error_t error;
   bson_t *b = bson_new_from_json((const uint8_t *)text, -1, &error);
   cr_assert_not_null(b, "bad JSON %s: %s", text, error.message);
   return b;
}

/* Runs {<cmd>: name, ...fields (JSON)}; returns the command's success, reply in *reply. */
static bool
run(const char *cmd, const char *fields, bson_t *reply, bson_error_t *error)
{
   bson_t *f = json(fields), *c = bson_new();
   BSON_APPEND_UTF8(c, cmd, name);
   bson_concat(c, f);
   bool ok = mongoc_client_command_simple(client, "mdtest", c, NULL, reply, error);
   bson_destroy(c);
   bson_destroy(f);
   return ok;
}

static void
run_ok(const char *cmd, const char *fields)
{
   bson_t reply;
   bson_error_t error;
   cr_assert(run(cmd, fields, &reply, &error), "%s %s: %s", cmd, fields, error.message);
   bson_iter_t it;
   cr_assert(!bson_iter_init_find(&it, &reply, "writeErrors"), "%s %s: write errors in %s", cmd,
             fields, md_test_json(&reply));
   bson_destroy(&reply);
}

static void
create_with(const char *options)
{
   run_ok("create", options);
}

/* Asserts a write command failed with writeErrors[0] code 121 and returns the reply. */
static void
write_refused(const char *cmd, const char *fields, bson_t *reply)
{
   bson_error_t error;
   cr_assert(run(cmd, fields, reply, &error), "%s: %s", cmd, error.message);
   md_test_assert_json(reply, "writeErrors.0.code", "121");
   md_test_assert_json(reply, "writeErrors.0.errmsg", "\"Document failed validation\"");
}

static char *
doc_json(int id)
{
   bson_t *filter = BCON_NEW("_id", BCON_INT32(id));
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", name);
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
   const bson_t *doc;
   char *out = mongoc_cursor_next(cur, &doc) ? md_test_json(doc) : NULL;
   mongoc_cursor_destroy(cur);
   mongoc_collection_destroy(coll);
   bson_destroy(filter);
   return out;
}

static void
assert_doc(int id, const char *want)
{
   char *got = doc_json(id);
   if (!want) {
      cr_assert_null(got, "document %d should not exist: %s", id, got);
      return;
   }
   cr_assert_not_null(got, "document %d is missing", id);
   cr_assert_str_eq(got, want);
   bson_free(got);
}

static char *
validator_options(void)
{
   return bson_strdup_printf("{\"validator\": %s}", schema);
}

Test(validation, list_collections_shows_options)
{
   char *opts = validator_options();
   create_with(opts);
   bson_t reply;
   bson_error_t error;
   bson_t *cmd =
      BCON_NEW("listCollections", BCON_INT32(1), "filter", "{", "name", BCON_UTF8(name), "}");
   cr_assert(mongoc_client_command_simple(client, "mdtest", cmd, NULL, &reply, &error), "%s",
             error.message);
   /* Only what was given: no validationLevel or validationAction by default. */
   md_test_assert_json(&reply, "cursor.firstBatch.0.options",
                       "{ \"validator\" : { \"$jsonSchema\" : { \"bsonType\" : \"object\", "
                       "\"required\" : [ \"name\" ], \"properties\" : { \"version\" : { "
                       "\"bsonType\" : \"long\" }, \"name\" : { \"bsonType\" : \"string\" } } "
                       "} } }");
   bson_destroy(&reply);
   run_ok("collMod", "{\"validationLevel\": \"moderate\", \"validationAction\": \"warn\"}");
   cr_assert(mongoc_client_command_simple(client, "mdtest", cmd, NULL, &reply, &error), "%s",
             error.message);
   md_test_assert_json(&reply, "cursor.firstBatch.0.options.validationLevel", "\"moderate\"");
   md_test_assert_json(&reply, "cursor.firstBatch.0.options.validationAction", "\"warn\"");
   md_test_assert_json(&reply, "cursor.firstBatch.0.options.validator.$jsonSchema.required",
                       "[ \"name\" ]");
   bson_destroy(&reply);
   bson_destroy(cmd);
   bson_free(opts);
}

Test(validation, insert_refused_with_err_info)
{
   char *opts = validator_options();
   create_with(opts);
   bson_t reply;
   write_refused("insert", "{\"documents\": [{\"_id\": 7, \"name\": \"a\", \"version\": 1}]}",
                 &reply);
   md_test_assert_json(
      &reply, "writeErrors.0.errInfo",
      "{ \"failingDocumentId\" : 7, \"details\" : { \"operatorName\" : \"$jsonSchema\", "
      "\"schemaRulesNotSatisfied\" : [ { \"operatorName\" : \"properties\", "
      "\"propertiesNotSatisfied\" : [ { \"propertyName\" : \"version\", \"details\" : [ { "
      "\"operatorName\" : \"bsonType\", \"specifiedAs\" : { \"bsonType\" : \"long\" }, "
      "\"reason\" : \"type did not match\", \"consideredValue\" : 1, \"consideredType\" : "
      "\"int\" } ] } ] } ] } }");
   bson_destroy(&reply);
   write_refused("insert", "{\"documents\": [{\"_id\": 8}]}", &reply);
   md_test_assert_json(&reply, "writeErrors.0.errInfo.details.schemaRulesNotSatisfied",
                       "[ { \"operatorName\" : \"required\", \"specifiedAs\" : { \"required\" : "
                       "[ \"name\" ] }, \"missingProperties\" : [ \"name\" ] } ]");
   bson_destroy(&reply);
   assert_doc(7, NULL);
   assert_doc(8, NULL);
   run_ok("insert", "{\"documents\": [{\"_id\": 9, \"name\": \"a\", \"version\": "
                    "{\"$numberLong\": \"1\"}}]}");
   bson_free(opts);
}

Test(validation, every_update_form_is_checked)
{
   char *opts = validator_options();
   create_with(opts);
   run_ok("insert", "{\"documents\": [{\"_id\": 1, \"name\": \"a\"}]}");
   bson_t reply;
   static const char *const updates[] = {
      "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"version\": 2.5}}}]}",
      "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$unset\": {\"name\": 1}}}]}",
      "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"other\": 1}}]}",
      "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": [{\"$set\": {\"name\": 5}}]}]}",
      "{\"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$set\": {\"x\": 1}}, \"upsert\": true}]}",
   };
   for (size_t i = 0; i < sizeof updates / sizeof updates[0]; i++) {
      write_refused("update", updates[i], &reply);
      bson_destroy(&reply);
   }
   assert_doc(1, "{ \"_id\" : 1, \"name\" : \"a\" }");
   assert_doc(2, NULL);
   /* findAndModify fails as a command, with errInfo beside the code. */
   bson_error_t error;
   cr_assert(!run("findAndModify",
                  "{\"query\": {\"_id\": 1}, \"update\": {\"$set\": "
                  "{\"name\": null}}}",
                  &reply, &error));
   cr_assert_eq(error.code, 121, "%s", error.message);
   md_test_assert_json(&reply, "codeName", "\"DocumentValidationFailure\"");
   md_test_assert_json(&reply, "errInfo.failingDocumentId", "1");
   md_test_assert_json(&reply, "errInfo.details.operatorName", "\"$jsonSchema\"");
   bson_destroy(&reply);
   assert_doc(1, "{ \"_id\" : 1, \"name\" : \"a\" }");
   run_ok("update", "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"name\": "
                    "\"b\"}}}]}");
   assert_doc(1, "{ \"_id\" : 1, \"name\" : \"b\" }");
   bson_free(opts);
}

Test(validation, levels_actions_and_bypass)
{
   char *opts = validator_options();
   create_with(opts);
   /* Written before the rules (bypass): it breaks them. */
   run_ok("insert", "{\"documents\": [{\"_id\": 1, \"version\": 1}], "
                    "\"bypassDocumentValidation\": true}");
   run_ok("insert", "{\"documents\": [{\"_id\": 2, \"name\": \"ok\"}]}");
   bson_t reply;
   write_refused("update",
                 "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"a\": "
                 "1}}}]}",
                 &reply);
   bson_destroy(&reply);
   /* moderate: the invalid document stays writable, a valid one may not become invalid. */
   run_ok("collMod", "{\"validationLevel\": \"moderate\"}");
   run_ok("update", "{\"updates\": [{\"q\": {\"_id\": 1}, \"u\": {\"$set\": {\"a\": 1}}}]}");
   write_refused("update",
                 "{\"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$unset\": "
                 "{\"name\": 1}}}]}",
                 &reply);
   bson_destroy(&reply);
   write_refused("insert", "{\"documents\": [{\"_id\": 3}]}", &reply);
   bson_destroy(&reply);
   /* bypassDocumentValidation on update and findAndModify. */
   run_ok("update", "{\"updates\": [{\"q\": {\"_id\": 2}, \"u\": {\"$set\": {\"name\": 1}}}], "
                    "\"bypassDocumentValidation\": true}");
   bson_error_t error;
   cr_assert(run("findAndModify",
                 "{\"query\": {\"_id\": 2}, \"update\": {\"$set\": {\"v\": "
                 "1}}, \"bypassDocumentValidation\": true}",
                 &reply, &error),
             "%s", error.message);
   bson_destroy(&reply);
   /* warn: accepted (and logged by the server). */
   run_ok("collMod", "{\"validationLevel\": \"strict\", \"validationAction\": \"warn\"}");
   run_ok("insert", "{\"documents\": [{\"_id\": 4}]}");
   assert_doc(4, "{ \"_id\" : 4 }");
   /* off: not checked. */
   run_ok("collMod", "{\"validationLevel\": \"off\", \"validationAction\": \"error\"}");
   run_ok("insert", "{\"documents\": [{\"_id\": 5}]}");
   /* collMod can replace the validator itself. */
   run_ok("collMod", "{\"validationLevel\": \"strict\", \"validator\": {\"n\": {\"$gt\": 1}}}");
   write_refused("insert", "{\"documents\": [{\"_id\": 6, \"n\": 1}]}", &reply);
   md_test_assert_json(&reply, "writeErrors.0.errInfo.details",
                       "{ \"operatorName\" : \"$gt\", \"specifiedAs\" : { \"n\" : { \"$gt\" : 1 "
                       "} }, \"reason\" : \"comparison failed\", \"consideredValue\" : 1 }");
   bson_destroy(&reply);
   bson_free(opts);
}

Test(validation, query_operator_validator)
{
   /* MongoDB's manual example (jstests/core/doc_validation/doc_validation_error.js). */
   bson_t *cmd = BCON_NEW("create", BCON_UTF8(name), "validator", "{", "$or", "[", "{", "phone",
                          "{", "$type", BCON_UTF8("string"), "}", "}", "{", "email", "{", "$regex",
                          BCON_UTF8("@mongodb\\.com$"), "}", "}", "{", "status", "{", "$in", "[",
                          BCON_UTF8("Unknown"), BCON_UTF8("Incomplete"), "]", "}", "}", "]", "}");
   bson_error_t error;
   cr_assert(mongoc_client_command_simple(client, "mdtest", cmd, NULL, NULL, &error), "%s",
             error.message);
   bson_t reply;
   write_refused("insert", "{\"documents\": [{\"_id\": 1, \"email\": \"info@mongodb.co\"}]}",
                 &reply);
   md_test_assert_json(
      &reply, "writeErrors.0.errInfo.details",
      "{ \"operatorName\" : \"$or\", \"clausesNotSatisfied\" : [ { \"index\" : 0, \"details\" "
      ": { \"operatorName\" : \"$type\", \"specifiedAs\" : { \"phone\" : { \"$type\" : "
      "\"string\" } }, \"reason\" : \"field was missing\" } }, { \"index\" : 1, \"details\" : { "
      "\"operatorName\" : \"$regex\", \"specifiedAs\" : { \"email\" : { \"$regex\" : "
      "\"@mongodb\\\\.com$\" } }, \"reason\" : \"regular expression did not match\", "
      "\"consideredValue\" : \"info@mongodb.co\" } }, { \"index\" : 2, \"details\" : { "
      "\"operatorName\" : \"$in\", \"specifiedAs\" : { \"status\" : { \"$in\" : [ "
      "\"Unknown\", \"Incomplete\" ] } }, \"reason\" : \"field was missing\" } } ] }");
   bson_destroy(&reply);
   run_ok("insert", "{\"documents\": [{\"_id\": 2, \"status\": \"Unknown\"}]}");
   bson_destroy(cmd);
}

Test(validation, bad_validators_are_refused)
{
   bson_t reply;
   bson_error_t error;
   cr_assert(
      !run("create", "{\"validator\": {\"$jsonSchema\": {\"format\": \"date\"}}}", &reply, &error));
   cr_assert_eq(error.code, 9, "%s", error.message);
   cr_assert(strstr(error.message, "Parsing of collection validator failed") &&
                strstr(error.message, "'format' is not currently supported"),
             "%s", error.message);
   bson_destroy(&reply);
   create_with("{}");
   cr_assert(!run("collMod",
                  "{\"validator\": {\"$jsonSchema\": {\"bsonType\": \"long\", "
                  "\"type\": \"number\"}}}",
                  &reply, &error));
   cr_assert_eq(error.code, 9, "%s", error.message);
   bson_destroy(&reply);
   cr_assert(!run("collMod", "{\"validationLevel\": \"sometimes\"}", &reply, &error));
   cr_assert_eq(error.code, 2, "%s", error.message);
   bson_destroy(&reply);
   /* Nothing changed: the collection still takes anything. */
   run_ok("insert", "{\"documents\": [{\"_id\": 1}]}");
}

Test(validation, json_schema_in_find)
{
   create_with("{}");
   run_ok("insert", "{\"documents\": [{\"_id\": 1, \"version\": 1}, {\"_id\": 2, \"version\": "
                    "{\"$numberLong\": \"1\"}}]}");
   bson_t reply;
   bson_error_t error;
   cr_assert(run("find",
                 "{\"filter\": {\"$jsonSchema\": {\"properties\": {\"version\": "
                 "{\"bsonType\": \"long\"}}}}}",
                 &reply, &error),
             "%s", error.message);
   md_test_assert_json(&reply, "cursor.firstBatch", "[ { \"_id\" : 2, \"version\" : 1 } ]");
   bson_destroy(&reply);
}
