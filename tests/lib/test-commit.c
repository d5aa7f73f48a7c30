/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Integration tests: create, update, append and their outcomes. Every refused change must
 * leave the stored document exactly as it was.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "event-private.h"
#include "lib-test.h"

static lt_t t;

static void
setup(void)
{
   lt_init(&t, "commit", NULL, NULL);
   lt_open(&t, NULL);
}

static void
teardown(void)
{
   lt_cleanup(&t);
}

TestSuite(commit, .init = setup, .fini = teardown, .timeout = 60);

/* Creates entity `id` with `n` events of type "t.created"; asserts success. */
static void
create(const bson_value_t *id, int n)
{
   outbox_event_t *evs[8];
   bson_t *fields = BCON_NEW("name", BCON_UTF8("Ada"), "n", BCON_INT32(0));
   outbox_commit_t res;
   bson_error_t e;

   lt_events_new(evs, n, "t.created");
   cr_assert(outbox_collection_create(t.coll, id, fields, evs, (size_t)n, &res, &e), "%s",
             e.message);
   cr_assert_eq(res.version, 1);
   lt_events_destroy(evs, n);
   bson_destroy(fields);
}

/* Asserts the stored events of `doc` are valid and numbered first..last. */
static void
assert_events(const bson_t *doc, int64_t first, int64_t last)
{
   bson_iter_t it, arr;
   bson_error_t e;
   int64_t expect = first;

   cr_assert(bson_iter_init_find(&it, doc, "events") && BSON_ITER_HOLDS_ARRAY(&it));
   bson_iter_recurse(&it, &arr);
   while (bson_iter_next(&arr)) {
      uint32_t len;
      const uint8_t *data;
      bson_t ev;

      bson_iter_document(&arr, &len, &data);
      bson_init_static(&ev, data, len);
      cr_assert(_outbox_stored_event_validate(&ev, &e), "%s", e.message);
      cr_assert_eq(lt_int64(&ev, "seq"), expect++);
   }
   cr_assert_eq(expect, last + 1, "events end at %" PRId64 ", expected %" PRId64, expect - 1, last);
}

Test(commit, create_stores_the_contract)
{
   bson_value_t id = lt_str_id("c-1");
   bson_t *data = BCON_NEW("email", BCON_UTF8("ada@example.org"));
   outbox_event_t *evs[2] = {outbox_event_new("contact.created", data),
                             outbox_event_new("contact.welcomed", NULL)};
   bson_t *fields = BCON_NEW("name", BCON_UTF8("Ada"));
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc, read;
   int64_t version;
   bson_iter_t it;

   cr_assert(outbox_event_set_header(evs[1], "x-request-id", "00-1-01", &e));
   cr_assert(outbox_collection_create(t.coll, &id, fields, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 1);
   cr_assert_eq(res.first_seq, 1);
   cr_assert_eq(res.last_seq, 2);
   cr_assert_eq(outbox_event_get_seq(evs[0]), 1);
   cr_assert_eq(outbox_event_get_seq(evs[1]), 2);
   cr_assert_gt(outbox_event_get_time(evs[1]), 1600000000000);
   doc = lt_raw_get(&t, &id);
   cr_assert_not_null(doc);
   cr_assert_eq(lt_int64(doc, "version"), 1);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 2);
   assert_events(doc, 1, 2);
   cr_assert(bson_iter_init(&it, doc) && bson_iter_find_descendant(&it, "events.0.id", &it));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), outbox_event_get_id(evs[0]));
   cr_assert(bson_iter_init(&it, doc) &&
             bson_iter_find_descendant(&it, "events.0.data.email", &it));
   cr_assert(bson_iter_init(&it, doc) &&
             bson_iter_find_descendant(&it, "events.1.headers.x-request-id", &it));
   cr_assert(outbox_collection_read(t.coll, &id, &read, &version, &e), "%s", e.message);
   cr_assert_eq(version, 1);
   cr_assert(bson_equal(&read, doc));
   bson_destroy(&read);
   bson_destroy(doc);
   bson_destroy(fields);
   bson_destroy(data);
   outbox_event_destroy(evs[0]);
   outbox_event_destroy(evs[1]);
}

Test(commit, create_without_events)
{
   bson_value_t id = lt_int_id(7);
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   cr_assert(outbox_collection_create(t.coll, &id, NULL, NULL, 0, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 0);
   cr_assert_eq(res.last_seq, 0);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 0);
   cr_assert_eq(lt_array_len(doc, "events"), 0);
   bson_destroy(doc);
}

