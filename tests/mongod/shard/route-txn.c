/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Transactions through mongos, as 6.0's TransactionRouter (r6.0
 * src/mongo/s/transaction_router.cpp): a statement carrying autocommit: false runs as any
 * command would, and every shard it reaches gets the transaction's lsid, txnNumber and
 * autocommit, the first time also startTransaction and the first statement's readConcern;
 * the shard then joins the participants. commitTransaction with no participant is ok, with
 * one is sent to it, with several commits them one after the other once each has answered
 * a check that its transaction is still open (the shards have no prepare: a participant
 * that fails between the check and its commit is not rolled back on the others);
 * abortTransaction goes to every participant (none: 251). The session (route-session.c)
 * belongs to the command's thread while it runs; the thread finds it through `current`.
 */
#include <string.h>

#include "shard/router-private.h"

static _Thread_local md_rsession_t *current;

bool
md_route_in_txn(void)
{
   return current != NULL;
}

bool
md_txn_fields_for(md_router_t *r, int s, const bson_t *cmd, bson_t *out)
{
   md_rsession_t *t = current;
   if (!t || s < 0) {
      return false;
   }
   bool first = !(t->participants & (1u << s));
   bson_iter_t it;
   bson_init(out);
   bson_iter_init(&it, cmd);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      static const char *const own[] = {"$db",        "readConcern",      "lsid", "txnNumber",
                                        "autocommit", "startTransaction", NULL};
      bool skip = false;
      for (size_t i = 0; own[i]; i++) {
         skip = skip || strcmp(key, own[i]) == 0;
      }
      if (!skip) {
         bson_append_iter(out, key, -1, &it);
      }
   }
   BSON_APPEND_DOCUMENT(out, "lsid", t->lsid);
   BSON_APPEND_INT64(out, "txnNumber", t->active);
   BSON_APPEND_BOOL(out, "autocommit", false);
   if (first) {
      BSON_APPEND_BOOL(out, "startTransaction", true);
      if (t->read_concern) {
         BSON_APPEND_DOCUMENT(out, "readConcern", t->read_concern);
      }
      t->participants |= 1u << s;
   }
   if (bson_iter_init_find(&it, cmd, "$db")) {
      bson_append_iter(out, "$db", 3, &it);
   }
   (void)r;
   return true;
}

/* Sends `verb` (commitTransaction, abortTransaction, or a check) to participant `s`. */
static bool
end_on(md_router_t *r, md_rsession_t *t, int s, const char *verb, const bson_t *cmd, bson_t *reply)
{
   bson_t sent;
   bson_iter_t it;
   bson_init(&sent);
   BSON_APPEND_INT32(&sent, verb, 1);
   if (bson_iter_init_find(&it, cmd, "writeConcern")) {
      bson_append_iter(&sent, NULL, 0, &it);
   }
   BSON_APPEND_UTF8(&sent, "$db", "admin");
   md_rsession_t *saved = current;
   current = t;
   bool ok = md_router_call(r, s, &sent, reply);
   current = saved;
   bson_destroy(&sent);
   return ok;
}

/* A participant's transaction is still open: a read of a collection nobody has, in the
 * transaction's first database, succeeds. */
static bool
still_open(md_router_t *r, md_rsession_t *t, int s, bson_t *reply)
{
   bson_t sent;
   bson_init(&sent);
   BSON_APPEND_UTF8(&sent, "find", "outbox-test-mongod-commit-vote");
   BSON_APPEND_INT32(&sent, "limit", 1);
   BSON_APPEND_UTF8(&sent, "$db", t->db ? t->db : "test");
   md_rsession_t *saved = current;
   current = t;
   bool ok = md_router_call(r, s, &sent, reply);
   current = saved;
   bson_destroy(&sent);
   return ok;
}

