/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Multi-document transactions through mongoc_client_session_*: writes appear at commit only
 * and all at once, abort leaves nothing, reads see a snapshot plus the transaction's own
 * writes, write conflicts fail with 112 and TransientTransactionError (and
 * mongoc_client_session_with_transaction retries them), writes and DDL outside a
 * transaction wait for one holding their documents, change streams show a committed
 * transaction's operations with lsid and txnNumber, commit can be retried.
 */
#include <criterion/criterion.h>

#include "tests/test-util.h"

typedef struct {
   mongoc_client_t *client, *other; /* two clients: "outside" writes use the second */
   mongoc_collection_t *coll, *ocoll;
   char *name;
} fixture_t;

static fixture_t fx;

static void
setup(void)
{
   fx.name = md_test_name("txn");
   fx.client = md_test_client(NULL, false);
   fx.other = md_test_client(NULL, false);
   fx.coll = mongoc_client_get_collection(fx.client, "mdtest", fx.name);
   fx.ocoll = mongoc_client_get_collection(fx.other, "mdtest", fx.name);
}

static void
teardown(void)
{
   mongoc_collection_destroy(fx.coll);
   mongoc_collection_destroy(fx.ocoll);
   mongoc_client_destroy(fx.client);
   mongoc_client_destroy(fx.other);
   bson_free(fx.name);
}

TestSuite(txn, .init = setup, .fini = teardown, .timeout = 60);

static bson_t *
json(const char *text)
{
   bson_error_t error;
   bson_t *doc = bson_new_from_json((const uint8_t *)text, -1, &error);
   cr_assert_not_null(doc, "%s: %s", text, error.message);
   return doc;
}

/* Options carrying the session (NULL: none) plus `extra` JSON (may be NULL). */
static bson_t *
opts_for(mongoc_client_session_t *session, const char *extra)
{
   bson_error_t error;
   bson_t *opts = json(extra ? extra : "{}");
   if (session) {
      cr_assert(mongoc_client_session_append(session, opts, &error), "%s", error.message);
   }
   return opts;
}

static mongoc_client_session_t *
start(mongoc_client_t *client)
{
   bson_error_t error;
   mongoc_client_session_t *s = mongoc_client_start_session(client, NULL, &error);
   cr_assert_not_null(s, "%s", error.message);
   cr_assert(mongoc_client_session_start_transaction(s, NULL, &error), "%s", error.message);
   return s;
}

static void
commit(mongoc_client_session_t *s)
{
   bson_error_t error;
   bson_t reply;
   bool ok = mongoc_client_session_commit_transaction(s, &reply, &error);
   bson_destroy(&reply);
   cr_assert(ok, "commit: %s", error.message);
}

static void
insert(mongoc_collection_t *coll, mongoc_client_session_t *s, const char *doc_json)
{
   bson_error_t error;
   bson_t *doc = json(doc_json), *opts = opts_for(s, NULL);
   bool ok = mongoc_collection_insert_one(coll, doc, opts, NULL, &error);
   cr_assert(ok, "insert %s: %s", doc_json, error.message);
   bson_destroy(opts);
   bson_destroy(doc);
}

/* Runs an update; returns the error code (0: success) and fills `reply` if not NULL. */
static uint32_t
update(mongoc_collection_t *coll, mongoc_client_session_t *s, const char *filter,
       const char *change, bson_t *reply)
{
   bson_error_t error;
   bson_t r, *f = json(filter), *u = json(change), *opts = opts_for(s, NULL);
   bool ok = mongoc_collection_update_one(coll, f, u, opts, &r, &error);
   if (reply) {
      bson_copy_to(&r, reply);
   }
   bson_destroy(&r);
   bson_destroy(opts);
   bson_destroy(u);
   bson_destroy(f);
   return ok ? 0 : error.code;
}

static int64_t
count(mongoc_collection_t *coll, mongoc_client_session_t *s, const char *filter)
{
   bson_error_t error;
   bson_t *f = json(filter), *opts = opts_for(s, NULL);
   int64_t n = mongoc_collection_count_documents(coll, f, opts, NULL, NULL, &error);
   cr_assert_geq(n, 0, "count: %s", error.message);
   bson_destroy(opts);
   bson_destroy(f);
   return n;
}

