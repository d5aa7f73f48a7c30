/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * contacts-consumer's partition sets (examples/contacts-consumer/topics.c) against the shared
 * vectors of tests/fixtures/partition-sets.json, which the Python and Node consumers' tests
 * load too (issue 33): all three accept and refuse the same sets. The file's path comes in
 * OUTBOX_PARTITION_SETS (meson sets it).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bson/bson.h>

#include "topics.h"

static bson_t *
load_vectors(void)
{
   const char *path = getenv("OUTBOX_PARTITION_SETS");
   bson_error_t error;
   bson_json_reader_t *reader;
   bson_t *doc = bson_new();

   cr_assert_not_null(path, "OUTBOX_PARTITION_SETS is not set");
   reader = bson_json_reader_new_from_file(path, &error);
   cr_assert_not_null(reader, "%s: %s", path, error.message);
   cr_assert_eq(bson_json_reader_read(reader, doc, &error), 1, "%s: %s", path, error.message);
   bson_json_reader_destroy(reader);
   return doc;
}

/* The filters a valid case expects: its filter for every partition of its ranges, in order;
 * or the filter alone when the case has no set. Returns how many were checked. */
static size_t
check_expected(const char *filter, bson_iter_t *ranges, char **got, size_t n)
{
   size_t k = 0;
   const char *at = strstr(filter, "{partition}");

   if (!BSON_ITER_HOLDS_ARRAY(ranges)) {
      cr_assert_eq(n, 1);
      cr_assert_str_eq(got[0], filter);
      return 1;
   }
   bson_iter_t r;
   cr_assert(bson_iter_recurse(ranges, &r));
   while (bson_iter_next(&r)) {
      bson_iter_t lh;
      cr_assert(bson_iter_recurse(&r, &lh) && bson_iter_next(&lh));
      int64_t lo = bson_iter_as_int64(&lh);
      cr_assert(bson_iter_next(&lh));
      int64_t hi = bson_iter_as_int64(&lh);
      for (int64_t p = lo; p <= hi; p++, k++) {
         char want[256];
         snprintf(want, sizeof want, "%.*s%" PRId64 "%s", (int)(at - filter), filter, p,
                  at + strlen("{partition}"));
         cr_assert_lt(k, n, "%s: fewer filters than expected", filter);
         cr_assert_str_eq(got[k], want);
      }
   }
   cr_assert_eq(k, n, "%s: %zu filters, expected %zu", filter, n, k);
   cr_assert_null(got[n]);
   return k;
}

Test(partition_sets, shared_vectors)
{
   bson_t *doc = load_vectors();
   bson_iter_t it, cases;
   size_t valid = 0, refused = 0;

   cr_assert(bson_iter_init_find(&it, doc, "max_partitions"));
   cr_assert_eq(bson_iter_as_int64(&it), TOPICS_MAX_PARTITIONS);
   cr_assert(bson_iter_init_find(&it, doc, "cases") && bson_iter_recurse(&it, &cases));
   while (bson_iter_next(&cases)) {
      bson_iter_t c, f, s, v, parts;
      char err[256] = "";
      size_t n = 0;

      cr_assert(bson_iter_recurse(&cases, &c));
      cr_assert(bson_iter_find_descendant(&c, "filter", &f));
      cr_assert(bson_iter_recurse(&cases, &c) && bson_iter_find_descendant(&c, "set", &s));
      cr_assert(bson_iter_recurse(&cases, &c) && bson_iter_find_descendant(&c, "valid", &v));
      const char *filter = bson_iter_utf8(&f, NULL);
      const char *set = BSON_ITER_HOLDS_UTF8(&s) ? bson_iter_utf8(&s, NULL) : NULL;
      char **got = topics_expand(filter, set, &n, err, sizeof err);

      if (bson_iter_bool(&v)) {
         cr_assert_not_null(got, "filter '%s' set '%s' refused: %s", filter, set, err);
         cr_assert(bson_iter_recurse(&cases, &c) &&
                   bson_iter_find_descendant(&c, "partitions", &parts));
         check_expected(filter, &parts, got, n);
         valid++;
      } else {
         cr_assert_null(got, "filter '%s' set '%s' accepted", filter, set ? set : "(none)");
         cr_assert_neq(err[0], '\0', "refused without a message");
         refused++;
      }
      topics_free(got);
   }
   cr_assert_gt(valid, 5);
   cr_assert_gt(refused, 20);
   bson_destroy(doc);
}
