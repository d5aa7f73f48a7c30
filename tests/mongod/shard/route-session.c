/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Retryable writes through mongos: the router's session table (lsid -> newest txnNumber and
 * the reply of the write it numbers). 6.0's shards de-duplicate a retried statement from
 * config.transactions (r6.0 src/mongo/db/transaction_participant.cpp,
 * checkStatementExecuted); test-mongod's mongos splits a batch into one command per
 * statement and shard, which the shards' whole-command record cannot tell apart, so the
 * router keeps the record for the whole command instead, with the same result for the
 * client: the retry is answered without running again. A transaction's number and
 * participants are kept here too (route-txn.c). As a 6.0 session is checked out by one
 * operation at a time, a second command of a session waits for the first; the session's
 * fields belong to that command's thread meanwhile. The table is guarded by the router's
 * lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/hmap.h"
#include "data/keyenc.h"
#include "shard/router-private.h"

static void
free_session(void *value, void *ctx)
{
   (void)ctx;
   md_rsession_t *s = value;
   bson_destroy(s->reply);
   bson_destroy(s->read_concern);
   bson_destroy(s->lsid);
   bson_free(s->db);
   free(s);
}

void
md_rsessions_destroy(md_router_t *r)
{
   if (r->sessions) {
      md_hmap_foreach(r->sessions, free_session, NULL);
      md_hmap_destroy(r->sessions);
   }
}

/* The command's lsid id (encoded into `key`) and txnNumber; false without them. */
static bool
command_session(const bson_t *cmd, bson_string_t *key, int64_t *txn)
{
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   bson_t lsid;
   if (!bson_iter_init_find(&it, cmd, "txnNumber") || !BSON_ITER_HOLDS_NUMBER(&it)) {
      return false;
   }
   *txn = bson_iter_as_int64(&it);
   if (!bson_iter_init_find(&it, cmd, "lsid") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return false;
   }
   bson_iter_document(&it, &len, &data);
   return bson_init_static(&lsid, data, len) && md_keyenc_field(key, &lsid, "id");
}

bool
md_rsession_begin(md_router_t *r, const bson_t *cmd, bool txn_mode, md_rsession_t **out,
                  bson_t *reply)
{
   bson_string_t *key = bson_string_new(NULL);
   int64_t txn;
   *out = NULL;
   if (!command_session(cmd, key, &txn)) {
      bson_string_free(key, true);
      return false;
   }
   pthread_mutex_lock(&r->lock);
   if (!r->sessions) {
      r->sessions = md_hmap_new();
   }
   md_rsession_t *s = md_hmap_get(r->sessions, key->str, key->len);
   if (!s) {
      s = calloc(1, sizeof *s);
      s->active = -1;
      md_hmap_put(r->sessions, key->str, key->len, s);
   }
   bson_string_free(key, true);
   while (s->busy) {
      pthread_cond_wait(&r->session_cond, &r->lock);
   }
   bool answered = true;
   if (txn < s->active) {
      md_router_error(r, reply, 225,
                      "%s %lld%s on session because a newer %s with txnNumber %lld has already "
                      "started on this session.",
                      txn_mode ? "Cannot start transaction with { txnNumber:"
                               : "Retryable write with txnNumber",
                      (long long)txn, txn_mode ? " }" : " is prohibited",
                      s->txn_mode ? "transaction" : "retryable write", (long long)s->active);
   } else if (txn == s->active && s->txn_mode != txn_mode) {
      md_router_error(r, reply, 217,
                      "Cannot retry a retryable write that has been converted into a "
                      "transaction");
   } else if (txn == s->active && s->reply) {
      bson_copy_to(s->reply, reply);
   } else {
      if (txn > s->active) {
         s->active = txn;
         s->txn_mode = txn_mode;
         bson_destroy(s->reply);
         s->reply = NULL;
         s->participants = 0;
         s->started = false;
         bson_destroy(s->read_concern);
         s->read_concern = NULL;
      }
      s->busy = true;
      *out = s;
      answered = false;
   }
   pthread_mutex_unlock(&r->lock);
   return answered;
}

void
md_rsession_end(md_router_t *r, md_rsession_t *s, const bson_t *reply)
{
   bson_iter_t it;
   pthread_mutex_lock(&r->lock);
   /* Only a write that ran is answered again: a command error means it did not, and 6.0
    * runs the retry then. */
   if (!s->txn_mode && bson_iter_init_find(&it, reply, "ok") && bson_iter_as_bool(&it)) {
      bson_destroy(s->reply);
      s->reply = bson_copy(reply);
   }
   s->busy = false;
   pthread_cond_broadcast(&r->session_cond);
   pthread_mutex_unlock(&r->lock);
}

static void
forget_txn(void *value, void *ctx)
{
   (void)ctx;
   md_rsession_t *s = value;
   if (!s->busy && s->txn_mode) {
      s->participants = 0;
      s->started = false;
   }
}

void
md_rsessions_kill_all(md_router_t *r)
{
   pthread_mutex_lock(&r->lock);
   if (r->sessions) {
      md_hmap_foreach(r->sessions, forget_txn, NULL);
   }
   pthread_mutex_unlock(&r->lock);
}
