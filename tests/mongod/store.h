/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The in-memory data: databases, collections (documents in insertion order, an _id hash
 * index) and their indexes (unique ones enforced through hash tables of encoded keys). Not
 * thread-safe: every caller holds the server's global lock (see server.h).
 */
#ifndef MD_STORE_H
#define MD_STORE_H

#include <bson/bson.h>

#include "engine.h"
#include "hmap.h"

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

typedef struct _md_coll_t {
   char *name;
   md_db_t *db;
   md_doc_t *head, *tail;
   size_t count;
   md_hmap_t *ids; /* encoded _id -> md_doc_t */
   md_index_t **indexes;
   size_t n_indexes;
   bson_t *options; /* options given to create, {} otherwise */
   tm_matcher_t *validator; /* options.validator parsed (validator.c), NULL if none */
   uint8_t uuid[16];
   char *view_on;         /* a view: the collection it reads, NULL for a collection */
   bson_t *view_pipeline; /* a view: its pipeline (array) */
   bool is_snapshot;      /* a view's materialised contents: no _id index */
   struct _md_coll_t *next;
} md_coll_t;

struct _md_db_t {
   char *name;
   md_coll_t *colls;
   struct _md_db_t *next;
};

typedef struct _md_store_t {
   md_db_t *dbs;
} md_store_t;

md_store_t *
md_store_new(void);
void
md_store_destroy(md_store_t *store);

/* Returns the database or collection, creating it when `create` is true (else NULL if
 * absent). A new collection gets its _id_ index; *created (may be NULL) says whether it did. */
md_db_t *
md_store_db(md_store_t *store, const char *name, bool create);
md_coll_t *
md_store_coll(md_store_t *store, const char *db, const char *coll, bool create, bool *created);

void
md_store_drop_coll(md_store_t *store, md_coll_t *coll);
void
md_store_drop_db(md_store_t *store, md_db_t *db);
/* Moves `coll` to to_db.to_name; the target must not exist (the caller drops it first). */
void
md_store_rename(md_store_t *store, md_coll_t *coll, const char *to_db, const char *to_name);

/* Makes `coll` a view on `view_on` with `pipeline` (an array; copied). */
void
md_coll_make_view(md_coll_t *coll, const char *view_on, const bson_t *pipeline);

/* The documents a view shows now, as an unlinked collection whose documents are copies
 * (free with md_coll_snapshot_free), or NULL with 2 on a view cycle or a pipeline error. */
md_coll_t *
md_view_snapshot(md_store_t *store, const md_coll_t *view, bson_error_t *error);
void
md_coll_snapshot_free(md_coll_t *snapshot);

md_doc_t *
md_coll_find_id(const md_coll_t *coll, const bson_value_t *id);

/* Adds `doc` (which must have an _id), taking ownership on success. On a duplicate key it
 * fails with 11000 and, if `details` is not NULL, appends keyPattern and keyValue to it. */
bool
md_coll_insert(md_coll_t *coll, bson_t *doc, md_doc_t **out, bson_t *details, bson_error_t *error);
/* Replaces the content of `doc` with `bson` (ownership taken on success), keeping its place. */
bool
md_coll_replace(md_coll_t *coll, md_doc_t *doc, bson_t *bson, bson_t *details, bson_error_t *error);
void
md_coll_remove(md_coll_t *coll, md_doc_t *doc);

/* Creates an index from a createIndexes spec; *existed is true if an identical index already
 * existed. Fails with 85/86 on name or key conflicts, 11000 if existing data violates it. */
bool
md_coll_create_index(md_coll_t *coll, const bson_t *spec, bool *existed, bson_error_t *error);
bool
md_coll_drop_index(md_coll_t *coll, const char *name, bson_error_t *error);
/* Whether `doc` has an entry in the index: it matches the partial filter, and for a sparse
 * index has at least one of the key's fields. */
bool
md_index_contains(const md_index_t *ix, const bson_t *doc);
/* Finds an index by name (hint string) or key pattern (hint document). */
md_index_t *
md_coll_find_index(const md_coll_t *coll, const bson_value_t *hint);

#endif
