/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Partitions (partition.h): the entity-to-partition mapping and the partition sets. Pure
 * functions and values; any thread.
 */
#include "base/partition.h"

#include <string.h>

/* 128-bit arithmetic keeps the bounds exact for every partition count (GCC and clang). */
__extension__ typedef unsigned __int128 u128_t;

int
relay_partition_of(int64_t h, int n)
{
   uint64_t u = (uint64_t)h ^ 0x8000000000000000ull; /* h - INT64_MIN, as unsigned */
   return (int)(((u128_t)u * (uint64_t)n) >> 64);
}

int64_t
relay_partition_lo(int p, int n)
{
   u128_t scaled;
   uint64_t offset;

   if (p <= 0) {
      return INT64_MIN;
   }
   /* ceil(p * 2^64 / n) */
   scaled = ((u128_t)(uint64_t)p << 64) + (uint64_t)(n - 1);
   offset = (uint64_t)(scaled / (uint64_t)n);
   return (int64_t)(offset ^ 0x8000000000000000ull);
}

void
relay_partset_clear(relay_partset_t *s)
{
   memset(s, 0, sizeof *s);
}

void
relay_partset_add(relay_partset_t *s, int p)
{
   s->words[p / 64] |= 1ull << (p % 64);
}

void
relay_partset_remove(relay_partset_t *s, int p)
{
   s->words[p / 64] &= ~(1ull << (p % 64));
}

bool
relay_partset_has(const relay_partset_t *s, int p)
{
   return p >= 0 && p < RELAY_PARTITIONS_MAX && (s->words[p / 64] >> (p % 64)) & 1;
}

int
relay_partset_count(const relay_partset_t *s, int n)
{
   int c = 0;
   for (int p = 0; p < n; p++) {
      c += relay_partset_has(s, p);
   }
   return c;
}

bool
relay_partset_equal(const relay_partset_t *a, const relay_partset_t *b)
{
   return memcmp(a, b, sizeof *a) == 0;
}

/* The next run of neighbouring partitions of @s at or after *@p: [*@p, returned]; -1 when
 * there is none. */
static int
next_run(const relay_partset_t *s, int n, int *p)
{
   int q;
   while (*p < n && !relay_partset_has(s, *p)) {
      (*p)++;
   }
   if (*p >= n) {
      return -1;
   }
   for (q = *p; q + 1 < n && relay_partset_has(s, q + 1); q++) {
   }
   return q;
}

void
relay_partset_format(const relay_partset_t *s, int n, bson_string_t *out)
{
   size_t start = out->len;
   int q;
   for (int p = 0; (q = next_run(s, n, &p)) >= 0; p++) {
      bson_string_append_printf(out, "%s%d", out->len > start ? ", " : "", p);
      if (q > p) {
         bson_string_append_printf(out, "-%d", q);
      }
      p = q;
   }
   if (out->len == start) {
      bson_string_append(out, "none");
   }
}

int
relay_partset_ranges(const relay_partset_t *s, int n, relay_hash_range_t *out)
{
   int k = 0, q;
   for (int p = 0; (q = next_run(s, n, &p)) >= 0; p++) {
      out[k].lo = relay_partition_lo(p, n);
      out[k].to_max = q + 1 == n;
      out[k].hi = out[k].to_max ? INT64_MAX : relay_partition_lo(q + 1, n);
      k++;
      p = q;
   }
   return k;
}

static void
append_type_list(bson_t *doc)
{
   static const char *const types[] = RELAY_PARTITION_TYPES;
   bson_t arr;
   char key[16];
   const char *k;

   BSON_APPEND_ARRAY_BEGIN(doc, "$type", &arr);
   for (uint32_t i = 0; i < sizeof types / sizeof types[0]; i++) {
      bson_uint32_to_string(i, &k, key, sizeof key);
      bson_append_utf8(&arr, k, -1, types[i], -1);
   }
   bson_append_array_end(doc, &arr);
}

/* Appends {<path>: {$not: {$type: [checked types]}}} under @key of the array @or. */
static void
append_unchecked_branch(bson_t * or, const char *key, const char *path)
{
   bson_t branch, cond, not ;

   BSON_APPEND_DOCUMENT_BEGIN(or, key, &branch);
   BSON_APPEND_DOCUMENT_BEGIN(&branch, path, &cond);
   BSON_APPEND_DOCUMENT_BEGIN(&cond, "$not", &not );
   append_type_list(&not );
   bson_append_document_end(&cond, &not );
   bson_append_document_end(&branch, &cond);
   bson_append_document_end(or, &branch);
}

