/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The idempotent inbox against a MongoDB (the test server, or OUTBOX_TEST_MONGODB_URI):
 * duplicate and out-of-order delivery, the window and the ledger, refused updates, and
 * concurrent deliveries of one event. Each test uses its own database.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <outbox/inbox.h>

static mongoc_client_pool_t *pool;
static char db[64];

static void
setup(void)
{
   const char *uri_s = getenv("OUTBOX_TEST_MONGODB_URI");
   mongoc_uri_t *uri;
   static int counter;

   cr_assert_not_null(uri_s, "OUTBOX_TEST_MONGODB_URI is not set (run under with-servers)");
   mongoc_init();
   uri = mongoc_uri_new(uri_s);
   cr_assert_not_null(uri);
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   mongoc_uri_destroy(uri);
   /* OUTBOX_TEST_DB_PREFIX: the run's databases under scripts/test --against. */
   snprintf(db, sizeof db, "%.20sinbox_test_%d_%d",
            getenv("OUTBOX_TEST_DB_PREFIX") ? getenv("OUTBOX_TEST_DB_PREFIX") : "", (int)getpid(),
            counter++);
}

static void
teardown(void)
{
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_database_t *d = mongoc_client_get_database(client, db);

   mongoc_database_drop(d, NULL);
   mongoc_database_destroy(d);
   mongoc_client_pool_push(pool, client);
   mongoc_client_pool_destroy(pool);
   mongoc_cleanup();
}

TestSuite(inbox, .init = setup, .fini = teardown, .timeout = 60);

static outbox_inbox_t *
open_inbox(const bson_t *opts)
{
   bson_error_t error;
   outbox_inbox_t *ib = outbox_inbox_new(pool, db, "state", opts, &error);

   cr_assert_not_null(ib, "inbox_new: %s", error.message);
   return ib;
}

static bson_value_t
sid(const char *s)
{
   bson_value_t v = {.value_type = BSON_TYPE_UTF8};

   v.value.v_utf8.str = (char *)s;
   v.value.v_utf8.len = (uint32_t)strlen(s);
   return v;
}

/* Applies {$inc: {n: 1}} for `event` and returns the result. */
static outbox_inbox_result_t
inc(outbox_inbox_t *ib, const char *doc, const char *event, int64_t seq)
{
   bson_t *upd = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
   bson_value_t id = sid(doc);
   outbox_inbox_result_t res;
   bson_error_t error;

   cr_assert(outbox_inbox_apply(ib, &id, event, seq, upd, &res, &error), "apply %s: %s", event,
             error.message);
   bson_destroy(upd);
   return res;
}

/* Reads an integer field of state document `doc` (-1 if the document is missing). */
static int64_t
field(const char *doc, const char *name)
{
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, db, "state");
   bson_t *filter = BCON_NEW("_id", BCON_UTF8(doc));
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, filter, NULL, NULL);
   const bson_t *d;
   bson_iter_t it;
   int64_t v = -1;

   if (mongoc_cursor_next(cur, &d))
      v = bson_iter_init_find(&it, d, name) ? bson_iter_as_int64(&it) : 0;
   mongoc_cursor_destroy(cur);
   bson_destroy(filter);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(pool, client);
   return v;
}

Test(inbox, duplicate_is_skipped)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   outbox_inbox_result_t r;

   r = inc(ib, "c1", "e-1", 1);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(r.order, OUTBOX_SEQ_IN_ORDER);
   cr_assert(r.ledger_recorded);
   r = inc(ib, "c1", "e-1", 1);
   cr_assert_eq(r.status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(field("c1", "n"), 1, "a duplicate must not change the state");
   cr_assert_eq(field("c1", "inboxSeq"), 1);
   outbox_inbox_destroy(ib);
}