Test(txn, commit_is_atomic_and_visible_only_after_commit)
{
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *s = start(fx.client);
   insert(fx.coll, s, "{\"_id\": 1}");
   insert(fx.coll, s, "{\"_id\": 2}");
   cr_assert_eq(update(fx.coll, s, "{\"_id\": 0}", "{\"$set\": {\"v\": 1}}", NULL), 0);
   cr_assert_eq(count(fx.coll, s, "{}"), 3, "the transaction sees its own writes");
   cr_assert_eq(count(fx.coll, s, "{\"v\": 1}"), 1);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 1, "nothing is visible outside before commit");
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 0}"), 1);
   commit(s);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 3, "everything is visible after commit");
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 1}"), 1);
   mongoc_client_session_destroy(s);
}

Test(txn, abort_and_session_end_leave_nothing)
{
   bson_error_t error;
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *s = start(fx.client);
   insert(fx.coll, s, "{\"_id\": 1}");
   cr_assert_eq(update(fx.coll, s, "{\"_id\": 0}", "{\"$set\": {\"v\": 1}}", NULL), 0);
   cr_assert(mongoc_client_session_abort_transaction(s, &error), "%s", error.message);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 1);
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 0}"), 1);
   /* A transaction left open when its session ends is aborted too. */
   cr_assert(mongoc_client_session_start_transaction(s, NULL, &error), "%s", error.message);
   insert(fx.coll, s, "{\"_id\": 2}");
   mongoc_client_session_destroy(s);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 1);
}

Test(txn, reads_see_the_snapshot_and_own_writes)
{
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *s = start(fx.client);
   cr_assert_eq(count(fx.coll, s, "{}"), 1, "the first statement takes the snapshot");
   insert(fx.ocoll, NULL, "{\"_id\": 1}");
   cr_assert_eq(update(fx.ocoll, NULL, "{\"_id\": 0}", "{\"$set\": {\"v\": 9}}", NULL), 0);
   cr_assert_eq(count(fx.coll, s, "{}"), 1, "a later insert outside is not visible");
   cr_assert_eq(count(fx.coll, s, "{\"v\": 0}"), 1, "a later update outside is not visible");
   insert(fx.coll, s, "{\"_id\": 2}");
   cr_assert_eq(count(fx.coll, s, "{}"), 2, "own writes on top of the snapshot");
   commit(s);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 3);
   mongoc_client_session_destroy(s);
}

Test(txn, write_conflict_is_transient)
{
   bson_error_t error;
   bson_t reply;
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *a = start(fx.client), *b = start(fx.other);
   cr_assert_eq(update(fx.coll, a, "{\"_id\": 0}", "{\"$inc\": {\"v\": 1}}", NULL), 0);
   cr_assert_eq(update(fx.ocoll, b, "{\"_id\": 0}", "{\"$inc\": {\"v\": 10}}", &reply), 112,
                "the second writer of a document conflicts");
   cr_assert(mongoc_error_has_label(&reply, "TransientTransactionError"));
   bson_destroy(&reply);
   commit(a);
   cr_assert(!mongoc_client_session_commit_transaction(b, &reply, &error));
   cr_assert_eq(error.code, 251, "the conflict aborted b: %s", error.message);
   cr_assert(mongoc_error_has_label(&reply, "TransientTransactionError"));
   bson_destroy(&reply);
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 1}"), 1);
   mongoc_client_session_destroy(a);
   mongoc_client_session_destroy(b);
}

typedef struct {
   mongoc_client_session_t *holder; /* an open transaction holding the document */
   int attempts;
} retry_ctx_t;

static bool
increment(mongoc_client_session_t *session, void *ctx, bson_t **reply, bson_error_t *error)
{
   retry_ctx_t *rc = ctx;
   bson_t r;
   bson_t *f = json("{\"_id\": 0}"), *u = json("{\"$inc\": {\"v\": 10}}");
   bson_t *opts = opts_for(session, NULL);
   rc->attempts++;
   bool ok = mongoc_collection_update_one(fx.ocoll, f, u, opts, &r, error);
   if (!ok && rc->holder) {
      /* The conflict is over once the holder commits: the retry must succeed. */
      commit(rc->holder);
      rc->holder = NULL;
   }
   *reply = bson_copy(&r);
   bson_destroy(&r);
   bson_destroy(opts);
   bson_destroy(u);
   bson_destroy(f);
   return ok;
}

