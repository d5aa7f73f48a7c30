/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The data set: what data/, txn/ and changestream/ work on, handed to them instead of the
 * whole server (net/server.h embeds it as `data`). The store, the change history and its
 * cluster clock, older versions of documents, cursors and the open transactions are all
 * guarded by `lock`, the server's one lock; a getMore waiting for change events sleeps on
 * the history's condition variable, releasing it.
 */
#ifndef MD_DATASET_H
#define MD_DATASET_H

#include <pthread.h>
#include <stdbool.h>

#include "data/cursor.h"
#include "data/oplog.h"
#include "data/store.h"
#include "data/versions.h"
#include "txn/txn.h"

typedef struct {
   pthread_mutex_t lock; /* the server's one lock: guards all below */
   md_store_t *store;
   md_oplog_t oplog;
   md_versions_t versions; /* older versions of documents: reads at older positions */
   md_cursors_t cursors;
   md_txns_t txns;
   bool bypass_validation; /* the running command's bypassDocumentValidation */
   /* On a shard behind --mongos (shard/router.c): builds a change's documentKey (the shard
    * key fields and _id). NULL: {_id}. */
   bool (*doc_key)(void *ctx, const md_coll_t *coll, const bson_t *doc, bson_t *key);
   void *doc_key_ctx;
} md_dataset_t;

#endif
