/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Committing a transaction: every collection it wrote takes the documents of its copy at
 * once, the collections it created appear, and its writes reach the oplog as one cluster
 * time. Conflicts on _id were settled when the writes ran; a unique key that someone else
 * took since then fails the commit before anything changes. Callers hold the server lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/keyenc.h"
#include "txn/txn-private.h"
#include "data/validator.h"

static bool
has_writes(const md_txn_view_t *v)
{
   return v->copy && (v->created || md_hmap_count(v->written) > 0);
}

static bool
id_key(const bson_t *doc, bson_string_t *key)
{
   return md_keyenc_field(key, doc, "_id");
}

/* True if no document of `live` outside the view's writes holds a unique key that one of
 * the view's new versions needs. */
static bool
unique_keys_free(const md_coll_t *live, const md_txn_view_t *v)
{
   for (md_doc_t *d = v->copy->head; d; d = d->next) {
      bson_string_t *key = bson_string_new(NULL);
      bool mine = id_key(d->bson, key) && md_key_set_has(v->written, key->str, key->len);
      bson_string_free(key, true);
      for (size_t i = 1; mine && i < live->n_indexes; i++) {
         md_doc_t *holder = md_coll_unique_holder(live, i, d->bson);
         if (!holder) {
            continue;
         }
         bson_string_t *hk = bson_string_new(NULL);
         bool replaced = id_key(holder->bson, hk) && md_key_set_has(v->written, hk->str, hk->len);
         bson_string_free(hk, true);
         if (!replaced) {
            return false;
         }
      }
   }
   return true;
}

static bool
can_commit(const md_txn_t *txn, md_store_t *store)
{
   for (const md_txn_view_t *v = txn->views; v; v = v->next) {
      if (!has_writes(v)) {
         continue;
      }
      md_coll_t *live = md_store_coll(store, v->db.name, v->name, false, NULL);
      if (v->created ? live != NULL : live == NULL) {
         return false;
      }
      if (live && !unique_keys_free(live, v)) {
         return false;
      }
   }
   return true;
}

typedef struct {
   md_change_t *changes;
   size_t n, cap;
   const md_coll_t *live, *copy;
} batch_t;

static void
batch_add(batch_t *b, md_doc_t *live, bson_t *next)
{
   if (b->n == b->cap) {
      b->cap = b->cap ? b->cap * 2 : 16;
      b->changes = realloc(b->changes, b->cap * sizeof *b->changes);
   }
   b->changes[b->n++] = (md_change_t){live, next};
}

/* A written _id that the copy no longer has: the transaction deleted the document. */
static void
add_delete(void *value, void *ctx)
{
   const md_key_t *k = value;
   batch_t *b = ctx;
   md_doc_t *live = md_hmap_get(b->live->ids, k->bytes, k->len);
   if (live && !md_hmap_get(b->copy->ids, k->bytes, k->len)) {
      batch_add(b, live, NULL);
   }
}

static void
create_like(md_coll_t *live, const md_coll_t *copy)
{
   bson_error_t error;
   bool existed;
   bson_destroy(live->options);
   live->options = bson_copy(copy->options);
   md_validator_install(live);
   for (size_t i = 1; i < copy->n_indexes; i++) {
      md_coll_create_index(live, copy->indexes[i]->spec, &existed, &error);
   }
}

static void
apply_view(md_store_t *store, const md_txn_view_t *v)
{
   bool created;
   md_coll_t *live = md_store_coll(store, v->db.name, v->name, true, &created);
   if (created) {
      create_like(live, v->copy);
   }
   batch_t b = {.live = live, .copy = v->copy};
   /* Inserts and replacements in the copy's natural order, then deletes. */
   for (md_doc_t *d = v->copy->head; d; d = d->next) {
      bson_string_t *key = bson_string_new(NULL);
      if (id_key(d->bson, key) && md_key_set_has(v->written, key->str, key->len)) {
         batch_add(&b, md_hmap_get(live->ids, key->str, key->len), bson_copy(d->bson));
      }
      bson_string_free(key, true);
   }
   md_hmap_foreach(v->written, add_delete, &b);
   md_coll_apply_changes(live, b.changes, b.n);
   free(b.changes);
}

bool
md_txn_commit(md_txns_t *txns, md_txn_t *txn, md_store_t *store, md_oplog_t *log,
              bson_error_t *error)
{
   if (!can_commit(txn, store)) {
      md_txn_abort(txns, txn);
      return tm_error_set(error, 112,
                          "WriteConflict error: this operation conflicted with "
                          "another operation. Please retry your operation or "
                          "multi-document transaction.");
   }
   /* Out of the open list first: the store's hooks must not preserve for it. */
   md_txn_unlink(txns, txn, MD_TXN_COMMITTED);
   for (md_txn_view_t *v = txn->views; v; v = v->next) {
      if (has_writes(v)) {
         apply_view(store, v);
      }
   }
   if (txn->branch) {
      /* An isolated primary's writes were single writes: each its own entry and time. */
      for (size_t i = 0; i < txn->n_ops; i++) {
         md_oplog_append(log, txn->ops[i]);
      }
      txn->commit_ts = log->last;
   } else {
      txn->commit_ts = md_oplog_append_txn(log, txn->ops, txn->n_ops, txn->lsid, txn->number);
   }
   txn->n_ops = 0; /* the oplog owns the entries now */
   md_txn_release(txns, txn);
   return true;
}