Test(inbox, out_of_order_is_applied_once_and_classified)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   outbox_inbox_result_t r;

   cr_assert_eq(inc(ib, "c2", "e-1", 1).order, OUTBOX_SEQ_IN_ORDER);
   r = inc(ib, "c2", "e-3", 3);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(r.order, OUTBOX_SEQ_GAP);
   cr_assert_eq(r.previous_seq, 1);
   r = inc(ib, "c2", "e-2", 2);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(r.order, OUTBOX_SEQ_LATE);
   cr_assert_eq(r.previous_seq, 3);
   cr_assert_eq(inc(ib, "c2", "e-3", 3).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(inc(ib, "c2", "e-2", 2).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(inc(ib, "c2", "e-1", 1).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(field("c2", "n"), 3);
   cr_assert_eq(field("c2", "inboxSeq"), 3, "inboxSeq is the highest seq applied");
   outbox_inbox_destroy(ib);
}

Test(inbox, ledger_catches_duplicates_beyond_the_window)
{
   bson_t *opts = BCON_NEW("window", BCON_INT32(2));
   outbox_inbox_t *ib = open_inbox(opts);
   char ev[16];

   for (int i = 1; i <= 4; i++) {
      snprintf(ev, sizeof ev, "w-%d", i);
      cr_assert_eq(inc(ib, "c3", ev, i).status, OUTBOX_INBOX_APPLIED);
   }
   cr_assert_eq(inc(ib, "c3", "w-1", 1).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(field("c3", "n"), 4);
   outbox_inbox_destroy(ib);
   bson_destroy(opts);
}

Test(inbox, without_ledger_the_window_is_the_limit)
{
   bson_t *opts = BCON_NEW("window", BCON_INT32(2), "ledger", BCON_UTF8(""));
   outbox_inbox_t *ib = open_inbox(opts);
   outbox_inbox_result_t r;

   inc(ib, "c4", "x-1", 1);
   inc(ib, "c4", "x-2", 2);
   cr_assert_eq(inc(ib, "c4", "x-2", 2).status, OUTBOX_INBOX_DUPLICATE, "still in the window");
   inc(ib, "c4", "x-3", 3);
   /* x-1 left the window and there is no ledger: the documented limit. Its seq gives it away
    * as late, so a consumer can still decide to ignore it. */
   r = inc(ib, "c4", "x-1", 1);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(r.order, OUTBOX_SEQ_LATE);
   cr_assert_not(r.ledger_recorded);
   outbox_inbox_destroy(ib);
   bson_destroy(opts);
}

Test(inbox, refused_updates_write_nothing)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   bson_value_t id = sid("c5");
   bson_error_t error;
   bson_t *bad1 = BCON_NEW("$set", "{", "inbox", BCON_UTF8("x"), "}");
   bson_t *bad2 = BCON_NEW("$unset", "{", "inboxSeq.a", BCON_UTF8(""), "}");
   bson_t *bad3 = BCON_NEW("n", BCON_INT32(1));
   bson_t *bad4 = BCON_NEW("$rename", "{", "a", BCON_UTF8("_id"), "}");

   cr_assert_not(outbox_inbox_apply(ib, &id, "r-1", 1, bad1, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_not(outbox_inbox_apply(ib, &id, "r-1", 1, bad2, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_not(outbox_inbox_apply(ib, &id, "r-1", 1, bad3, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_not(outbox_inbox_apply(ib, &id, "r-1", 1, bad4, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_RESERVED_FIELD);
   cr_assert_not(outbox_inbox_apply(ib, &id, "", 1, NULL, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   cr_assert_eq(field("c5", "n"), -1, "nothing may be written");
   bson_destroy(bad1);
   bson_destroy(bad2);
   bson_destroy(bad3);
   bson_destroy(bad4);
   outbox_inbox_destroy(ib);
}

/* Number of documents in collection `name` of the test's database. */
static int64_t
count_docs(const char *name)
{
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, db, name);
   bson_t filter = BSON_INITIALIZER;
   bson_error_t error;
   int64_t n = mongoc_collection_count_documents(coll, &filter, NULL, NULL, NULL, &error);

   cr_assert_geq(n, 0, "count %s: %s", name, error.message);
   bson_destroy(&filter);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(pool, client);
   return n;
}

Test(inbox, invalid_utf8_is_refused_before_io)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   bson_value_t id = sid("c6"), bad_id = sid("c\xff\xfe");
   bson_t *bad_value = BCON_NEW("$set", "{", "name", BCON_UTF8("A\xc3"), "}");
   bson_t *bad_key = BCON_NEW("$set", "{", "n\xff", BCON_INT32(1), "}");
   bson_t *good = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
   bson_error_t error;
   bool seen = true;

   cr_assert_not(outbox_inbox_apply(ib, &id, "u-1", 1, bad_value, NULL, &error));
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", error.message);
   cr_assert_not(outbox_inbox_apply(ib, &id, "u-1", 1, bad_key, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", error.message);
   cr_assert_not(outbox_inbox_apply(ib, &bad_id, "u-1", 1, good, NULL, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", error.message);
   cr_assert_not(outbox_inbox_seen(ib, &bad_id, "u-1", &seen, &error));
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT, "%s", error.message);
   cr_assert_not(seen);
   cr_assert_eq(count_docs("state"), 0, "nothing may be written");
   cr_assert_eq(count_docs("state_inbox"), 0, "nothing may be recorded");
   bson_destroy(bad_value);
   bson_destroy(bad_key);
   bson_destroy(good);
   outbox_inbox_destroy(ib);
}

Test(inbox, caller_push_and_max_are_merged)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   bson_value_t id = sid("c6");
   bson_error_t error;
   outbox_inbox_result_t r;
   bson_t *upd =
      BCON_NEW("$push", "{", "log", BCON_UTF8("a"), "}", "$max", "{", "hi", BCON_INT32(7), "}");

   cr_assert(outbox_inbox_apply(ib, &id, "m-1", 1, upd, &r, &error), "%s", error.message);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(field("c6", "hi"), 7);
   cr_assert_eq(field("c6", "inboxSeq"), 1);
   bson_destroy(upd);
   outbox_inbox_destroy(ib);
}

Test(inbox, no_upsert_reports_not_found)
{
   bson_t *opts = BCON_NEW("upsert", BCON_BOOL(false));
   outbox_inbox_t *ib = open_inbox(opts);
   bson_value_t id = sid("missing");
   bson_error_t error;

   cr_assert_not(outbox_inbox_apply(ib, &id, "n-1", 1, NULL, NULL, &error));
   cr_assert_eq(error.domain, OUTBOX_ERROR_DOMAIN);
   cr_assert_eq(error.code, OUTBOX_ERROR_NOT_FOUND);
   outbox_inbox_destroy(ib);
   bson_destroy(opts);
}

Test(inbox, seen_and_indexes)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   bson_value_t id = sid("c7");
   bson_error_t error;
   bool seen = true;

   cr_assert(outbox_inbox_ensure_indexes(ib, &error), "%s", error.message);
   cr_assert(outbox_inbox_ensure_indexes(ib, &error), "idempotent: %s", error.message);
   cr_assert(outbox_inbox_seen(ib, &id, "s-1", &seen, &error), "%s", error.message);
   cr_assert_not(seen);
   inc(ib, "c7", "s-1", 1);
   cr_assert(outbox_inbox_seen(ib, &id, "s-1", &seen, &error));
   cr_assert(seen);
   cr_assert_not(outbox_inbox_seen(ib, NULL, "s-1", &seen, &error), "doc id is required");
   cr_assert_eq(error.code, OUTBOX_ERROR_INVALID_ARGUMENT);
   outbox_inbox_destroy(ib);
}

Test(inbox, one_event_feeds_several_documents)
{
   bson_t *opts = BCON_NEW("window", BCON_INT32(1));
   outbox_inbox_t *ib = open_inbox(opts);

   cr_assert_eq(inc(ib, "d1", "shared", 0).status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(inc(ib, "d2", "shared", 0).status, OUTBOX_INBOX_APPLIED);
   inc(ib, "d1", "other", 0); /* pushes "shared" out of d1's window: the ledger remembers */
   cr_assert_eq(inc(ib, "d1", "shared", 0).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(inc(ib, "d2", "shared", 0).status, OUTBOX_INBOX_DUPLICATE);
   cr_assert_eq(field("d1", "n"), 2);
   cr_assert_eq(field("d2", "n"), 1);
   outbox_inbox_destroy(ib);
   bson_destroy(opts);
}

Test(inbox, other_unique_index_errors_pass_through)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   mongoc_client_t *client = mongoc_client_pool_pop(pool);
   mongoc_database_t *d = mongoc_client_get_database(client, db);
   bson_t *cmd = BCON_NEW("createIndexes", BCON_UTF8("state"), "indexes", "[", "{", "key", "{",
                          "email", BCON_INT32(1), "}", "name", BCON_UTF8("email_1"), "unique",
                          BCON_BOOL(true), "}", "]");
   bson_t *upd = BCON_NEW("$set", "{", "email", BCON_UTF8("same@x.org"), "}");
   bson_value_t a = sid("u1"), b = sid("u2");
   bson_error_t error;

   cr_assert(mongoc_database_write_command_with_opts(d, cmd, NULL, NULL, &error), "%s",
             error.message);
   mongoc_database_destroy(d);
   mongoc_client_pool_push(pool, client);
   cr_assert(outbox_inbox_apply(ib, &a, "u-1", 1, upd, NULL, &error), "%s", error.message);
   cr_assert_not(outbox_inbox_apply(ib, &b, "u-2", 1, upd, NULL, &error));
   cr_assert_eq(error.code, 11000, "the server's error passes through: %d %s", error.code,
                error.message);
   cr_assert_eq(field("u2", "n"), -1);
   bson_destroy(cmd);
   bson_destroy(upd);
   outbox_inbox_destroy(ib);
}

typedef struct {
   outbox_inbox_t *ib;
   int applied;
} race_t;

static void *
race_one(void *arg)
{
   race_t *r = arg;
   bson_value_t id = sid("c8");
   bson_t *upd = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
   outbox_inbox_result_t res;
   bson_error_t error;

   if (outbox_inbox_apply(r->ib, &id, "race-1", 1, upd, &res, &error) &&
       res.status == OUTBOX_INBOX_APPLIED)
      r->applied = 1;
   bson_destroy(upd);
   return NULL;
}

Test(inbox, concurrent_deliveries_apply_once)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   pthread_t t[6];
   race_t r[6];
   int applied = 0;

   inc(ib, "c8", "race-0", 0); /* the document exists: the race is on the $ne guard */
   for (int i = 0; i < 6; i++) {
      r[i] = (race_t){ib, 0};
      pthread_create(&t[i], NULL, race_one, &r[i]);
   }
   for (int i = 0; i < 6; i++) {
      pthread_join(t[i], NULL);
      applied += r[i].applied;
   }
   cr_assert_eq(applied, 1, "exactly one delivery applies");
   cr_assert_eq(field("c8", "n"), 2);
   outbox_inbox_destroy(ib);
}

typedef struct {
   outbox_inbox_t *ib;
   char event[16];
   int applied;
   int failed;
} upsert_race_t;

static void *
upsert_one(void *arg)
{
   upsert_race_t *r = arg;
   bson_value_t id = sid("fresh");
   bson_t *upd = BCON_NEW("$inc", "{", "n", BCON_INT32(1), "}");
   outbox_inbox_result_t res;
   bson_error_t error;

   if (!outbox_inbox_apply(r->ib, &id, r->event, 0, upd, &res, &error))
      r->failed = 1;
   else if (res.status == OUTBOX_INBOX_APPLIED)
      r->applied = 1;
   bson_destroy(upd);
   return NULL;
}

/* Six deliveries race to create the same missing document: the losers of the insert see a
 * duplicate key on _id and must resolve it (duplicate when the event is the same, a retry
 * when it is another one). */
static int
race_on_missing_document(bool same_event, int *failed)
{
   outbox_inbox_t *ib = open_inbox(NULL);
   pthread_t t[6];
   upsert_race_t r[6];
   int applied = 0;

   *failed = 0;
   for (int i = 0; i < 6; i++) {
      r[i] = (upsert_race_t){.ib = ib};
      snprintf(r[i].event, sizeof r[i].event, "up-%d", same_event ? 0 : i);
      pthread_create(&t[i], NULL, upsert_one, &r[i]);
   }
   for (int i = 0; i < 6; i++) {
      pthread_join(t[i], NULL);
      applied += r[i].applied;
      *failed += r[i].failed;
   }
   outbox_inbox_destroy(ib);
   return applied;
}

Test(inbox, racing_upserts_of_one_event_apply_once)
{
   int failed;

   cr_assert_eq(race_on_missing_document(true, &failed), 1);
   cr_assert_eq(failed, 0);
   cr_assert_eq(field("fresh", "n"), 1);
}

Test(inbox, racing_upserts_of_different_events_all_apply)
{
   int failed;

   cr_assert_eq(race_on_missing_document(false, &failed), 6);
   cr_assert_eq(failed, 0);
   cr_assert_eq(field("fresh", "n"), 6);
}

Test(inbox, skip_late_refuses_older_events_atomically)
{
   bson_t *opts =
      BCON_NEW("skipLate", BCON_BOOL(true), "window", BCON_INT32(2), "ledger", BCON_UTF8(""));
   outbox_inbox_t *ib = open_inbox(opts);
   outbox_inbox_result_t r;

   cr_assert_eq(inc(ib, "k1", "k-1", 1).status, OUTBOX_INBOX_APPLIED);
   r = inc(ib, "k1", "k-3", 3);
   cr_assert_eq(r.status, OUTBOX_INBOX_APPLIED);
   cr_assert_eq(r.order, OUTBOX_SEQ_GAP);
   r = inc(ib, "k1", "k-2", 2);
   cr_assert_eq(r.status, OUTBOX_INBOX_SKIPPED_LATE);
   cr_assert_eq(r.order, OUTBOX_SEQ_LATE);
   cr_assert_eq(r.previous_seq, 3);
   cr_assert_eq(inc(ib, "k1", "k-3", 3).status, OUTBOX_INBOX_DUPLICATE, "still in the window");
   inc(ib, "k1", "k-4", 4);
   inc(ib, "k1", "k-5", 5);
   /* k-1 left the window and there is no ledger, but its seq still keeps it out. */
   cr_assert_eq(inc(ib, "k1", "k-1", 1).status, OUTBOX_INBOX_SKIPPED_LATE);
   cr_assert_eq(field("k1", "n"), 4);
   cr_assert_eq(field("k1", "inboxSeq"), 5);
   /* A new document takes any first seq (a gap), and seq 0 is never late. */
   cr_assert_eq(inc(ib, "k2", "k2-7", 7).order, OUTBOX_SEQ_GAP);
   cr_assert_eq(inc(ib, "k2", "k2-untracked", 0).status, OUTBOX_INBOX_APPLIED);
   outbox_inbox_destroy(ib);
   bson_destroy(opts);
}
