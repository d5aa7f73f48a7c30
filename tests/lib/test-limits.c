/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests: limits, stale caches, retries, malformed documents, options, indexes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "lib-test.h"

static lt_t t;

static void
setup(void)
{
   lt_init(&t, "limits", NULL, NULL);
}

static void
teardown(void)
{
   lt_cleanup(&t);
}

TestSuite(limits, .init = setup, .fini = teardown, .timeout = 90);

Test(limits, pending_events)
{
   bson_t *opts = BCON_NEW("maxPendingEvents", BCON_INT32(3));
   bson_value_t id = lt_str_id("p");
   outbox_event_t *evs[3];
   outbox_collection_t *cold;
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   lt_open(&t, opts);
   /* Its cache knows nothing: its first update goes out blind. */
   cold = lt_second_handle(&t, opts);
   lt_events_new(evs, 3, "t");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 2, &res, &e), "%s", e.message);
   before = lt_raw_get(&t, &id);
   /* 2 pending + 1 = 3 is allowed. */
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, evs + 2, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   bson_destroy(before);
   before = lt_raw_get(&t, &id);
   outbox_event_t *more = outbox_event_new("t", NULL);
   cr_assert_not(outbox_collection_append(t.coll, &id, &more, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_PENDING, "%s", e.message);
   cr_assert_not(outbox_collection_update(cold, &id, 2, NULL, &more, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_PENDING, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   /* Changes without events are still allowed while the relay is behind. */
   cr_assert(outbox_collection_update(t.coll, &id, 2, NULL, NULL, 0, &res, &e), "%s", e.message);
   lt_publish_all(&t, &id);
   cr_assert(outbox_collection_append(t.coll, &id, &more, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 4);
   outbox_event_destroy(more);
   lt_events_destroy(evs, 3);
   bson_destroy(before);
   bson_destroy(opts);
   outbox_collection_destroy(cold);
}

/* A handle whose cache still shows room: another writer filled the entity meanwhile. The
 * version and eventSeq in the update's filter stop the stale update (there is no separate
 * limit clause); the read that follows refuses with the real count and writes nothing. */
Test(limits, pending_limit_with_stale_cache)
{
   bson_t *opts = BCON_NEW("maxPendingEvents", BCON_INT32(3));
   bson_value_t id = lt_str_id("stale-limit");
   outbox_event_t *evs[4];
   outbox_collection_t *other;
   outbox_commit_t res;
   bson_error_t e;

   lt_open(&t, opts);
   other = lt_second_handle(&t, opts);
   lt_events_new(evs, 4, "t");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, &res, &e), "%s", e.message);
   /* t.coll's cache: 1 pending. The other handle brings it to the limit. */
   cr_assert(outbox_collection_append(other, &id, evs + 1, 2, &res, &e), "%s", e.message);
   bson_t *before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_append(t.coll, &id, evs + 3, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_PENDING, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   lt_events_destroy(evs, 4);
   outbox_collection_destroy(other);
   bson_destroy(opts);
}

static bson_t *
blob(const char *key, size_t size)
{
   char *s = bson_malloc(size + 1);
   bson_t *doc;

   memset(s, 'x', size);
   s[size] = '\0';
   doc = BCON_NEW(key, BCON_UTF8(s));
   bson_free(s);
   return doc;
}

Test(limits, document_size)
{
   bson_t *opts = BCON_NEW("maxDocumentSize", BCON_INT32(20000));
   bson_value_t id = lt_str_id("big");
   bson_t *fields = blob("text", 12000), *data = blob("text", 9000);
   bson_t *set = BCON_NEW("$set", "{", "more", BCON_UTF8("aaaaaaaaaaaaaaaaaaaaaaaaa"), "}");
   outbox_event_t *ev = outbox_event_new("t", data);
   outbox_collection_t *cold;
   bson_error_t e;
   bson_t *before;

   lt_open(&t, opts);
   cold = lt_second_handle(&t, opts);
   cr_assert(outbox_collection_create(t.coll, &id, fields, NULL, 0, NULL, &e), "%s", e.message);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_append(t.coll, &id, &ev, 1, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE, "%s", e.message);
   cr_assert_not(outbox_collection_update(cold, &id, 1, NULL, &ev, 1, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   cr_assert(outbox_collection_update(t.coll, &id, 1, set, NULL, 0, NULL, &e), "%s", e.message);
   cr_assert_eq(outbox_event_get_seq(ev), 0);
   bson_destroy(before);
   bson_destroy(fields);
   bson_destroy(data);
   bson_destroy(set);
   bson_destroy(opts);
   outbox_event_destroy(ev);
   outbox_collection_destroy(cold);
}

/* The server's own 16 MiB limit: a foreign writer grew the document behind the handle's back
 * (without changing the version), so the handle's size estimate is wrong and only the server
 * can refuse. The refusal must be OUTBOX_ERROR_LIMIT_SIZE and change nothing. */
Test(limits, server_size_limit)
{
   bson_t *opts = BCON_NEW("maxDocumentSize", BCON_INT32(16 * 1024 * 1024));
   bson_value_t id = lt_str_id("huge");
   bson_t *grow = blob("a", 15 * 1024 * 1024 + 512 * 1024), *data = blob("b", 900 * 1024);
   bson_t *update = bson_new(), *filter = bson_new();
   outbox_event_t *ev = outbox_event_new("t", data);
   bson_error_t e;
   bson_t *before;

   lt_open(&t, opts);
   cr_assert(outbox_collection_create(t.coll, &id, NULL, NULL, 0, NULL, &e), "%s", e.message);
   BSON_APPEND_DOCUMENT(update, "$set", grow);
   BSON_APPEND_VALUE(filter, "_id", &id);
   lt_raw_update(&t, filter, update);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, &ev, 1, NULL, &e));
   cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN, "%d.%d %s", e.domain, e.code, e.message);
   cr_assert_eq(e.code, OUTBOX_ERROR_LIMIT_SIZE, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   bson_destroy(grow);
   bson_destroy(data);
   bson_destroy(update);
   bson_destroy(filter);
   bson_destroy(opts);
   outbox_event_destroy(ev);
}

Test(limits, stale_cache_is_harmless)
{
   bson_value_t id = lt_str_id("stale");
   outbox_collection_t *other;
   outbox_event_t *evs[4];
   outbox_commit_t res;
   bson_error_t e;

   lt_open(&t, NULL);
   other = lt_second_handle(&t, NULL);
   lt_events_new(evs, 4, "t");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, &res, &e), "%s", e.message);
   /* t.coll's cache now says (version 1, eventSeq 1); the other handle moves on. */
   cr_assert(outbox_collection_append(other, &id, evs + 1, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 2);
   cr_assert(outbox_collection_update(t.coll, &id, 2, NULL, evs + 2, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 3);
   cr_assert_eq(res.first_seq, 3);
   cr_assert(outbox_collection_append(other, &id, evs + 3, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 4);
   cr_assert_eq(res.first_seq, 4);
   lt_events_destroy(evs, 4);
   outbox_collection_destroy(other);
}

Test(limits, retries_exhausted)
{
   bson_t *opts = BCON_NEW("appendRetries", BCON_INT32(1));
   bson_value_t id = lt_str_id("retry");
   outbox_collection_t *other;
   outbox_event_t *evs[2];
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   lt_open(&t, opts);
   other = lt_second_handle(&t, NULL);
   lt_events_new(evs, 2, "t");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, &res, &e), "%s", e.message);
   cr_assert(outbox_collection_append(other, &id, evs + 1, 1, &res, &e), "%s", e.message);
   before = lt_raw_get(&t, &id);
   outbox_event_t *late = outbox_event_new("t", NULL);
   /* One attempt, made with the stale cached state, misses; no attempt is left. */
   cr_assert_not(outbox_collection_append(t.coll, &id, &late, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_RETRIES_EXHAUSTED, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   /* The miss refreshed the cache, so the next call succeeds. */
   cr_assert(outbox_collection_append(t.coll, &id, &late, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 3);
   outbox_event_destroy(late);
   lt_events_destroy(evs, 2);
   bson_destroy(before);
   bson_destroy(opts);
   outbox_collection_destroy(other);
}

Test(limits, malformed_document)
{
   bson_value_t id = lt_str_id("mal");
   bson_t *doc =
      BCON_NEW("_id", BCON_UTF8("mal"), "version", BCON_UTF8("one"), "eventSeq", BCON_INT64(0));
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t e;
   bson_t *before;

   lt_open(&t, NULL);
   lt_raw_insert(&t, doc);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_append(t.coll, &id, &ev, 1, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_MALFORMED_DOCUMENT, "%s", e.message);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, &ev, 1, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_MALFORMED_DOCUMENT, "%s", e.message);
   cr_assert_not(outbox_collection_read(t.coll, &id, NULL, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_MALFORMED_DOCUMENT, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   bson_destroy(doc);
   outbox_event_destroy(ev);
}

Test(limits, renamed_fields_and_write_concern)
{
   bson_t *opts =
      BCON_NEW("versionField", BCON_UTF8("_v"), "eventSeqField", BCON_UTF8("_seq"), "eventsField",
               BCON_UTF8("outbox"), "deletedField", BCON_UTF8("removed"), "writeConcern", "{", "w",
               BCON_UTF8("majority"), "wtimeout", BCON_INT32(60000), "}");
   bson_value_t id = lt_str_id("ren");
   bson_t *update = BCON_NEW("$set", "{", "events", BCON_UTF8("a business field now"), "}");
   bson_t *bad = BCON_NEW("$set", "{", "outbox.0", BCON_INT32(1), "}");
   outbox_event_t *evs[2];
   bson_error_t e;
   bson_t *doc;
   bson_iter_t it;

   lt_open(&t, opts);
   lt_events_new(evs, 2, "t");
   cr_assert(outbox_collection_create(t.coll, &id, NULL, evs, 1, NULL, &e), "%s", e.message);
   cr_assert(outbox_collection_update(t.coll, &id, 1, update, NULL, 0, NULL, &e), "%s", e.message);
   cr_assert_not(outbox_collection_update(t.coll, &id, 2, bad, NULL, 0, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert(outbox_collection_soft_delete(t.coll, &id, 2, evs[1], NULL, &e), "%s", e.message);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "_v"), 3);
   cr_assert_eq(lt_int64(doc, "_seq"), 2);
   cr_assert_eq(lt_array_len(doc, "outbox"), 2);
   cr_assert(bson_iter_init_find(&it, doc, "removed") && bson_iter_as_bool(&it));
   cr_assert_not(bson_has_field(doc, "version"));
   cr_assert_not(bson_has_field(doc, "eventSeq"));
   cr_assert(bson_iter_init_find(&it, doc, "events") && BSON_ITER_HOLDS_UTF8(&it));
   bson_destroy(doc);
   bson_destroy(update);
   bson_destroy(bad);
   bson_destroy(opts);
   lt_events_destroy(evs, 2);
}

/* Asserts the filter is exactly {"events.0": {$exists: true}}. */
static void
assert_partial_filter(const bson_iter_t *filter)
{
   bson_iter_t it, cond;

   cr_assert(BSON_ITER_HOLDS_DOCUMENT(filter) && bson_iter_recurse(filter, &it));
   cr_assert(bson_iter_next(&it));
   cr_assert_str_eq(bson_iter_key(&it), "events.0");
   cr_assert(BSON_ITER_HOLDS_DOCUMENT(&it) && bson_iter_recurse(&it, &cond));
   cr_assert(bson_iter_next(&cond));
   cr_assert_str_eq(bson_iter_key(&cond), "$exists");
   cr_assert(bson_iter_as_bool(&cond));
   cr_assert_not(bson_iter_next(&cond));
   cr_assert_not(bson_iter_next(&it));
}

Test(limits, ensure_indexes)
{
   mongoc_client_t *client;
   mongoc_collection_t *c;
   mongoc_cursor_t *cursor;
   const bson_t *index;
   bson_error_t e;
   bool found = false;

   lt_open(&t, NULL);
   cr_assert(outbox_collection_ensure_indexes(t.coll, &e), "%s", e.message);
   cr_assert(outbox_collection_ensure_indexes(t.coll, &e), "idempotent: %s", e.message);
   client = mongoc_client_pool_pop(t.pool);
   c = mongoc_client_get_collection(client, LT_DB, t.coll_name);
   cursor = mongoc_collection_find_indexes_with_opts(c, NULL);
   while (mongoc_cursor_next(cursor, &index)) {
      bson_iter_t it;

      if (!bson_iter_init_find(&it, index, "name") ||
          strcmp(bson_iter_utf8(&it, NULL), "outbox_pending") != 0) {
         continue;
      }
      found = true;
      cr_assert(bson_iter_init(&it, index) && bson_iter_find_descendant(&it, "key.eventSeq", &it));
      cr_assert_eq(bson_iter_as_int64(&it), 1);
      cr_assert(bson_iter_init(&it, index) &&
                bson_iter_find_descendant(&it, "partialFilterExpression", &it));
      assert_partial_filter(&it);
   }
   cr_assert_not(mongoc_cursor_error(cursor, &e), "%s", e.message);
   mongoc_cursor_destroy(cursor);
   mongoc_collection_destroy(c);
   mongoc_client_pool_push(t.pool, client);
   cr_assert(found, "no outbox_pending index");
}
