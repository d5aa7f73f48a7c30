/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The session table: logical sessions by lsid, their newest transaction number and the
 * replies of retryable writes already executed (answered again without running), session
 * ending and killing. Callers hold the server lock.
 */
#include "txn/sessions.h"

#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "data/keyenc.h"

typedef struct {
   int64_t active; /* the newest txnNumber seen, -1 before any */
   bool txn_mode;  /* `active` is a transaction (else a retryable write) */
   bson_t *reply;  /* the retryable write `active`'s reply, NULL until it completed */
   md_txn_t *txn;  /* txn_mode: transaction `active` */
} session_t;

typedef struct {
   md_sessions_t *sessions;
   md_txns_t *txns;
} free_ctx_t;

static void
free_session(void *value, void *ctx)
{
   session_t *s = value;
   free_ctx_t *fc = ctx;
   md_txn_free(fc->txns, s->txn);
   bson_destroy(s->reply);
   free(s);
}

void
md_sessions_init(md_sessions_t *sessions)
{
   sessions->map = md_hmap_new();
}

void
md_sessions_destroy(md_sessions_t *sessions, md_txns_t *txns)
{
   free_ctx_t fc = {sessions, txns};
   md_hmap_foreach(sessions->map, free_session, &fc);
   md_hmap_destroy(sessions->map);
}

/* Encodes the lsid's id into `key`; false if `lsid` has none. */
static bool
lsid_key(const bson_t *lsid, bson_string_t *key)
{
   return md_keyenc_field(key, lsid, "id");
}

/* The session of `lsid`, created (with no number yet) if `create`. */
static session_t *
get_session(md_sessions_t *sessions, const bson_t *lsid, bool create)
{
   bson_string_t *key = bson_string_new(NULL);
   session_t *s = NULL;
   if (lsid_key(lsid, key)) {
      s = md_hmap_get(sessions->map, key->str, key->len);
      if (!s && create) {
         s = calloc(1, sizeof *s);
         s->active = -1;
         md_hmap_put(sessions->map, key->str, key->len, s);
      }
   }
   bson_string_free(key, true);
   return s;
}

/* The command's lsid (as a static view) and txnNumber; false without them. */
static bool
command_session(const bson_t *cmd, bson_t *lsid, int64_t *txn)
{
   bson_iter_t it;
   uint32_t len;
   const uint8_t *data;
   if (!bson_iter_init_find(&it, cmd, "txnNumber") || !BSON_ITER_HOLDS_NUMBER(&it)) {
      return false;
   }
   *txn = bson_iter_as_int64(&it);
   if (!bson_iter_init_find(&it, cmd, "lsid") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return false;
   }
   bson_iter_document(&it, &len, &data);
   return bson_init_static(lsid, data, len);
}

/* Moves the session to a newer number: whatever it had open is aborted. */
static void
advance(session_t *s, md_txns_t *txns, int64_t number, bool txn_mode)
{
   md_txn_free(txns, s->txn);
   s->txn = NULL;
   bson_destroy(s->reply);
   s->reply = NULL;
   s->active = number;
   s->txn_mode = txn_mode;
}

static bool
too_old(const session_t *s, int64_t txn, bool for_txn, bson_error_t *error)
{
   const char *newer = s->txn_mode ? "transaction" : "retryable write";
   if (for_txn) {
      return tm_error_set(error, 225,
                          "Cannot start transaction with { txnNumber: %lld } on "
                          "session because a newer %s with txnNumber %lld has "
                          "already started on this session.",
                          (long long)txn, newer, (long long)s->active);
   }
   return tm_error_set(error, 225,
                       "Retryable write with txnNumber %lld is prohibited on "
                       "session because a newer %s with txnNumber %lld has "
                       "already started on this session.",
                       (long long)txn, newer, (long long)s->active);
}

