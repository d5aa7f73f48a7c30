/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests: the archive (outbox/archive.h). The tests write archive entries the way
 * the relay does (relay/store/archive.c: one insert per event, _id = event id) and read them
 * back through outbox_archive_find(); outbox_archive_ensure_schema() installs the validator
 * and the indexes, idempotently, and changes a TTL in place.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "lib-test.h"

static lt_t t;
static mongoc_client_t *client;
static mongoc_collection_t *archive;

static void
setup(void)
{
   bson_error_t e;
   lt_init(&t, "archive", NULL, NULL);
   client = mongoc_client_pool_pop(t.pool);
   archive = mongoc_client_get_collection(client, LT_DB, t.coll_name);
   cr_assert(outbox_archive_ensure_schema(archive, NULL, &e), "%s", e.message);
}

static void
teardown(void)
{
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(t.pool, client);
   lt_cleanup(&t);
}

TestSuite(archive, .init = setup, .fini = teardown, .timeout = 60);

/* Archives event @seq of entity @entity (collection @coll) at @time_ms, as the relay does. */
static void
put(const char *coll, const char *entity, int64_t seq, const char *type, int64_t time_ms)
{
   char id[48];
   bson_error_t e;
   bson_snprintf(id, sizeof id, "%s/%s/%" PRId64, coll, entity, seq);
   bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "collection", BCON_UTF8(coll), "entityId",
                          BCON_UTF8(entity), "seq", BCON_INT64(seq), "type", BCON_UTF8(type),
                          "time", BCON_DATE_TIME(time_ms), "data", "{", "n", BCON_INT64(seq), "}",
                          "partition", BCON_INT32(3), "publishedAt", BCON_DATE_TIME(time_ms + 5));
   cr_assert(mongoc_collection_insert_one(archive, doc, NULL, NULL, &e), "%s", e.message);
   bson_destroy(doc);
}

/* Reads every event the cursor with @opts gives into "entity:seq" strings; returns how many. */
static int
read_all(const bson_t *opts, char out[][32], int max)
{
   bson_error_t e;
   outbox_archive_cursor_t *cur = outbox_archive_find(archive, opts, &e);
   const outbox_archived_event_t *ev;
   int n = 0;
   cr_assert(cur, "%s", e.message);
   while (outbox_archive_cursor_next(cur, &ev)) {
      cr_assert_lt(n, max);
      cr_assert_eq(ev->entity_id->value_type, BSON_TYPE_UTF8);
      cr_assert_eq(ev->partition, 3);
      cr_assert_eq(ev->published_at_ms, ev->time_ms + 5);
      cr_assert(bson_has_field(ev->data, "n"));
      bson_snprintf(out[n++], 32, "%s:%" PRId64, ev->entity_id->value.v_utf8.str, ev->seq);
   }
   cr_assert(!outbox_archive_cursor_error(cur, &e), "%s", e.message);
   outbox_archive_cursor_destroy(cur);
   return n;
}

/* Entries written out of order come back sorted by entity and seq; the filters narrow them. */
Test(archive, filters_and_order)
{
   char got[16][32];
   int64_t base = 1700000000000;
   put("things", "b", 2, "thing.changed", base + 4000);
   put("things", "a", 2, "thing.changed", base + 3000);
   put("things", "b", 1, "thing.created", base + 2000);
   put("things", "a", 1, "thing.created", base + 1000);
   put("others", "a", 1, "other.created", base + 1500);

   bson_t *all = BCON_NEW("collection", "things");
   cr_assert_eq(read_all(all, got, 16), 4);
   cr_assert_str_eq(got[0], "a:1");
   cr_assert_str_eq(got[1], "a:2");
   cr_assert_str_eq(got[2], "b:1");
   cr_assert_str_eq(got[3], "b:2");

   bson_t *window = BCON_NEW("collection", "things", "since", BCON_DATE_TIME(base + 2000), "until",
                             BCON_DATE_TIME(base + 4000));
   cr_assert_eq(read_all(window, got, 16), 2);
   cr_assert_str_eq(got[0], "a:2");
   cr_assert_str_eq(got[1], "b:1");

   bson_t *typed = BCON_NEW("type", "thing.created");
   cr_assert_eq(read_all(typed, got, 16), 2);

   bson_t *entity = BCON_NEW("entityId", "a", "limit", BCON_INT32(2));
   cr_assert_eq(read_all(entity, got, 16), 2);

   cr_assert_eq(read_all(NULL, got, 16), 5);
   bson_destroy(all);
   bson_destroy(window);
   bson_destroy(typed);
   bson_destroy(entity);
}

