/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Partitions: every hashed key lands in exactly one partition, the partition's range holds
 * it, neighbours merge into one range, and the filters name those ranges.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "group/hash.h"
#include "base/partition.h"

static const int counts[] = {1, 2, 3, 7, 16, 32, 33, 100, 1000, 4096};

/* h lies in exactly one partition's range, and it is relay_partition_of(h). */
static void
check_one(int64_t h, int n)
{
   int p = relay_partition_of(h, n);
   int hits = 0;
   cr_assert(p >= 0 && p < n, "h %" PRId64 " n %d -> %d", h, n, p);
   for (int q = (p > 0 ? p - 1 : 0); q <= p + 1 && q < n; q++) {
      int64_t lo = relay_partition_lo(q, n);
      bool below_hi = q + 1 == n || h < relay_partition_lo(q + 1, n);
      hits += h >= lo && below_hi;
      if (h >= lo && below_hi) {
         cr_assert_eq(q, p, "h %" PRId64 " in range of %d, partition_of says %d", h, q, p);
      }
   }
   cr_assert_eq(hits, 1, "h %" PRId64 " n %d in %d ranges", h, n, hits);
}

Test(partition, bounds_and_membership)
{
   srand(12345);
   for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
      int n = counts[i];
      cr_assert_eq(relay_partition_lo(0, n), INT64_MIN);
      check_one(INT64_MIN, n);
      check_one(INT64_MAX, n);
      check_one(0, n);
      check_one(-1, n);
      for (int p = 1; p < n; p++) {
         int64_t lo = relay_partition_lo(p, n);
         cr_assert_gt(lo, relay_partition_lo(p - 1, n));
         cr_assert_eq(relay_partition_of(lo, n), p);
         cr_assert_eq(relay_partition_of(lo - 1, n), p - 1);
      }
      for (int k = 0; k < 2000; k++) {
         uint64_t u = ((uint64_t)rand() << 40) ^ ((uint64_t)rand() << 20) ^ (uint64_t)rand();
         check_one((int64_t)u, n);
      }
   }
}

Test(partition, even_split)
{
   /* 32 partitions of 2^64: each 2^59 wide. */
   cr_assert_eq(relay_partition_lo(1, 32), INT64_MIN + (1LL << 59));
   cr_assert_eq(relay_partition_lo(16, 32), 0);
   cr_assert_eq(relay_partition_of(-1, 2), 0);
   cr_assert_eq(relay_partition_of(0, 2), 1);
}

Test(partition, id_types_land_in_one_partition)
{
   /* ObjectId, UUID, string, int32, int64: one partition each; int32 5 and int64 5 share
    * theirs (one entity for the server's _id index, one for the partitions). */
   const char *ids[] = {"{\"v\": {\"$oid\": \"5b2be413c06d924ab26ff9ca\"}}",
                        "{\"v\": {\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", "
                        "\"subType\": \"04\"}}}",
                        "{\"v\": \"customer-17\"}", "{\"v\": 5}",
                        "{\"v\": {\"$numberLong\": \"5\"}}"};
   int parts[5];
   for (int i = 0; i < 5; i++) {
      bson_error_t error;
      bson_t *doc = bson_new_from_json((const uint8_t *)ids[i], -1, &error);
      bson_iter_t it;
      cr_assert(doc && bson_iter_init(&it, doc) && bson_iter_next(&it));
      int64_t h = relay_hash_iter(&it);
      check_one(h, 32);
      parts[i] = relay_partition_of(h, 32);
      bson_destroy(doc);
   }
   cr_assert_eq(parts[3], parts[4]);
}

Test(partition, sets_merge_into_ranges)
{
   relay_partset_t s;
   relay_hash_range_t r[8];

   relay_partset_clear(&s);
   cr_assert_eq(relay_partset_ranges(&s, 32, r), 0);
   for (int p = 0; p < 32; p++) {
      relay_partset_add(&s, p);
   }
   cr_assert_eq(relay_partset_count(&s, 32), 32);
   cr_assert_eq(relay_partset_ranges(&s, 32, r), 1);
   cr_assert(r[0].lo == INT64_MIN && r[0].to_max);

   relay_partset_clear(&s);
   relay_partset_add(&s, 2);
   relay_partset_add(&s, 3);
   relay_partset_add(&s, 4);
   relay_partset_add(&s, 9);
   relay_partset_add(&s, 31);
   cr_assert_eq(relay_partset_ranges(&s, 32, r), 3);
   cr_assert(r[0].lo == relay_partition_lo(2, 32) && r[0].hi == relay_partition_lo(5, 32) &&
             !r[0].to_max);
   cr_assert(r[1].lo == relay_partition_lo(9, 32) && r[1].hi == relay_partition_lo(10, 32));
   cr_assert(r[2].lo == relay_partition_lo(31, 32) && r[2].to_max);
   relay_partset_remove(&s, 3);
   cr_assert(!relay_partset_has(&s, 3));
   cr_assert_eq(relay_partset_ranges(&s, 32, r), 4);
}

Test(partition, filters_name_the_ranges)
{
   relay_partset_t s;
   bson_t pipeline = BSON_INITIALIZER, filter = BSON_INITIALIZER;
   uint32_t index = 0;
   char *json;

   relay_partset_clear(&s);
   relay_partset_add(&s, 0);
   relay_partset_add(&s, 1);
   relay_partition_append_stream_stages(&s, 4, &pipeline, &index);
   cr_assert_eq(index, 2);
   json = bson_as_relaxed_extended_json(&pipeline, NULL);
   cr_assert_not_null(strstr(json, "\"$toHashedIndexKey\" : \"$documentKey._id\""), "%s", json);
   cr_assert_not_null(strstr(json, "\"$gte\" : -9223372036854775808, \"$lt\" : 0"), "%s", json);
   cr_assert_not_null(strstr(json, "\"$not\" : { \"$type\""), "%s", json);
   bson_free(json);

   relay_partition_append_sweep_filter(&s, 4, &filter);
   json = bson_as_relaxed_extended_json(&filter, NULL);
   cr_assert_not_null(strstr(json, "{ \"$toHashedIndexKey\" : \"$_id\" }, 0"), "%s", json);
   cr_assert_not_null(strstr(json, "\"_id\" : { \"$not\""), "%s", json);
   bson_free(json);
   bson_destroy(&pipeline);
   bson_destroy(&filter);
}
