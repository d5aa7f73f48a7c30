/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What a transaction sees of each namespace (its snapshot plus its own writes) and which
 * documents it may write: first writer wins, as in WiredTiger (see txn.h). Callers hold the
 * server lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/keyenc.h"
#include "txn/txn-private.h"
#include "data/validator.h"

static void
free_key(void *value, void *ctx)
{
   (void)ctx;
   free(value);
}

void
md_key_set_add(md_hmap_t *set, const char *key, size_t len)
{
   if (!md_hmap_get(set, key, len)) {
      md_key_t *k = malloc(sizeof *k + len);
      k->len = len;
      memcpy(k->bytes, key, len);
      md_hmap_put(set, key, len, k);
   }
}

bool
md_key_set_has(const md_hmap_t *set, const char *key, size_t len)
{
   return md_hmap_get(set, key, len) != NULL;
}

void
md_key_set_free(md_hmap_t *set)
{
   if (set) {
      md_hmap_foreach(set, free_key, NULL);
      md_hmap_destroy(set);
   }
}

md_txn_view_t *
md_txn_view_get(md_txn_t *txn, const char *db, const char *name, bool add)
{
   md_txn_view_t **link = &txn->views;
   for (; *link; link = &(*link)->next) {
      if (strcmp((*link)->name, name) == 0 && strcmp((*link)->db.name, db) == 0) {
         return *link;
      }
   }
   if (!add) {
      return NULL;
   }
   md_txn_view_t *v = calloc(1, sizeof *v);
   v->name = strdup(name);
   v->db.name = strdup(db);
   v->written = md_hmap_new();
   v->others = md_hmap_new();
   v->txn = txn;
   *link = v;
   return v;
}

void
md_txn_view_free(md_txn_view_t *view)
{
   if (view->copy) {
      md_coll_free_detached(view->copy);
   }
   md_key_set_free(view->written);
   md_key_set_free(view->others);
   free(view->db.name);
   free(view->name);
   free(view);
}

/* The view's copy of `live`, validator and all. */
static void
copy_into(md_txn_view_t *view, const md_coll_t *live)
{
   view->copy = md_coll_copy(live, &view->db);
   md_validator_install(view->copy);
}

void
md_txn_view_preserve(md_txn_view_t *view, const md_coll_t *live)
{
   if (!view->copy && !view->absent) {
      copy_into(view, live);
      view->copy->txn_view = view;
   }
}

static bool
ddl_waits_for(const md_txns_t *txns, const char *db, const char *name)
{
   for (int i = 0; i < txns->n_pending; i++) {
      if (strcmp(txns->pending[i].db, db) == 0 &&
          (!txns->pending[i].coll || strcmp(txns->pending[i].coll, name) == 0)) {
         return true;
      }
   }
   return false;
}

static bool
write_conflict(bson_error_t *error)
{
   return tm_error_set(error, 112,
                       "WriteConflict error: this operation conflicted with "
                       "another operation. Please retry your operation or "
                       "multi-document transaction.");
}

bool
md_txn_coll(md_txns_t *txns, md_txn_t *txn, md_store_t *store, const char *db, const char *name,
            bool write, bool create, md_coll_t **coll, bool *created, bson_error_t *error)
{
   md_txn_view_t *v = md_txn_view_get(txn, db, name, true);
   *coll = NULL;
   if (created) {
      *created = false;
   }
   if (!v->used && ddl_waits_for(txns, db, name)) {
      /* mongod's lock queue is fair: the waiting exclusive request goes first, and a
       * transaction gives up after maxTransactionLockRequestTimeoutMillis (5 ms). */
      return tm_error_set(error, 24,
                          "Unable to acquire IX lock on '%s.%s' within 5ms: a DDL "
                          "operation waits for it",
                          db, name);
   }
   v->used = true;
   if (!write) {
      *coll = v->copy ? v->copy : v->absent ? NULL : md_store_coll(store, db, name, false, NULL);
      return true;
   }
   if (v->changed && !v->created && !txn->branch) {
      return write_conflict(error);
   }
   if (!v->copy) {
      md_coll_t *live = v->absent ? NULL : md_store_coll(store, db, name, false, NULL);
      if (live) {
         copy_into(v, live);
      } else if (create) {
         v->copy = md_coll_new_detached(&v->db, name);
         v->created = true;
         v->absent = false;
         if (created) {
            *created = true;
         }
      } else {
         return true;
      }
      v->copy->txn_view = v;
   }
   *coll = v->copy;
   return true;
}

bool
md_txns_claim(md_txns_t *txns, md_coll_t *coll, const bson_value_t *id, bson_error_t *error)
{
   md_txn_view_t *mine = coll->txn_view;
   if (!txns->open || (!mine && (coll->is_snapshot || !coll->db || !coll->db->store))) {
      return true;
   }
   bson_string_t *key = bson_string_new(NULL);
   md_keyenc_append(key, id);
   if (mine && mine->txn->branch) {
      /* A branch's copies are its own: nobody else writes them, nothing conflicts; the
       * key tells a commit which documents it wrote. */
      md_key_set_add(mine->written, key->str, key->len);
      bson_string_free(key, true);
      return true;
   }
   bool ok = true;
   if (mine && !md_key_set_has(mine->written, key->str, key->len)) {
      ok = !md_key_set_has(mine->others, key->str, key->len);
   }
   const char *db = coll->db->name;
   for (md_txn_t *t = txns->open; ok && t; t = t->next) {
      md_txn_view_t *v =
         (mine && t == mine->txn) || t->branch ? NULL : md_txn_view_get(t, db, coll->name, false);
      ok = !v || !md_key_set_has(v->written, key->str, key->len);
   }
   if (ok && mine) {
      md_key_set_add(mine->written, key->str, key->len);
   }
   bson_string_free(key, true);
   if (!ok && mine) {
      return write_conflict(error);
   }
   return ok || tm_error_set(error, MD_CODE_BLOCKED, "document held by an open transaction");
}
