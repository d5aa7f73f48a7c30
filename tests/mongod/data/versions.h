/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Older versions of documents, so that a read can run "as of" a position in the history
 * (a secondary's applied position, the majority commit point) over the one shared data set.
 * Before the store changes a document, the store hook records its previous version (or its
 * absence) with the sequence number the change's history entry will get. A read at position
 * P sees, for every document changed at or after P, the version recorded by the first such
 * change: the data as of P. Records older than every member's position are dropped.
 * Collection-level changes (create, drop, rename, indexes, options) are versioned the same
 * way, a copy of the collection as it was before each (versions-catalog.c). Only with
 * several members; callers hold the server lock.
 */
#ifndef MD_VERSIONS_H
#define MD_VERSIONS_H

#include "data/oplog.h"
#include "data/store.h"

typedef struct {
   uint64_t seq; /* the history entry of the change */
   char *ns;     /* "db.coll" */
   char *key;    /* the _id, encoded (keyenc.h) */
   size_t key_len;
   bson_t *pre; /* the version before the change; NULL: the document did not exist */
} md_version_t;

/* A collection as it was before a catalog change at `seq`: `before` is a detached copy (in
 * its own detached database of the same name), NULL if the collection did not exist. */
typedef struct {
   uint64_t seq;
   char *ns;
   md_coll_t *before;
} md_catalog_version_t;

typedef struct {
   md_version_t *records; /* in seq order */
   size_t n, cap, first;  /* live records are [first, n) */
   bool enabled;          /* only a set of several members reads at older positions */
   const md_oplog_t *log; /* whose next_seq numbers the records */
   /* The oldest position any member may still read at (records below it are dropped). */
   uint64_t (*oldest)(void *ctx);
   void *oldest_ctx;
   md_catalog_version_t *catalog; /* in seq order, [catalog_first, n_catalog) live */
   size_t n_catalog, cap_catalog, catalog_first;
} md_versions_t;

void md_versions_init(md_versions_t *v, const md_oplog_t *log);
void md_versions_destroy(md_versions_t *v);

/* Records the version of `coll`'s document with the _id of `doc` before it changes (the
 * store's doc_change hook calls it for the store's own collections). */
void md_versions_record(md_versions_t *v, md_coll_t *coll, const bson_t *doc);

/* Whether `coll` has changed at or after `seq`. */
bool md_versions_changed_since(const md_versions_t *v, const md_coll_t *coll, uint64_t seq);

/* The documents of the live collection `coll` as of position `seq`, as an unlinked
 * collection of copies (free with md_coll_snapshot_free). */
md_coll_t *md_versions_snapshot(const md_versions_t *v, const md_coll_t *coll, uint64_t seq);

/* versions-catalog.c. The store's catalog hook: `db`.`name` is about to be created (`coll`
 * NULL) or to change otherwise (dropped, renamed, indexes or options changed): keeps what it
 * was, numbered with the next history position. */
void md_versions_catalog_record(md_versions_t *v, md_db_t *db, const char *name, md_coll_t *coll);
/* Appends a no-op history entry (with several members, outside transactions) before an
 * explicit create or createIndexes, which MongoDB logs in its oplog: the change then has a
 * position that lagging or paused members reach only when they apply it. */
void md_versions_catalog_note(md_versions_t *v, md_oplog_t *log, const char *db, const char *coll);
/* `db`.`name` as of position `seq`: `live` (may be NULL) when its catalog did not change at
 * or after `seq`, else what it was before the first such change (NULL: it did not exist; a
 * copy valid until the next write). */
md_coll_t *md_versions_catalog_at(const md_versions_t *v, const char *db, const char *name,
                                  uint64_t seq, md_coll_t *live);
/* Calls `fn` for each collection of `db` that existed at `seq` and is no longer in the
 * store under that name (dropped or renamed since), as it was then. */
void md_versions_catalog_gone(const md_versions_t *v, md_store_t *store, const char *db,
                              uint64_t seq, void (*fn)(md_coll_t *coll, void *ctx), void *ctx);
void md_versions_catalog_destroy(md_versions_t *v);

#endif