Test(commit, create_existing_id)
{
   bson_value_t id = lt_str_id("dup");
   outbox_event_t *ev = outbox_event_new("t", NULL);
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   create(&id, 1);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_create(t.coll, &id, NULL, &ev, 1, &res, &e));
   cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(e.code, OUTBOX_ERROR_ALREADY_EXISTS, "%s", e.message);
   cr_assert_eq(outbox_event_get_seq(ev), 0);
   cr_assert_eq(res.version, 0);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   outbox_event_destroy(ev);
}

Test(commit, id_types)
{
   uint8_t uuid[16] = {1, 2, 3, 4, 5, 6, 0x47, 8, 0x89, 10, 11, 12, 13, 14, 15, 16};
   bson_value_t ids[5] = {{.value_type = BSON_TYPE_OID},
                          {.value_type = BSON_TYPE_INT32, .value.v_int32 = 5},
                          {.value_type = BSON_TYPE_INT64, .value.v_int64 = 1LL << 40},
                          lt_str_id("ünïcode"),
                          {.value_type = BSON_TYPE_BINARY}};
   bson_error_t e;
   int64_t version;

   bson_oid_init(&ids[0].value.v_oid, NULL);
   ids[4].value.v_binary.subtype = BSON_SUBTYPE_UUID;
   ids[4].value.v_binary.data = uuid;
   ids[4].value.v_binary.data_len = 16;
   for (int i = 0; i < 5; i++) {
      outbox_event_t *ev = outbox_event_new("t", NULL);

      cr_assert(outbox_collection_create(t.coll, &ids[i], NULL, NULL, 0, NULL, &e), "%d: %s", i,
                e.message);
      cr_assert(outbox_collection_append(t.coll, &ids[i], &ev, 1, NULL, &e), "%d: %s", i,
                e.message);
      cr_assert(outbox_collection_read(t.coll, &ids[i], NULL, &version, &e), "%s", e.message);
      cr_assert_eq(version, 2);
      cr_assert_eq(outbox_event_get_seq(ev), 1);
      outbox_event_destroy(ev);
   }
}

Test(commit, update_with_events)
{
   bson_value_t id = lt_str_id("u");
   bson_t *update = BCON_NEW("$set", "{", "name", BCON_UTF8("Grace"), "}", "$inc", "{", "n",
                             BCON_INT32(2), "}", "$push", "{", "tags", BCON_UTF8("x"), "}");
   outbox_event_t *evs[2] = {outbox_event_new("t.renamed", NULL), outbox_event_new("t.b", NULL)};
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;
   bson_iter_t it;

   create(&id, 1);
   cr_assert(outbox_collection_update(t.coll, &id, 1, update, evs, 2, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 2);
   cr_assert_eq(res.last_seq, 3);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "version"), 2);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 3);
   assert_events(doc, 1, 3);
   cr_assert(bson_iter_init_find(&it, doc, "name"));
   cr_assert_str_eq(bson_iter_utf8(&it, NULL), "Grace");
   cr_assert(bson_iter_init_find(&it, doc, "n"));
   cr_assert_eq(bson_iter_as_int64(&it), 2);
   cr_assert_eq(lt_array_len(doc, "tags"), 1);
   bson_destroy(doc);
   bson_destroy(update);
   outbox_event_destroy(evs[0]);
   outbox_event_destroy(evs[1]);
}

Test(commit, update_without_events_bumps_version)
{
   bson_value_t id = lt_str_id("noev");
   bson_t *update = BCON_NEW("$unset", "{", "name", BCON_UTF8(""), "}");
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create(&id, 2);
   cr_assert(outbox_collection_update(t.coll, &id, 1, update, NULL, 0, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 0);
   cr_assert(outbox_collection_update(t.coll, &id, 2, NULL, NULL, 0, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 3);
   doc = lt_raw_get(&t, &id);
   cr_assert_eq(lt_int64(doc, "version"), 3);
   cr_assert_eq(lt_int64(doc, "eventSeq"), 2);
   cr_assert_not(bson_has_field(doc, "name"));
   bson_destroy(doc);
   bson_destroy(update);
}

Test(commit, conflict_reports_current_version)
{
   bson_value_t id = lt_str_id("conf");
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_t *update = BCON_NEW("$set", "{", "name", BCON_UTF8("x"), "}");
   outbox_commit_t res;
   bson_error_t e;
   bson_t *before;

   create(&id, 1);
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, NULL, 0, NULL, &e), "%s", e.message);
   before = lt_raw_get(&t, &id);
   for (int64_t stale = 1; stale <= 3; stale += 2) {
      cr_assert_not(outbox_collection_update(t.coll, &id, stale, update, &ev, 1, &res, &e));
      cr_assert_eq(e.domain, OUTBOX_ERROR_DOMAIN);
      cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT, "%s", e.message);
      cr_assert_eq(res.version, 2);
      cr_assert_not(outbox_collection_update(t.coll, &id, stale, update, NULL, 0, &res, &e));
      cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT, "%s", e.message);
      cr_assert_eq(res.version, 2);
   }
   cr_assert_eq(outbox_event_get_seq(ev), 0);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   bson_destroy(update);
   outbox_event_destroy(ev);
}

