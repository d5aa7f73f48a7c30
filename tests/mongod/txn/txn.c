/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Transactions' lifecycle (begin, abort, expiry), waiting for them, and the store hooks that
 * keep open transactions' snapshots (see txn.h). Callers hold the server lock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "data/keyenc.h"
#include "txn/txn-private.h"

/* SHA-256 of the empty string: the `uid` mongod gives sessions of unauthenticated clients
 * (change events show it in lsid). */
static const uint8_t anonymous_uid[32] = {
   0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
   0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55};

static void
on_doc_change(void *ctx, md_coll_t *coll, const bson_t *doc)
{
   md_txns_t *txns = ctx;
   if (!txns->open) {
      return;
   }
   bson_string_t *key = bson_string_new(NULL);
   if (md_keyenc_field(key, doc, "_id")) {
      for (md_txn_t *t = txns->open; t; t = t->next) {
         md_txn_view_t *v = md_txn_view_get(t, coll->db->name, coll->name, true);
         md_txn_view_preserve(v, coll);
         md_key_set_add(v->others, key->str, key->len);
      }
   }
   bson_string_free(key, true);
}

static void
on_catalog_change(void *ctx, md_db_t *db, const char *name, md_coll_t *coll)
{
   md_txns_t *txns = ctx;
   for (md_txn_t *t = txns->open; t; t = t->next) {
      md_txn_view_t *v = md_txn_view_get(t, db->name, name, true);
      if (coll) {
         md_txn_view_preserve(v, coll);
      } else if (!v->copy) {
         v->absent = true;
      }
      v->changed = true;
   }
}

void
md_txns_init(md_txns_t *txns, md_store_t *store, md_cursors_t *cursors, int64_t lifetime_ms)
{
   memset(txns, 0, sizeof *txns);
   txns->lifetime_ms = lifetime_ms;
   txns->cursors = cursors;
   pthread_condattr_t attr;
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&txns->cond, &attr);
   pthread_condattr_destroy(&attr);
   store->hooks.doc_change = on_doc_change;
   store->hooks.catalog_change = on_catalog_change;
   store->hooks.ctx = txns;
}

void
md_txns_destroy(md_txns_t *txns)
{
   while (txns->open) {
      md_txn_abort(txns, txns->open);
   }
   for (int i = 0; i < txns->n_pending; i++) {
      free(txns->pending[i].db);
      free(txns->pending[i].coll);
   }
   pthread_cond_destroy(&txns->cond);
}

md_txn_t *
md_txn_begin(md_txns_t *txns, int64_t number, const bson_t *lsid)
{
   md_txn_t *txn = calloc(1, sizeof *txn);
   bson_iter_t it;
   txn->number = number;
   txn->state = MD_TXN_IN_PROGRESS;
   txn->lsid = bson_new();
   if (bson_iter_init_find(&it, lsid, "id")) {
      bson_append_value(txn->lsid, "id", 2, bson_iter_value(&it));
   }
   if (bson_iter_init_find(&it, lsid, "uid")) {
      bson_append_value(txn->lsid, "uid", 3, bson_iter_value(&it));
   } else {
      bson_append_binary(txn->lsid, "uid", 3, BSON_SUBTYPE_BINARY, anonymous_uid,
                         sizeof anonymous_uid);
   }
   txn->expire_ms = md_now_ms() + txns->lifetime_ms;
   txn->next = txns->open;
   if (txns->open) {
      txns->open->prev = txn;
   }
   txns->open = txn;
   return txn;
}

md_txn_t *
md_txn_begin_branch(md_txns_t *txns)
{
   bson_t none = BSON_INITIALIZER;
   md_txn_t *txn = md_txn_begin(txns, 0, &none);
   txn->branch = true;
   txn->expire_ms = INT64_MAX;
   return txn;
}

void
md_txn_unlink(md_txns_t *txns, md_txn_t *txn, md_txn_state_t state)
{
   if (txn->prev) {
      txn->prev->next = txn->next;
   } else {
      txns->open = txn->next;
   }
   if (txn->next) {
      txn->next->prev = txn->prev;
   }
   txn->prev = txn->next = NULL;
   txn->state = state;
}

