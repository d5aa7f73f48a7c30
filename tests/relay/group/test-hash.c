/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * relay_hash_value() against values MongoDB publishes: the test vectors of
 * src/mongo/db/hasher_test.cpp ("hard-coded checks to ensure the hash function is consistent
 * across platforms and server versions") and the $toHashedIndexKey example of the 7.0 manual.
 */
#include <criterion/criterion.h>
#include <float.h>
#include <limits.h>
#include <math.h>

#include "group/hash.h"

/* Hashes the value of the only field of @json (canonical extended JSON). */
static int64_t
hash_json(const char *json)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &error);
   bson_iter_t it;
   int64_t h;

   cr_assert_not_null(doc, "%s: %s", json, error.message);
   cr_assert(bson_iter_init(&it, doc) && bson_iter_next(&it));
   h = relay_hash_iter(&it);
   bson_destroy(doc);
   return h;
}

static int64_t
hash_double(double d)
{
   bson_value_t v = {.value_type = BSON_TYPE_DOUBLE, .value.v_double = d};
   return relay_hash_value(&v);
}

static int64_t
hash_int64(int64_t i)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT64, .value.v_int64 = i};
   return relay_hash_value(&v);
}

static int64_t
hash_int32(int32_t i)
{
   bson_value_t v = {.value_type = BSON_TYPE_INT32, .value.v_int32 = i};
   return relay_hash_value(&v);
}

Test(hash, manual_example_string)
{
   /* The 7.0 manual, $toHashedIndexKey: "string to hash" -> Long("763543691661428748"). */
   cr_assert_eq(hash_json("{\"v\": \"string to hash\"}"), 763543691661428748LL);
}

Test(hash, numbers_squash_to_int64)
{
   cr_assert_eq(hash_int32(42), -944302157085130861LL);
   cr_assert_eq(hash_int64(42), -944302157085130861LL);
   cr_assert_eq(hash_double(42.123), -944302157085130861LL);
   cr_assert_eq(hash_int32(0), 4854801880128277513LL);
   cr_assert_eq(hash_double(0.456), 4854801880128277513LL);
   cr_assert_eq(hash_double(NAN), 4854801880128277513LL);
   cr_assert_eq(hash_int32(1), 5902408780260971510LL);
   cr_assert_eq(hash_double(1.987), 5902408780260971510LL);
   cr_assert_eq(hash_int64(-1), 1140205862565771219LL);
   cr_assert_eq(hash_double(-1.789), 1140205862565771219LL);
   cr_assert_eq(hash_int32(INT_MIN), 6165898260261354870LL);
   cr_assert_eq(hash_double((double)INT_MIN), 6165898260261354870LL);
   cr_assert_eq(hash_int32(INT_MAX), 1143184177162245883LL);
   cr_assert_eq(hash_int64(INT_MAX), 1143184177162245883LL);
   cr_assert_eq(hash_double(DBL_MAX), 921523596458303250LL);
   cr_assert_eq(hash_int64(INT64_MAX), 921523596458303250LL);
   cr_assert_eq(hash_double(-DBL_MAX), 4532067210535695462LL);
   cr_assert_eq(hash_int64(INT64_MIN), 4532067210535695462LL);
   /* int32 5 and int64 5 are one key (the requirement). */
   cr_assert_eq(hash_int32(5), hash_int64(5));
   cr_assert_eq(hash_json("{\"v\": {\"$numberDecimal\": \"42.4\"}}"), -944302157085130861LL);
}

Test(hash, special_keys)
{
   cr_assert_eq(hash_json("{\"v\": {\"$minKey\": 1}}"), 7961148599568647290LL);
   cr_assert_eq(hash_json("{\"v\": {\"$maxKey\": 1}}"), 5504842513779440750LL);
   cr_assert_eq(hash_json("{\"v\": {\"$undefined\": true}}"), 40158834000849533LL);
   cr_assert_eq(hash_json("{\"v\": null}"), 2338878944348059895LL);
}