Test(commit, not_found)
{
   bson_value_t id = lt_str_id("ghost");
   outbox_event_t *ev = outbox_event_new("t", NULL);
   outbox_commit_t res;
   bson_error_t e;
   bson_t doc;
   int64_t version = 5;

   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, &ev, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, NULL, 0, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   cr_assert_not(outbox_collection_append(t.coll, &id, &ev, 1, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   cr_assert_not(outbox_collection_soft_delete(t.coll, &id, 1, ev, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   cr_assert_not(outbox_collection_read(t.coll, &id, &doc, &version, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   cr_assert(bson_empty(&doc));
   cr_assert_eq(version, 0);
   bson_destroy(&doc);
   lt_assert_unchanged(&t, &id, NULL);
   outbox_event_destroy(ev);
}

Test(commit, validation_errors_change_nothing)
{
   bson_value_t id = lt_str_id("val");
   outbox_event_t *bad = outbox_event_new("no spaces", NULL);
   outbox_event_t *good = outbox_event_new("ok", NULL);
   outbox_event_t *mixed[2] = {good, bad};
   bson_t *updates[4] = {
      BCON_NEW("$set", "{", "version", BCON_INT64(99), "}"),
      BCON_NEW("$pull", "{", "events", "{", "}", "}"),
      BCON_NEW("$rename", "{", "name", BCON_UTF8("eventSeq"), "}"),
      BCON_NEW("name", BCON_UTF8("replacement")),
   };
   bson_error_t e;
   bson_t *before;

   create(&id, 1);
   before = lt_raw_get(&t, &id);
   for (int i = 0; i < 4; i++) {
      cr_assert_not(outbox_collection_update(t.coll, &id, 1, updates[i], NULL, 0, NULL, &e));
      cr_assert_eq(e.code, i < 3 ? OUTBOX_ERROR_RESERVED_FIELD : OUTBOX_ERROR_INVALID_ARGUMENT);
      bson_destroy(updates[i]);
   }
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, NULL, mixed, 2, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_not(outbox_collection_append(t.coll, &id, mixed, 2, NULL, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_INVALID_EVENT);
   cr_assert_eq(outbox_event_get_seq(good), 0, "no event is half-committed");
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   outbox_event_destroy(bad);
   outbox_event_destroy(good);
}

Test(commit, append_numbers_on)
{
   bson_value_t id = lt_str_id("app");
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create(&id, 2);
   for (int i = 0; i < 3; i++) {
      outbox_event_t *evs[2] = {outbox_event_new("a", NULL), outbox_event_new("b", NULL)};

      cr_assert(outbox_collection_append(t.coll, &id, evs, 2, &res, &e), "%s", e.message);
      cr_assert_eq(res.version, 2 + i);
      cr_assert_eq(res.first_seq, 3 + 2 * i);
      cr_assert_eq(res.last_seq, 4 + 2 * i);
      outbox_event_destroy(evs[0]);
      outbox_event_destroy(evs[1]);
   }
   doc = lt_raw_get(&t, &id);
   assert_events(doc, 1, 8);
   bson_destroy(doc);
}

Test(commit, events_continue_after_publishing)
{
   bson_value_t id = lt_str_id("pub");
   outbox_event_t *ev = outbox_event_new("t", NULL);
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;

   create(&id, 3);
   lt_publish_all(&t, &id);
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, &ev, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.first_seq, 4, "seq is never reused");
   doc = lt_raw_get(&t, &id);
   assert_events(doc, 4, 4);
   bson_destroy(doc);
   outbox_event_destroy(ev);
}

Test(commit, soft_delete)
{
   bson_value_t id = lt_str_id("soft");
   outbox_event_t *ev = outbox_event_new("t.deleted", NULL);
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc, *before;
   bson_iter_t it;

   create(&id, 1);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_soft_delete(t.coll, &id, 2, ev, &res, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT);
   cr_assert_eq(res.version, 1);
   lt_assert_unchanged(&t, &id, before);
   cr_assert(outbox_collection_soft_delete(t.coll, &id, 1, ev, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 2);
   doc = lt_raw_get(&t, &id);
   cr_assert(bson_iter_init_find(&it, doc, "deleted") && bson_iter_as_bool(&it));
   assert_events(doc, 1, 2);
   bson_destroy(doc);
   bson_destroy(before);
   outbox_event_destroy(ev);
}

Test(commit, hard_delete_waits_for_publishing)
{
   bson_value_t id = lt_str_id("hard");
   bson_error_t e;
   bson_t *before;

   create(&id, 2);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_delete(t.coll, &id, 1, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_PENDING_EVENTS, "%s", e.message);
   cr_assert_not(outbox_collection_delete(t.coll, &id, OUTBOX_ANY_VERSION, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_PENDING_EVENTS, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   lt_publish_all(&t, &id);
   bson_destroy(before);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_delete(t.coll, &id, 2, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_CONFLICT, "%s", e.message);
   lt_assert_unchanged(&t, &id, before);
   cr_assert(outbox_collection_delete(t.coll, &id, 1, &e), "%s", e.message);
   lt_assert_unchanged(&t, &id, NULL);
   cr_assert_not(outbox_collection_delete(t.coll, &id, OUTBOX_ANY_VERSION, &e));
   cr_assert_eq(e.code, OUTBOX_ERROR_NOT_FOUND, "%s", e.message);
   bson_destroy(before);
}

Test(commit, recreate_after_delete)
{
   bson_value_t id = lt_str_id("again");
   outbox_event_t *ev = outbox_event_new("t", NULL);
   outbox_commit_t res;
   bson_error_t e;

   create(&id, 0);
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, NULL, 0, NULL, &e), "%s", e.message);
   cr_assert(outbox_collection_delete(t.coll, &id, OUTBOX_ANY_VERSION, &e), "%s", e.message);
   create(&id, 0);
   /* The handle's cache must not remember the deleted incarnation at version 2. */
   cr_assert(outbox_collection_update(t.coll, &id, 1, NULL, &ev, 1, &res, &e), "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert_eq(res.first_seq, 1);
   outbox_event_destroy(ev);
}

Test(commit, any_version_with_update)
{
   bson_value_t id = lt_str_id("anyv");
   bson_t *inc = BCON_NEW("$inc", "{", "n", BCON_INT32(5), "}");
   outbox_commit_t res;
   bson_error_t e;
   bson_t *doc;
   bson_iter_t it;

   create(&id, 0);
   cr_assert(outbox_collection_update(t.coll, &id, OUTBOX_ANY_VERSION, inc, NULL, 0, &res, &e),
             "%s", e.message);
   cr_assert_eq(res.version, 2);
   cr_assert(outbox_collection_soft_delete(t.coll, &id, OUTBOX_ANY_VERSION, NULL, &res, &e), "%s",
             e.message);
   cr_assert_eq(res.version, 3);
   cr_assert_eq(res.first_seq, 0, "a soft delete without an event appends none");
   doc = lt_raw_get(&t, &id);
   cr_assert(bson_iter_init_find(&it, doc, "n"));
   cr_assert_eq(bson_iter_as_int64(&it), 5);
   cr_assert(bson_iter_init_find(&it, doc, "deleted") && bson_iter_as_bool(&it));
   cr_assert_eq(lt_int64(doc, "eventSeq"), 0);
   cr_assert_eq(lt_array_len(doc, "events"), 0);
   bson_destroy(doc);
   bson_destroy(inc);
}

Test(commit, server_errors_pass_through)
{
   bson_value_t id = lt_str_id("srv");
   bson_t *bad = BCON_NEW("$inc", "{", "name", BCON_INT32(1), "}"); /* name is a string */
   outbox_event_t *ev = outbox_event_new("t", NULL);
   bson_error_t e;
   bson_t *before;

   create(&id, 0);
   before = lt_raw_get(&t, &id);
   cr_assert_not(outbox_collection_update(t.coll, &id, 1, bad, &ev, 1, NULL, &e));
   cr_assert_eq(e.domain, MONGOC_ERROR_SERVER, "%d.%d %s", e.domain, e.code, e.message);
   cr_assert_eq(e.code, 14, "TypeMismatch: %s", e.message);
   cr_assert_eq(outbox_event_get_seq(ev), 0);
   lt_assert_unchanged(&t, &id, before);
   bson_destroy(before);
   bson_destroy(bad);
   outbox_event_destroy(ev);
}
