/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * relay_hash_value() against the known answers MongoDB publishes
 * (tests/fixtures/hashed-index-keys.json: the test vectors of src/mongo/db/hasher_test.cpp,
 * jstests/core/hash.js and the $toHashedIndexKey example of the manual), the same file
 * test-mongod's separate implementation (tests/mongod/engine/hash.c) is tested against.
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

/* The known answers MongoDB publishes, shared with test-mongod's hasher (which is tested
 * against the same file and stays a separate implementation on purpose):
 * tests/fixtures/hashed-index-keys.json, each case copied from MongoDB's
 * src/mongo/db/hasher_test.cpp, jstests/core/hash.js or the manual (the file names which).
 * relay_hash_value() knows seed 0 only (the index's default), so the seed-1 cases are skipped. */
Test(hash, known_answers_published_by_mongodb)
{
   const char *path = OUTBOX_TEST_FIXTURES "/hashed-index-keys.json";
   bson_json_reader_t *reader;
   bson_error_t error;
   bson_t doc;
   bson_iter_t it, cases;
   int checked = 0;

   reader = bson_json_reader_new_from_file(path, &error);
   cr_assert_not_null(reader, "%s: %s", path, error.message);
   bson_init(&doc);
   cr_assert_eq(bson_json_reader_read(reader, &doc, &error), 1, "%s: %s", path, error.message);
   cr_assert(bson_iter_init_find(&it, &doc, "cases") && bson_iter_recurse(&it, &cases));
   while (bson_iter_next(&cases)) {
      const uint8_t *data;
      uint32_t len;
      bson_t one;
      bson_iter_t v, seed, hash, source;

      bson_iter_document(&cases, &len, &data);
      cr_assert(bson_init_static(&one, data, len));
      cr_assert(bson_iter_init_find(&v, &one, "value") &&
                   bson_iter_init_find(&seed, &one, "seed") &&
                   bson_iter_init_find(&hash, &one, "hash") &&
                   bson_iter_init_find(&source, &one, "source"),
                "case %s", bson_iter_key(&cases));
      if (bson_iter_int32(&seed) != 0) {
         continue;
      }
      cr_expect_eq(relay_hash_iter(&v), bson_iter_int64(&hash), "%s: got %lld, MongoDB gives %lld",
                   bson_iter_utf8(&source, NULL), (long long)relay_hash_iter(&v),
                   (long long)bson_iter_int64(&hash));
      checked++;
   }
   cr_assert_geq(checked, 40, "only %d seed-0 cases in %s", checked, path);
   bson_destroy(&doc);
   bson_json_reader_destroy(reader);
}

/* What the partitions rely on beyond the published cases: int32 5 and int64 5 are one key,
 * and a decimal hashes as the integer it rounds to (no published vector has a decimal; 42's
 * is [H]'s). */
Test(hash, numeric_identities)
{
   cr_assert_eq(hash_int32(5), hash_int64(5));
   cr_assert_eq(hash_double(5.9), hash_int64(5));
   cr_assert_eq(hash_json("{\"v\": {\"$numberDecimal\": \"42.4\"}}"), -944302157085130861LL);
   cr_assert_eq(hash_double((double)INT_MIN), hash_int32(INT_MIN));
   cr_assert_eq(hash_double(DBL_MAX), hash_int64(INT64_MAX));
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