bool
md_sessions_begin(md_sessions_t *sessions, md_txns_t *txns, const bson_t *cmd,
                  const bson_t **replay, bson_error_t *error)
{
   bson_t lsid;
   int64_t txn;
   *replay = NULL;
   if (!command_session(cmd, &lsid, &txn)) {
      return true;
   }
   session_t *s = get_session(sessions, &lsid, true);
   if (!s || txn > s->active) {
      if (s) {
         advance(s, txns, txn, false);
      }
      return true;
   }
   if (txn < s->active) {
      return too_old(s, txn, false, error);
   }
   if (s->txn_mode) {
      return tm_error_set(error, 217,
                          "Cannot retry a retryable write that has been converted "
                          "into a transaction");
   }
   *replay = s->reply;
   return true;
}

void
md_sessions_record(md_sessions_t *sessions, const bson_t *cmd, const bson_t *reply)
{
   bson_t lsid;
   int64_t txn;
   if (!command_session(cmd, &lsid, &txn)) {
      return;
   }
   session_t *s = get_session(sessions, &lsid, true);
   if (s && s->active == txn && !s->txn_mode) {
      bson_destroy(s->reply);
      s->reply = bson_copy(reply);
   }
}

md_txn_t *
md_sessions_txn(md_sessions_t *sessions, md_txns_t *txns, const bson_t *lsid, int64_t number,
                bool start, const char *name, bson_error_t *error)
{
   session_t *s = get_session(sessions, lsid, true);
   if (!s) {
      tm_error_set(error, 72, "Transaction number requires a session ID to also be specified");
      return NULL;
   }
   if (number < s->active) {
      too_old(s, number, true, error);
      return NULL;
   }
   if (start) {
      if (number == s->active) {
         tm_error_set(error, 117,
                      "Only servers in a sharded cluster can start a new "
                      "transaction at the active transaction number");
         return NULL;
      }
      advance(s, txns, number, true);
      s->txn = md_txn_begin(txns, number, lsid);
      return s->txn;
   }
   if (number != s->active || !s->txn) {
      tm_error_set(error, 251,
                   "Given transaction number %lld does not match any in-progress "
                   "transactions. The active transaction number is %lld",
                   (long long)number, (long long)s->active);
      return NULL;
   }
   if (s->txn->state == MD_TXN_ABORTED) {
      tm_error_set(error, 251, "Transaction with { txnNumber: %lld } has been aborted.",
                   (long long)number);
      return NULL;
   }
   if (s->txn->state == MD_TXN_COMMITTED && strcmp(name, "commitTransaction") != 0) {
      tm_error_set(error, 256, "Transaction with { txnNumber: %lld } has been committed.",
                   (long long)number);
      return NULL;
   }
   return s->txn;
}

void
md_sessions_end(md_sessions_t *sessions, md_txns_t *txns, const bson_t *cmd, bool forget)
{
   bson_iter_t it, arr;
   bson_iter_init(&it, cmd);
   if (!bson_iter_next(&it) || !BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) {
      return;
   }
   while (bson_iter_next(&arr)) {
      bson_t lsid;
      uint32_t len;
      const uint8_t *data;
      if (!BSON_ITER_HOLDS_DOCUMENT(&arr)) {
         continue;
      }
      bson_iter_document(&arr, &len, &data);
      bson_init_static(&lsid, data, len);
      bson_string_t *key = bson_string_new(NULL);
      session_t *s = lsid_key(&lsid, key) ? md_hmap_get(sessions->map, key->str, key->len) : NULL;
      if (s && forget) {
         free_ctx_t fc = {sessions, txns};
         md_hmap_remove(sessions->map, key->str, key->len);
         free_session(s, &fc);
      } else if (s && s->txn) {
         md_txn_abort(txns, s->txn);
      }
      bson_string_free(key, true);
   }
}

void
md_sessions_kill_all(md_sessions_t *sessions, md_txns_t *txns)
{
   (void)sessions;
   md_txns_abort_all(txns); /* not a branch: it belongs to no session */
}
