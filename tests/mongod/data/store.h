/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The in-memory data: databases, collections (documents in insertion order, an _id hash
 * index) and their indexes (unique ones enforced through hash tables of encoded keys). Not
 * thread-safe: every caller holds the server's global lock (see server.h).
 *
 * Collections outside the store (a view's materialised contents, a transaction's private copy)
 * belong to a database that is not in the store (db->store NULL). Every change to the store's
 * own data is announced to the hooks first, so open transactions keep their snapshot (txn.h).
 */
#ifndef MD_STORE_H
#define MD_STORE_H

#include <bson/bson.h>

#include "engine/engine.h"
#include "data/hmap.h"

typedef struct _md_doc_t {
   bson_t *bson; /* owned */
   struct _md_doc_t *prev, *next;
} md_doc_t;

typedef struct _md_index_t {
   char *name;
   bson_t *spec; /* as listIndexes reports it */
   bson_t *key;
   bool unique;
   bool sparse;
   tm_matcher_t *partial; /* NULL unless partialFilterExpression */
   int64_t expire_after;  /* seconds, -1 if not a TTL index */
   md_hmap_t *entries;    /* unique indexes only: encoded key -> md_doc_t */
} md_index_t;

typedef struct _md_db_t md_db_t;
typedef struct _md_store_t md_store_t;
typedef struct _md_txn_view_t md_txn_view_t;

typedef struct _md_coll_t {
   char *name;
   md_db_t *db;
   md_doc_t *head, *tail;
   size_t count;
   md_hmap_t *ids; /* encoded _id -> md_doc_t */
   md_index_t **indexes;
   size_t n_indexes;
   bson_t *options;         /* options given to create, {} otherwise */
   tm_matcher_t *validator; /* options.validator parsed (validator.c), NULL if none */
   uint8_t uuid[16];
   char *view_on;           /* a view: the collection it reads, NULL for a collection */
   bson_t *view_pipeline;   /* a view: its pipeline (array) */
   bool is_snapshot;        /* a view's materialised contents: no _id index */
   md_txn_view_t *txn_view; /* a transaction's private copy: its writes are the transaction's */
   struct _md_coll_t *next;
} md_coll_t;

struct _md_db_t {
   char *name;
   md_coll_t *colls;
   md_store_t *store; /* NULL for a database outside the store (copies) */
   struct _md_db_t *next;
};

/* Called before the store's own data changes. doc_change: `doc` (the current version, or the
 * new one for an insert) is about to be inserted, replaced or removed. catalog_change: the
 * collection `name` of `db` is about to be created (coll NULL) or to change otherwise (dropped,
 * renamed, indexes or options changed). */
typedef struct {
   void (*doc_change)(void *ctx, md_coll_t *coll, const bson_t *doc);
   void (*catalog_change)(void *ctx, md_db_t *db, const char *name, md_coll_t *coll);
   void *ctx;
} md_store_hooks_t;

struct _md_store_t {
   md_db_t *dbs;
   md_store_hooks_t hooks;    /* open transactions' snapshots (txn.c) */
   md_store_hooks_t versions; /* older versions for reads at older positions (versions.c) */
};

md_store_t *md_store_new(void);

/* Calls the hooks (for a collection of the store; nothing for other collections). */
void md_store_notify_doc(md_coll_t *coll, const bson_t *doc);
void md_store_notify_catalog(md_db_t *db, const char *name, md_coll_t *coll);
void md_store_destroy(md_store_t *store);

/* Returns the database or collection, creating it when `create` is true (else NULL if
 * absent). A new collection gets its _id_ index; *created (may be NULL) says whether it did. */
md_db_t *md_store_db(md_store_t *store, const char *name, bool create);
md_coll_t *md_store_coll(md_store_t *store, const char *db, const char *coll, bool create,
                         bool *created);