Test(txn, with_transaction_retries_a_write_conflict)
{
   bson_error_t error;
   bson_t reply;
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *holder = start(fx.client);
   cr_assert_eq(update(fx.coll, holder, "{\"_id\": 0}", "{\"$inc\": {\"v\": 1}}", NULL), 0);
   mongoc_client_session_t *s = mongoc_client_start_session(fx.other, NULL, &error);
   retry_ctx_t rc = {holder, 0};
   bool ok = mongoc_client_session_with_transaction(s, increment, NULL, &rc, &reply, &error);
   cr_assert(ok, "with_transaction: %s", error.message);
   cr_assert_eq(rc.attempts, 2, "one conflict, one retry");
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 11}"), 1, "both increments applied once");
   bson_destroy(&reply);
   mongoc_client_session_destroy(s);
   mongoc_client_session_destroy(holder);
}

Test(txn, outside_writes_and_ddl_wait_for_the_transaction)
{
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *s = start(fx.client);
   cr_assert_eq(update(fx.coll, s, "{\"_id\": 0}", "{\"$set\": {\"v\": 1}}", NULL), 0);
   bson_error_t error;
   bson_t *write = BCON_NEW("update", BCON_UTF8(fx.name), "updates", "[", "{", "q", "{", "_id",
                            BCON_INT32(0), "}", "u", "{", "$set", "{", "w", BCON_INT32(2), "}", "}",
                            "}", "]", "maxTimeMS", BCON_INT32(300));
   cr_assert(!mongoc_collection_command_simple(fx.ocoll, write, NULL, NULL, &error));
   cr_assert_eq(error.code, 50, "a write outside waits until maxTimeMS: %s", error.message);
   bson_t *drop = BCON_NEW("drop", BCON_UTF8(fx.name), "maxTimeMS", BCON_INT32(300));
   cr_assert(!mongoc_collection_command_simple(fx.ocoll, drop, NULL, NULL, &error));
   cr_assert_eq(error.code, 50, "DDL waits for the transaction: %s", error.message);
   bson_destroy(drop);
   bson_destroy(write);
   commit(s);
   cr_assert_eq(update(fx.ocoll, NULL, "{\"_id\": 0}", "{\"$set\": {\"w\": 2}}", NULL), 0);
   cr_assert_eq(count(fx.ocoll, NULL, "{\"v\": 1, \"w\": 2}"), 1);
   mongoc_client_session_destroy(s);
}

/* The next event within a deadline (events arrive after the writes that made them). */
static const bson_t *
next_event(mongoc_change_stream_t *cs)
{
   const bson_t *ev = NULL;
   bson_error_t error;
   int64_t deadline = bson_get_monotonic_time() + 10 * 1000 * 1000;
   while (!mongoc_change_stream_next(cs, &ev)) {
      cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
      cr_assert_lt(bson_get_monotonic_time(), deadline, "no change event within 10 s");
   }
   return ev;
}

static void
assert_txn_event(const bson_t *ev, const char *op, const bson_t *lsid, int64_t number)
{
   bson_iter_t it, a, b;
   md_test_assert_json(ev, "operationType", op);
   cr_assert(bson_iter_init_find(&it, ev, "txnNumber") && BSON_ITER_HOLDS_INT64(&it));
   cr_assert_eq(bson_iter_int64(&it), number);
   cr_assert(bson_iter_init(&a, ev) && bson_iter_find_descendant(&a, "lsid.id", &b));
   cr_assert(bson_iter_init_find(&it, lsid, "id"));
   const bson_value_t *x = bson_iter_value(&it), *y = bson_iter_value(&b);
   cr_assert(
      x->value_type == BSON_TYPE_BINARY && y->value_type == BSON_TYPE_BINARY &&
         x->value.v_binary.data_len == y->value.v_binary.data_len &&
         memcmp(x->value.v_binary.data, y->value.v_binary.data, x->value.v_binary.data_len) == 0,
      "the event's lsid is the session's");
}