static bool
commit(md_router_t *r, md_rsession_t *t, const bson_t *cmd, bson_t *reply)
{
   int n = 0, only = -1;
   for (int s = 0; s < r->n_shards; s++) {
      if (t->participants & (1u << s)) {
         n++;
         only = s;
      }
   }
   if (n == 0) {
      bson_init(reply);
      BSON_APPEND_DOUBLE(reply, "ok", 1.0);
      return true;
   }
   if (n == 1) {
      end_on(r, t, only, "commitTransaction", cmd, reply);
      return true;
   }
   for (int s = 0; s < r->n_shards; s++) { /* the vote: every participant still open */
      if ((t->participants & (1u << s)) && !still_open(r, t, s, reply)) {
         for (int a = 0; a < r->n_shards; a++) {
            if (t->participants & (1u << a)) {
               bson_t ignored;
               end_on(r, t, a, "abortTransaction", cmd, &ignored);
               bson_destroy(&ignored);
            }
         }
         return true; /* the failing participant's error (NoSuchTransaction ...) */
      }
      bson_destroy(reply);
   }
   bool first = true;
   for (int s = 0; s < r->n_shards; s++) {
      if (t->participants & (1u << s)) {
         bson_t one;
         end_on(r, t, s, "commitTransaction", cmd, &one);
         if (first) {
            bson_copy_to(&one, reply);
            first = false;
         }
         bson_destroy(&one);
      }
   }
   return true;
}

static bool
abort_all(md_router_t *r, md_rsession_t *t, const bson_t *cmd, bson_t *reply)
{
   bool answered = false;
   for (int s = 0; s < r->n_shards; s++) {
      if (t->participants & (1u << s)) {
         bson_t one;
         end_on(r, t, s, "abortTransaction", cmd, &one);
         if (!answered) {
            bson_copy_to(&one, reply);
            answered = true;
         }
         bson_destroy(&one);
      }
   }
   if (!answered) {
      md_router_error(r, reply, 251, "Transaction %lld has been aborted.", (long long)t->active);
   }
   return true;
}

/* Takes the statement's session and readies the transaction; false with *reply set. */
static bool
begin(md_router_t *r, const char *name, const bson_t *cmd, md_rsession_t **out, bson_t *reply)
{
   bson_iter_t it;
   if (md_rsession_begin(r, cmd, true, out, reply)) {
      return false;
   }
   md_rsession_t *t = *out;
   if (!t) {
      md_router_error(r, reply, 50768, "Transaction statements need lsid and txnNumber");
      return false;
   }
   bool start = bson_iter_init_find(&it, cmd, "startTransaction") && bson_iter_as_bool(&it);
   if (start && !t->started) {
      t->started = true;
      if (bson_iter_init_find(&it, cmd, "readConcern") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         uint32_t len;
         const uint8_t *data;
         bson_iter_document(&it, &len, &data);
         t->read_concern = bson_new_from_data(data, len);
      }
      bson_destroy(t->lsid);
      t->lsid = NULL;
      bson_free(t->db);
      t->db = bson_strdup(bson_iter_init_find(&it, cmd, "$db") && BSON_ITER_HOLDS_UTF8(&it)
                             ? bson_iter_utf8(&it, NULL)
                             : "test");
      if (bson_iter_init_find(&it, cmd, "lsid") && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         uint32_t len;
         const uint8_t *data;
         bson_iter_document(&it, &len, &data);
         t->lsid = bson_new_from_data(data, len);
      }
   }
   bool ending = strcmp(name, "commitTransaction") == 0 || strcmp(name, "abortTransaction") == 0;
   if (!t->started && !ending) {
      md_router_error(r, reply, 251, "Transaction %lld has been aborted.", (long long)t->active);
      md_rsession_end(r, t, reply);
      return false;
   }
   return true;
}

bool
md_route_txn(md_router_t *r, const char *name, const bson_t *cmd,
             bool (*dispatch)(md_router_t *, const char *, const bson_t *, bson_t *), bson_t *reply)
{
   md_rsession_t *t;
   if (!begin(r, name, cmd, &t, reply)) {
      return true;
   }
   if (!t->lsid) {
      md_router_error(r, reply, 251, "Transaction %lld has been aborted.", (long long)t->active);
   } else if (strcmp(name, "commitTransaction") == 0) {
      commit(r, t, cmd, reply);
   } else if (strcmp(name, "abortTransaction") == 0) {
      abort_all(r, t, cmd, reply);
   } else {
      current = t;
      dispatch(r, name, cmd, reply);
      current = NULL;
   }
   md_rsession_end(r, t, reply);
   return true;
}
