/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the engine's BSON comparison: MongoDB's type order, numeric equality across
 * int32/int64/double/decimal, and the ordering of documents and arrays.
 */
#include "engine-private.h"
#include "test-util.h"

/* Compares the values of fields a and b of a JSON document. */
static int
cmp_json(const char *json)
{
   bson_t *d = tm_json(json);
   bson_value_t a, b;
   int r;

   cr_assert(tm_path_get(d, "a", &a));
   cr_assert(tm_path_get(d, "b", &b));
   r = tm_value_compare(&a, &b);
   cr_assert_eq(-r, tm_value_compare(&b, &a), "antisymmetry for %s", json);
   bson_destroy(d);
   return r;
}

Test(compare, numbers_across_types)
{
   cr_assert_eq(cmp_json("{'a': 1, 'b': 1.0}"), 0);
   cr_assert_eq(cmp_json("{'a': 1, 'b': {'$numberLong': '1'}}"), 0);
   cr_assert_eq(cmp_json("{'a': 2, 'b': {'$numberDecimal': '2.0'}}"), 0);
   cr_assert_lt(cmp_json("{'a': 1, 'b': 1.5}"), 0);
   cr_assert_gt(cmp_json("{'a': {'$numberLong': '9007199254740993'}, 'b': 9007199254740992.0}"), 0);
   cr_assert_lt(cmp_json("{'a': {'$numberDouble': 'NaN'}, 'b': -1e308}"), 0);
   cr_assert_eq(cmp_json("{'a': {'$numberDouble': 'NaN'}, 'b': {'$numberDouble': 'NaN'}}"), 0);
   cr_assert_lt(cmp_json("{'a': {'$numberDecimal': '-Infinity'}, 'b': -5}"), 0);
}

Test(compare, canonical_type_order)
{
   /* MinKey < null < numbers < string < object < array < binData < oid < bool < date <
    * timestamp < regex < MaxKey */
   const char *chain[] = {
      "{'$minKey': 1}",
      "null",
      "5",
      "'x'",
      "{'x': 1}",
      "[1]",
      "{'$binary': {'base64': 'AA==', 'subType': '00'}}",
      "{'$oid': '000000000000000000000000'}",
      "false",
      "{'$date': 0}",
      "{'$timestamp': {'t': 1, 'i': 1}}",
      "{'$regularExpression': {'pattern': 'a', 'options': ''}}",
      "{'$maxKey': 1}",
   };
   char buf[512];

   for (size_t i = 0; i + 1 < sizeof chain / sizeof chain[0]; i++) {
      snprintf(buf, sizeof buf, "{'a': %s, 'b': %s}", chain[i], chain[i + 1]);
      cr_assert_lt(cmp_json(buf), 0, "%s", buf);
   }
}

Test(compare, strings_documents_arrays)
{
   cr_assert_lt(cmp_json("{'a': 'ab', 'b': 'b'}"), 0);
   cr_assert_lt(cmp_json("{'a': 'a', 'b': 'ab'}"), 0);
   cr_assert_eq(cmp_json("{'a': {'x': 1, 'y': 2}, 'b': {'x': 1.0, 'y': 2}}"), 0);
   cr_assert_neq(cmp_json("{'a': {'x': 1, 'y': 2}, 'b': {'y': 2, 'x': 1}}"), 0);
   cr_assert_lt(cmp_json("{'a': {'x': 1}, 'b': {'x': 1, 'y': 0}}"), 0);
   /* A field's type bracket decides before its value. */
   cr_assert_lt(cmp_json("{'a': {'x': 100}, 'b': {'x': 'a'}}"), 0);
   cr_assert_lt(cmp_json("{'a': [1, 2], 'b': [1, 3]}"), 0);
   cr_assert_lt(cmp_json("{'a': false, 'b': true}"), 0);
   cr_assert_lt(cmp_json("{'a': {'$date': 5}, 'b': {'$date': 6}}"), 0);
   cr_assert_lt(
      cmp_json("{'a': {'$timestamp': {'t': 1, 'i': 9}}, 'b': {'$timestamp': {'t': 2, 'i': 0}}}"),
      0);
}

Test(compare, equal_follows_compare)
{
   bson_t *d = tm_json("{'a': 3, 'b': 3.0, 'c': '3'}");
   bson_value_t a, b, c;

   cr_assert(tm_path_get(d, "a", &a));
   cr_assert(tm_path_get(d, "b", &b));
   cr_assert(tm_path_get(d, "c", &c));
   cr_assert(tm_value_equal(&a, &b));
   cr_assert_not(tm_value_equal(&a, &c));
   bson_destroy(d);
}

Test(path, get_with_indexes)
{
   bson_t *d = tm_json("{'a': {'b': [10, {'c': 'x'}]}}");
   bson_value_t v;

   cr_assert(tm_path_get(d, "a.b.0", &v));
   cr_assert_eq(v.value.v_int32, 10);
   cr_assert(tm_path_get(d, "a.b.1.c", &v));
   cr_assert_str_eq(v.value.v_utf8.str, "x");
   cr_assert_not(tm_path_get(d, "a.b.2", &v));
   cr_assert_not(tm_path_get(d, "a.b.0.c", &v));
   cr_assert_not(tm_path_get(d, "a..b", &v));
   bson_destroy(d);
}

