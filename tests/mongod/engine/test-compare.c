/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
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
   cr_assert_gt(cmp_json("{'a': {'$numberLong': '9007199254740993'}, 'b': 9007199254740992.0}"),
                0);
   cr_assert_lt(cmp_json("{'a': {'$numberDouble': 'NaN'}, 'b': -1e308}"), 0);
   cr_assert_eq(cmp_json("{'a': {'$numberDouble': 'NaN'}, 'b': {'$numberDouble': 'NaN'}}"), 0);
   cr_assert_lt(cmp_json("{'a': {'$numberDecimal': '-Infinity'}, 'b': -5}"), 0);
}

Test(compare, canonical_type_order)
{
   /* MinKey < null < numbers < string < object < array < binData < oid < bool < date <
    * timestamp < regex < MaxKey */
   const char *chain[] = {
      "{'$minKey': 1}", "null", "5", "'x'", "{'x': 1}", "[1]",
      "{'$binary': {'base64': 'AA==', 'subType': '00'}}",
      "{'$oid': '000000000000000000000000'}", "false", "{'$date': 0}",
      "{'$timestamp': {'t': 1, 'i': 1}}", "{'$regularExpression': {'pattern': 'a', 'options': ''}}",
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
   cr_assert_lt(cmp_json("{'a': {'$timestamp': {'t': 1, 'i': 9}}, 'b': {'$timestamp': {'t': 2, 'i': 0}}}"), 0);
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