Test(archive, bad_options)
{
   bson_error_t e;
   bson_t *opts = BCON_NEW("since", "yesterday");
   cr_assert_null(outbox_archive_find(archive, opts, &e));
   cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   bson_destroy(opts);
   opts = BCON_NEW("color", "red");
   cr_assert_null(outbox_archive_find(archive, opts, &e));
   bson_destroy(opts);
   cr_assert_null(outbox_archive_find(NULL, NULL, &e));
}

/* The validator refuses an entry that breaks the contract: an int32 seq. */
Test(archive, validator_refuses_malformed_entries)
{
   bson_error_t e;
   bson_t *doc =
      BCON_NEW("_id", "x", "collection", "things", "entityId", "a", "seq", BCON_INT32(1), "type",
               "t", "time", BCON_DATE_TIME(1), "data", "{", "}", "publishedAt", BCON_DATE_TIME(1));
   cr_assert(!mongoc_collection_insert_one(archive, doc, NULL, NULL, &e));
   cr_assert_eq(e.code, 121, "%u %s", e.code, e.message);
   bson_destroy(doc);
}

/* The group and the member that archived an entry are strings when present; entries written
 * before the member was recorded (only the group, or neither) stay valid. */
Test(archive, validator_takes_the_member_and_entries_without_it)
{
   bson_error_t e;
   const char *relay_only = "{\"_id\": \"a\", \"relay\": \"g\"}";
   const char *both = "{\"_id\": \"b\", \"relay\": \"g\", \"member\": \"h/1/0a0b0c0d\"}";
   const char *neither = "{\"_id\": \"c\"}";
   const char *bad = "{\"_id\": \"d\", \"relay\": \"g\", \"member\": 7}";
   const char *docs[] = {relay_only, both, neither, bad};

   for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
      bson_t *doc = bson_new_from_json((const uint8_t *)docs[i], -1, &e);
      cr_assert(doc, "%s", e.message);
      BCON_APPEND(doc, "collection", "things", "entityId", "a", "seq", BCON_INT64(1), "type", "t",
                  "time", BCON_DATE_TIME(1), "data", "{", "}", "publishedAt", BCON_DATE_TIME(1));
      bool ok = mongoc_collection_insert_one(archive, doc, NULL, NULL, &e);
      if (docs[i] == bad) {
         cr_assert(!ok, "a member that is no string was accepted");
         cr_assert_eq(e.code, 121, "%u %s", e.code, e.message);
      } else {
         cr_assert(ok, "%s: %s", docs[i], e.message);
      }
      bson_destroy(doc);
   }
}

static int64_t
ttl_of(void)
{
   mongoc_cursor_t *c = mongoc_collection_find_indexes_with_opts(archive, NULL);
   const bson_t *ix;
   bson_iter_t it;
   int64_t ttl = -1;
   while (mongoc_cursor_next(c, &ix)) {
      if (bson_iter_init_find(&it, ix, "name") &&
          !strcmp(bson_iter_utf8(&it, NULL), "outbox_archive_ttl") &&
          bson_iter_init_find(&it, ix, "expireAfterSeconds")) {
         ttl = bson_iter_as_int64(&it);
      }
   }
   mongoc_cursor_destroy(c);
   return ttl;
}

/* Calling it again is harmless; a new TTL replaces the old one. */
Test(archive, ensure_is_idempotent_and_changes_the_ttl)
{
   bson_error_t e;
   bson_t *day = BCON_NEW("ttlSeconds", BCON_INT64(86400));
   bson_t *week = BCON_NEW("ttlSeconds", BCON_INT64(604800));
   cr_assert_eq(ttl_of(), -1);
   cr_assert(outbox_archive_ensure_schema(archive, day, &e), "%s", e.message);
   cr_assert(outbox_archive_ensure_schema(archive, day, &e), "%s", e.message);
   cr_assert_eq(ttl_of(), 86400);
   cr_assert(outbox_archive_ensure_schema(archive, week, &e), "%s", e.message);
   cr_assert_eq(ttl_of(), 604800);
   bson_destroy(day);
   bson_destroy(week);
}