Test(hash, strings_and_symbols)
{
   cr_assert_eq(hash_json("{\"v\": \"abc\"}"), 8478485326885698097LL);
   cr_assert_eq(hash_json("{\"v\": {\"$symbol\": \"abc\"}}"), 8478485326885698097LL);
   cr_assert_eq(hash_json("{\"v\": \"\"}"), 2049396243249673340LL);
}

Test(hash, documents_and_arrays)
{
   cr_assert_eq(hash_json("{\"v\": {\"a\": \"abc\", \"b\": {\"$numberLong\": \"123\"}}}"),
                4771603801758380216LL);
   cr_assert_eq(hash_json("{\"v\": {}}"), 7980500913326740417LL);
   cr_assert_eq(hash_json("{\"v\": [\"bar\", \"baz\", \"qux\"]}"), -2938911267422831539LL);
   cr_assert_eq(hash_json("{\"v\": []}"), 8849948234993459283LL);
}

Test(hash, binary_uuid_objectid)
{
   cr_assert_eq(
      hash_json("{\"v\": {\"$binary\": {\"base64\": \"AAECAwQG\", \"subType\": \"00\"}}}"),
      7252465090394235301LL);
   cr_assert_eq(
      hash_json("{\"v\": {\"$binary\": {\"base64\": \"AAECAwQG\", \"subType\": \"80\"}}}"),
      5736670452907618262LL);
   cr_assert_eq(hash_json("{\"v\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", "
                          "\"subType\": \"04\"}}}"),
                6084661258071355978LL);
   cr_assert_eq(hash_json("{\"v\": {\"$oid\": \"010203040506070809101112\"}}"),
                -5588663249627035708LL);
   cr_assert_eq(hash_json("{\"v\": {\"$oid\": \"000000000000000000000000\"}}"),
                -4293118519463489418LL);
}

Test(hash, bool_date_regex_dbref_code)
{
   cr_assert_eq(hash_json("{\"v\": true}"), 6405873908747105701LL);
   cr_assert_eq(hash_json("{\"v\": false}"), 6289544573401934092LL);
   cr_assert_eq(hash_json("{\"v\": {\"$date\": {\"$numberLong\": \"6153737367135073092\"}}}"),
                4476222765095560467LL);
   cr_assert_eq(hash_json("{\"v\": {\"$date\": {\"$numberLong\": \"0\"}}}"),
                -1178696894582842035LL);
   cr_assert_eq(hash_json("{\"v\": {\"$regularExpression\": {\"pattern\": \"mongodb\", "
                          "\"options\": \"\"}}}"),
                -7275792090268217043LL);
   cr_assert_eq(hash_json("{\"v\": {\"$regularExpression\": {\"pattern\": \".*\", "
                          "\"options\": \"i\"}}}"),
                7095855029187981886LL);
   cr_assert_eq(hash_json("{\"v\": {\"$dbPointer\": {\"$ref\": \"c\", \"$id\": "
                          "{\"$oid\": \"010203040506070809101112\"}}}}"),
                940175826736461384LL);
   cr_assert_eq(hash_json("{\"v\": {\"$dbPointer\": {\"$ref\": \"db.c\", \"$id\": "
                          "{\"$oid\": \"010203040506070809101112\"}}}}"),
                2426768198104018194LL);
   cr_assert_eq(hash_json("{\"v\": {\"$code\": \"func f() { return 1; }\"}}"),
                6861638109178014270LL);
   cr_assert_eq(hash_json("{\"v\": {\"$code\": \"func f() { return 1; }\", \"$scope\": "
                          "{\"c\": true}}}"),
                501342939894575968LL);
}

Test(hash, long_values_use_the_heap)
{
   /* Larger than the inline buffer: the same as computing it in pieces would give, and
    * different from a one-character change. */
   char json[2048] = "{\"v\": \"";
   size_t n = strlen(json);
   memset(json + n, 'x', 1500);
   strcpy(json + n + 1500, "\"}");
   int64_t a = hash_json(json);
   json[n + 700] = 'y';
   cr_assert_neq(a, hash_json(json));
}