void
md_txn_release(md_txns_t *txns, md_txn_t *txn)
{
   while (txn->views) {
      md_txn_view_t *next = txn->views->next;
      md_txn_view_free(txn->views);
      txn->views = next;
   }
   for (size_t i = 0; i < txn->n_ops; i++) {
      md_oplog_entry_free(txn->ops[i]);
   }
   free(txn->ops);
   txn->ops = NULL;
   txn->n_ops = txn->cap_ops = 0;
   if (txns->cursors) {
      md_cursors_kill_owned(txns->cursors, txn);
   }
   txns->ended++;
   pthread_cond_broadcast(&txns->cond);
}

void
md_txn_abort(md_txns_t *txns, md_txn_t *txn)
{
   if (txn->state == MD_TXN_IN_PROGRESS) {
      md_txn_unlink(txns, txn, MD_TXN_ABORTED);
      md_txn_release(txns, txn);
   }
}

void
md_txn_free(md_txns_t *txns, md_txn_t *txn)
{
   if (txn) {
      md_txn_abort(txns, txn);
      bson_destroy(txn->lsid);
      free(txn);
   }
}

void
md_txn_log(md_txn_view_t *view, md_oplog_entry_t *entry)
{
   md_txn_t *txn = view->txn;
   if (txn->n_ops == txn->cap_ops) {
      txn->cap_ops = txn->cap_ops ? txn->cap_ops * 2 : 16;
      txn->ops = realloc(txn->ops, txn->cap_ops * sizeof *txn->ops);
   }
   txn->ops[txn->n_ops++] = entry;
}

void
md_txns_reap(md_txns_t *txns)
{
   if (!txns->open) {
      return;
   }
   int64_t now = md_now_ms();
   md_txn_t *t = txns->open;
   while (t) {
      md_txn_t *next = t->next;
      if (t->expire_ms <= now) {
         md_txn_abort(txns, t);
      }
      t = next;
   }
}

void
md_txns_abort_all(md_txns_t *txns)
{
   md_txn_t *t = txns->open;
   while (t) {
      md_txn_t *next = t->next;
      if (!t->branch) {
         md_txn_abort(txns, t);
      }
      t = next;
   }
}

bool
md_txns_wait(md_txns_t *txns, pthread_mutex_t *lock, int64_t deadline_ms)
{
   int64_t now = md_now_ms();
   if (now >= deadline_ms) {
      return false;
   }
   /* Wake for the first expiry too, and at least every minute. */
   int64_t until = deadline_ms - now > 60000 ? now + 60000 : deadline_ms;
   for (md_txn_t *t = txns->open; t; t = t->next) {
      until = t->expire_ms < until ? t->expire_ms : until;
   }
   until = until > now ? until : now + 1;
   struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
   pthread_cond_timedwait(&txns->cond, lock, &ts);
   md_txns_reap(txns);
   return true;
}

bool
md_txns_using(const md_txns_t *txns, const char *db, const char *coll)
{
   for (const md_txn_t *t = txns->open; t; t = t->next) {
      for (const md_txn_view_t *v = t->branch ? NULL : t->views; v; v = v->next) {
         if (v->used && strcmp(v->db.name, db) == 0 && (!coll || strcmp(v->name, coll) == 0)) {
            return true;
         }
      }
   }
   return false;
}

bool
md_txns_ddl_pending(md_txns_t *txns, const char *db, const char *coll, bool pending)
{
   for (int i = 0; i < txns->n_pending; i++) {
      bool same = strcmp(txns->pending[i].db, db) == 0 &&
                  (coll ? txns->pending[i].coll && strcmp(txns->pending[i].coll, coll) == 0
                        : !txns->pending[i].coll);
      if (same && !pending) {
         free(txns->pending[i].db);
         free(txns->pending[i].coll);
         txns->pending[i] = txns->pending[--txns->n_pending];
         return true;
      }
   }
   if (!pending || txns->n_pending == (int)(sizeof txns->pending / sizeof txns->pending[0])) {
      return false;
   }
   txns->pending[txns->n_pending].db = strdup(db);
   txns->pending[txns->n_pending].coll = coll ? strdup(coll) : NULL;
   txns->n_pending++;
   return true;
}
