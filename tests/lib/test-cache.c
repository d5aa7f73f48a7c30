/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests of the (id -> state) cache: every id fits until the cache is full, then the
 * least recently used one goes.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "cache-private.h"

static bson_value_t
str_id(char buf[32], int i)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};

   snprintf(buf, 32, "ent-%06d", i);
   v.value.v_utf8.str = buf;
   v.value.v_utf8.len = (uint32_t)strlen(buf);
   return v;
}

static void
put(_outbox_cache_t *c, int i)
{
   char buf[32];
   bson_value_t id = str_id(buf, i);
   _outbox_doc_state_t st = {.version = i + 1, .event_seq = i, .pending = 1, .size = 100};

   _outbox_cache_put(c, &id, &st);
}

static bool
has(_outbox_cache_t *c, int i)
{
   char buf[32];
   bson_value_t id = str_id(buf, i);
   _outbox_doc_state_t st;

   if (!_outbox_cache_get(c, &id, &st)) {
      return false;
   }
   cr_assert_eq(st.version, i + 1);
   cr_assert_eq(st.event_seq, i);
   return true;
}

Test(cache, all_fit_until_full)
{
   /* The bench's ids: a direct-mapped cache of this size lost ~14% of them to collisions. */
   _outbox_cache_t *c = _outbox_cache_new(1000);

   for (int i = 0; i < 1000; i++) {
      put(c, i);
   }
   for (int i = 0; i < 1000; i++) {
      cr_assert(has(c, i), "id %d was evicted from a cache that is not over capacity", i);
   }
   _outbox_cache_destroy(c);
}

Test(cache, evicts_least_recently_used)
{
   _outbox_cache_t *c = _outbox_cache_new(3);

   put(c, 0);
   put(c, 1);
   put(c, 2);
   cr_assert(has(c, 0)); /* 0 is now the most recently used; 1 the least */
   put(c, 3);
   cr_assert_not(has(c, 1));
   cr_assert(has(c, 0) && has(c, 2) && has(c, 3));
   _outbox_cache_destroy(c);
}

Test(cache, remove_and_reuse)
{
   _outbox_cache_t *c = _outbox_cache_new(2);
   char buf[32];
   bson_value_t id = str_id(buf, 0);
   bson_value_t other = {.value_type = BSON_TYPE_INT64, .value.v_int64 = 7};
   _outbox_doc_state_t st = {.version = 5};

   put(c, 0);
   put(c, 1);
   _outbox_cache_remove(c, &id);
   cr_assert_not(has(c, 0));
   _outbox_cache_put(c, &other, &st); /* takes the freed entry: 1 stays */
   cr_assert(has(c, 1));
   cr_assert(_outbox_cache_get(c, &other, &st) && st.version == 5);
   put(c, 0); /* full again: evicts 1, used less recently than `other` */
   cr_assert_not(has(c, 1));
   cr_assert(has(c, 0) && _outbox_cache_get(c, &other, &st));
   _outbox_cache_destroy(c);
}

Test(cache, disabled)
{
   _outbox_doc_state_t st = {.version = 1};
   bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};

   cr_assert_null(_outbox_cache_new(0));
   _outbox_cache_put(NULL, &id, &st);
   cr_assert_not(_outbox_cache_get(NULL, &id, &st));
   _outbox_cache_remove(NULL, &id);
}