Test(txn, change_stream_shows_committed_transactions_only)
{
   bson_error_t error;
   bson_t *opts = json("{\"maxAwaitTimeMS\": 200}"), *pipeline = json("{}");
   mongoc_change_stream_t *cs = mongoc_collection_watch(fx.coll, pipeline, opts);
   cr_assert(!mongoc_change_stream_error_document(cs, &error, NULL), "%s", error.message);
   insert(fx.ocoll, NULL, "{\"_id\": 0, \"v\": 0}");
   mongoc_client_session_t *s = start(fx.other);
   insert(fx.ocoll, s, "{\"_id\": 1}");
   cr_assert_eq(update(fx.ocoll, s, "{\"_id\": 0}", "{\"$set\": {\"v\": 1}}", NULL), 0);
   insert(fx.ocoll, s, "{\"_id\": 2}");
   commit(s);
   int64_t number = 0;
   bson_iter_t it;
   cr_assert(mongoc_client_session_start_transaction(s, NULL, &error), "%s", error.message);
   insert(fx.ocoll, s, "{\"_id\": 3}");
   cr_assert(mongoc_client_session_abort_transaction(s, &error), "%s", error.message);
   insert(fx.ocoll, NULL, "{\"_id\": \"after\"}");

   md_test_assert_json(next_event(cs), "documentKey._id", "0");
   const char *ops[] = {"\"insert\"", "\"update\"", "\"insert\""};
   char token[3][64];
   uint32_t t0 = 0, i0 = 0;
   for (int k = 0; k < 3; k++) {
      const bson_t *ev = next_event(cs);
      if (k == 0) {
         cr_assert(bson_iter_init_find(&it, ev, "txnNumber"));
         number = bson_iter_int64(&it);
      }
      assert_txn_event(ev, ops[k], mongoc_client_session_get_lsid(s), number);
      uint32_t t, i;
      cr_assert(bson_iter_init_find(&it, ev, "clusterTime"));
      bson_iter_timestamp(&it, &t, &i);
      cr_assert(k == 0 || (t == t0 && i == i0), "one cluster time: the commit's");
      t0 = t;
      i0 = i;
      cr_assert(bson_iter_init(&it, ev) && bson_iter_find_descendant(&it, "_id._data", &it));
      bson_strncpy(token[k], bson_iter_utf8(&it, NULL), sizeof token[k]);
      cr_assert(k == 0 || strcmp(token[k - 1], token[k]) < 0, "distinct, ordered tokens");
   }
   const bson_t *after = next_event(cs);
   md_test_assert_json(after, "documentKey._id", "\"after\"");
   cr_assert(!bson_has_field(after, "lsid"), "the aborted transaction left no event");
   mongoc_change_stream_destroy(cs);
   mongoc_client_session_destroy(s);
   bson_destroy(pipeline);
   bson_destroy(opts);
}

Test(txn, commit_can_be_retried)
{
   bson_error_t error;
   bson_t reply;
   mongoc_client_t *client = md_test_client("txn-retry-commit", false);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, "mdtest", fx.name);
   mongoc_client_session_t *s = start(client);
   insert(coll, s, "{\"_id\": 1}");
   /* The first commit attempt loses its connection before it runs; the driver retries. */
   bson_t *fp = json("{\"configureFailPoint\": \"failCommand\", \"mode\": {\"times\": 1}, "
                     "\"data\": {\"failCommands\": [\"commitTransaction\"], "
                     "\"closeConnection\": true, \"appName\": \"txn-retry-commit\"}}");
   md_test_admin(fx.other, fp, NULL);
   commit(s);
   /* Committing a committed transaction again succeeds (and changes nothing). */
   cr_assert(mongoc_client_session_commit_transaction(s, &reply, &error), "%s", error.message);
   bson_destroy(&reply);
   cr_assert_eq(count(fx.ocoll, NULL, "{}"), 1);
   bson_destroy(fp);
   mongoc_client_session_destroy(s);
   mongoc_collection_destroy(coll);
   mongoc_client_destroy(client);
}