static bool
collect_value(const bson_value_t *value, void *ctx)
{
   bson_t *arr = ctx;
   char key[16];
   const char *k;

   bson_uint32_to_string(bson_count_keys(arr), &k, key, sizeof key);
   bson_append_value(arr, k, -1, value);
   return true;
}

static void
foreach_case(const char *doc_json, const char *path, const char *expected)
{
   bson_t *doc = tm_json(doc_json);
   bson_t values = BSON_INITIALIZER;

   tm_path_foreach(doc, path, collect_value, &values);
   tm_assert_doc(&values, expected, path);
   bson_destroy(&values);
   bson_destroy(doc);
}

Test(path, foreach_fans_out_like_distinct)
{
   foreach_case("{'x': 1}", "x", "{'0': 1}");
   foreach_case("{'x': [1, 2]}", "x", "{'0': 1, '1': 2}");
   foreach_case("{'a': [{'b': 1}, {'b': [2, 3]}, {'c': 4}]}", "a.b", "{'0': 1, '1': 2, '2': 3}");
   foreach_case("{'a': {'b': 'z'}}", "a.b", "{'0': 'z'}");
   foreach_case("{'a': 5}", "a.b", "{}");
   foreach_case("{}", "x", "{}");
}

/* tm_bson_find skips elements by their sizes: it must find what bson_iter_init_find finds (the
 * same element) in a document holding every BSON type, and nothing for absent keys. */
static void
assert_find_agrees(const bson_t *doc, const char *key)
{
   bson_iter_t mine, libbsons;
   bool found = tm_bson_find(doc, key, &mine);
   cr_assert_eq(found, bson_iter_init_find(&libbsons, doc, key), "key %s", key);
   if (found) {
      cr_assert_eq(mine.off, libbsons.off, "key %s", key);
      cr_assert_eq(bson_iter_type(&mine), bson_iter_type(&libbsons), "key %s", key);
   }
}

Test(path, bson_find_agrees_with_libbson)
{
   bson_t doc = BSON_INITIALIZER, sub = BSON_INITIALIZER, *scope = BCON_NEW("x", BCON_INT32(1));
   bson_oid_t oid;
   bson_decimal128_t dec = {0};
   bson_oid_init_from_string(&oid, "0123456789abcdef01234567");
   BSON_APPEND_INT32(&sub, "in", 1);
   BSON_APPEND_DOUBLE(&doc, "double", 1.5);
   BSON_APPEND_UTF8(&doc, "utf8", "text");
   BSON_APPEND_DOCUMENT(&doc, "doc", &sub);
   BSON_APPEND_ARRAY(&doc, "array", &sub);
   BSON_APPEND_BINARY(&doc, "binary", BSON_SUBTYPE_BINARY, (const uint8_t *)"\0\1\2", 3);
   BSON_APPEND_UNDEFINED(&doc, "undefined");
   BSON_APPEND_OID(&doc, "oid", &oid);
   BSON_APPEND_BOOL(&doc, "bool", true);
   BSON_APPEND_DATE_TIME(&doc, "date", 12345);
   BSON_APPEND_NULL(&doc, "null");
   BSON_APPEND_REGEX(&doc, "regex", "^a.*b", "im");
   BSON_APPEND_DBPOINTER(&doc, "dbpointer", "db.coll", &oid);
   BSON_APPEND_CODE(&doc, "code", "function() {}");
   BSON_APPEND_SYMBOL(&doc, "symbol", "sym");
   BSON_APPEND_CODE_WITH_SCOPE(&doc, "codewscope", "f()", scope);
   BSON_APPEND_INT32(&doc, "int32", 7);
   BSON_APPEND_TIMESTAMP(&doc, "timestamp", 1, 2);
   BSON_APPEND_INT64(&doc, "int64", 8);
   BSON_APPEND_DECIMAL128(&doc, "decimal", &dec);
   BSON_APPEND_MINKEY(&doc, "minkey");
   BSON_APPEND_MAXKEY(&doc, "maxkey");
   BSON_APPEND_INT32(&doc, "utf8", 2); /* a duplicate: the first one is found */
   BSON_APPEND_INT32(&doc, "", 3);
   bson_iter_t it;
   bson_iter_init(&it, &doc);
   while (bson_iter_next(&it)) {
      assert_find_agrees(&doc, bson_iter_key(&it));
   }
   static const char *const absent[] = {"missing", "utf", "utf8x", "in", "x", "0"};
   for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++) {
      assert_find_agrees(&doc, absent[i]);
   }
   bson_t empty = BSON_INITIALIZER;
   assert_find_agrees(&empty, "a");
   bson_destroy(&doc);
   bson_destroy(&sub);
   bson_destroy(scope);
}