void
relay_partition_append_stream_stages(const relay_partset_t *s, int n, bson_t *pipeline,
                                     uint32_t *index)
{
   relay_hash_range_t ranges[RELAY_PARTITIONS_MAX / 2 + 1];
   int nr = relay_partset_ranges(s, n, ranges);
   bson_t stage, body, hashed, or ;
   char key[16];
   const char *k;

   bson_uint32_to_string((*index)++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(pipeline, k, &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&stage, "$addFields", &body);
   BSON_APPEND_DOCUMENT_BEGIN(&body, RELAY_PARTITION_HASH_FIELD, &hashed);
   BSON_APPEND_UTF8(&hashed, "$toHashedIndexKey", "$documentKey._id");
   bson_append_document_end(&body, &hashed);
   bson_append_document_end(&stage, &body);
   bson_append_document_end(pipeline, &stage);

   bson_uint32_to_string((*index)++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(pipeline, k, &stage);
   BSON_APPEND_DOCUMENT_BEGIN(&stage, "$match", &body);
   BSON_APPEND_ARRAY_BEGIN(&body, "$or", & or);
   append_unchecked_branch(& or, "0", "documentKey._id");
   for (int i = 0; i < nr; i++) {
      bson_t branch, cond;
      bson_uint32_to_string((uint32_t)i + 1, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(& or, k, &branch);
      BSON_APPEND_DOCUMENT_BEGIN(&branch, RELAY_PARTITION_HASH_FIELD, &cond);
      BSON_APPEND_INT64(&cond, "$gte", ranges[i].lo);
      if (ranges[i].to_max) {
         BSON_APPEND_INT64(&cond, "$lte", INT64_MAX);
      } else {
         BSON_APPEND_INT64(&cond, "$lt", ranges[i].hi);
      }
      bson_append_document_end(&branch, &cond);
      bson_append_document_end(& or, &branch);
   }
   bson_append_array_end(&body, & or);
   bson_append_document_end(&stage, &body);
   bson_append_document_end(pipeline, &stage);
}

/* Appends {$op: [{$toHashedIndexKey: "$_id"}, bound]} under @key of @arr. */
static void
append_compare(bson_t *arr, const char *key, const char *op, int64_t bound)
{
   bson_t cmp, args, hashed;

   BSON_APPEND_DOCUMENT_BEGIN(arr, key, &cmp);
   BSON_APPEND_ARRAY_BEGIN(&cmp, op, &args);
   BSON_APPEND_DOCUMENT_BEGIN(&args, "0", &hashed);
   BSON_APPEND_UTF8(&hashed, "$toHashedIndexKey", "$_id");
   bson_append_document_end(&args, &hashed);
   BSON_APPEND_INT64(&args, "1", bound);
   bson_append_array_end(&cmp, &args);
   bson_append_document_end(arr, &cmp);
}

void
relay_partition_append_sweep_filter(const relay_partset_t *s, int n, bson_t *filter)
{
   relay_hash_range_t ranges[RELAY_PARTITIONS_MAX / 2 + 1];
   int nr = relay_partset_ranges(s, n, ranges);
   bson_t or, branch, expr, any;
   char key[16];
   const char *k;

   BSON_APPEND_ARRAY_BEGIN(filter, "$or", & or);
   append_unchecked_branch(& or, "0", "_id");
   BSON_APPEND_DOCUMENT_BEGIN(& or, "1", &branch);
   BSON_APPEND_DOCUMENT_BEGIN(&branch, "$expr", &expr);
   BSON_APPEND_ARRAY_BEGIN(&expr, "$or", &any);
   for (int i = 0; i < nr; i++) {
      bson_t and, both;
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(&any, k, &and);
      BSON_APPEND_ARRAY_BEGIN(&and, "$and", &both);
      append_compare(&both, "0", "$gte", ranges[i].lo);
      if (ranges[i].to_max) {
         append_compare(&both, "1", "$lte", INT64_MAX);
      } else {
         append_compare(&both, "1", "$lt", ranges[i].hi);
      }
      bson_append_array_end(&and, &both);
      bson_append_document_end(&any, &and);
   }
   bson_append_array_end(&expr, &any);
   bson_append_document_end(&branch, &expr);
   bson_append_document_end(& or, &branch);
   bson_append_array_end(filter, & or);
}