void md_store_drop_coll(md_store_t *store, md_coll_t *coll);
void md_store_drop_db(md_store_t *store, md_db_t *db);
/* Moves `coll` to to_db.to_name; the target must not exist (the caller drops it first). */
void md_store_rename(md_store_t *store, md_coll_t *coll, const char *to_db, const char *to_name);

/* Makes `coll` a view on `view_on` with `pipeline` (an array; copied). */
void md_coll_make_view(md_coll_t *coll, const char *view_on, const bson_t *pipeline);
/* Replaces the collection's options (taking `options`), as collMod does. */
void md_coll_set_options(md_coll_t *coll, bson_t *options);

/* Finds the collection a view reads (through a transaction's snapshot, say). */
typedef md_coll_t *(*md_coll_resolver_t)(void *ctx, const char *db, const char *name);

/* The documents a view shows now, as an unlinked collection whose documents are copies
 * (free with md_coll_snapshot_free), or NULL with 2 on a view cycle or a pipeline error. */
md_coll_t *md_view_snapshot(md_coll_resolver_t resolve, void *ctx, const md_coll_t *view,
                            bson_error_t *error);
void md_coll_snapshot_free(md_coll_t *snapshot);

/* A new empty collection (with its _id_ index) in `db`, which must not be the store's: a
 * transaction's new collection. A copy of `src` (documents, indexes, options, uuid) in `db`.
 * Both are freed with md_coll_free_detached. */
md_coll_t *md_coll_new_detached(md_db_t *db, const char *name);
md_coll_t *md_coll_copy(const md_coll_t *src, md_db_t *db);
void md_coll_free_detached(md_coll_t *coll);

md_doc_t *md_coll_find_id(const md_coll_t *coll, const bson_value_t *id);

/* Appends `doc` (taken) in natural order without indexing it: a view's contents. */
void md_coll_append_unindexed(md_coll_t *coll, bson_t *doc);

/* Adds `doc` (which must have an _id), taking ownership on success. On a duplicate key it
 * fails with 11000 and, if `details` is not NULL, appends keyPattern and keyValue to it. */
bool md_coll_insert(md_coll_t *coll, bson_t *doc, md_doc_t **out, bson_t *details,
                    bson_error_t *error);
/* Replaces the content of `doc` with `bson` (ownership taken on success), keeping its place. */
bool md_coll_replace(md_coll_t *coll, md_doc_t *doc, bson_t *bson, bson_t *details,
                     bson_error_t *error);
void md_coll_remove(md_coll_t *coll, md_doc_t *doc);

/* The document of `coll` holding the key `doc` has in unique index `coll->indexes[index_no]`
 * (other than _id_), or NULL (also for a non-unique index). */
md_doc_t *md_coll_unique_holder(const md_coll_t *coll, size_t index_no, const bson_t *doc);

/* One change of a transaction's commit: `live` NULL inserts `next`, `next` NULL removes
 * `live`, both replace (in place). */
typedef struct {
   md_doc_t *live;
   bson_t *next; /* owned by the change until applied */
} md_change_t;

/* Applies all changes at once (ownership of every `next` taken), so unique keys may move
 * between documents. The caller has checked that the result violates no unique index. */
void md_coll_apply_changes(md_coll_t *coll, md_change_t *changes, size_t n);

/* Creates an index from a createIndexes spec; *existed is true if an identical index already
 * existed. Fails with 85/86 on name or key conflicts, 11000 if existing data violates it. */
bool md_coll_create_index(md_coll_t *coll, const bson_t *spec, bool *existed, bson_error_t *error);
bool md_coll_drop_index(md_coll_t *coll, const char *name, bson_error_t *error);
/* Whether `doc` has an entry in the index: it matches the partial filter, and for a sparse
 * index has at least one of the key's fields. */
bool md_index_contains(const md_index_t *ix, const bson_t *doc);
/* Finds an index by name (hint string) or key pattern (hint document). */
md_index_t *md_coll_find_index(const md_coll_t *coll, const bson_value_t *hint);

#endif
