/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What txn.c, txn-view.c and txn-commit.c share: namespace views and sets of _id keys.
 */
#ifndef MD_TXN_PRIVATE_H
#define MD_TXN_PRIVATE_H

#include "txn/txn.h"

/* The transaction's view of db.name; a new one (reading the store) when `add`. */
md_txn_view_t *md_txn_view_get(md_txn_t *txn, const char *db, const char *name, bool add);
void md_txn_view_free(md_txn_view_t *view);

/* Gives the view a copy of `live` unless it has one already or the namespace is absent for
 * it: the snapshot stays as it was when `live` is about to change. */
void md_txn_view_preserve(md_txn_view_t *view, const md_coll_t *live);

/* Takes the transaction out of the open list: hooks and conflicts no longer see it. */
void md_txn_unlink(md_txns_t *txns, md_txn_t *txn, md_txn_state_t state);
/* Frees what an ended transaction held and wakes those waiting for it. */
void md_txn_release(md_txns_t *txns, md_txn_t *txn);

/* Sets of encoded _id keys (md_keyenc); each value is the key's md_key_t. */
typedef struct {
   size_t len;
   char bytes[];
} md_key_t;

void md_key_set_add(md_hmap_t *set, const char *key, size_t len);
bool md_key_set_has(const md_hmap_t *set, const char *key, size_t len);
void md_key_set_free(md_hmap_t *set);

#endif
