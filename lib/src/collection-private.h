/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The collection handle's struct and the helpers the collection's files share (collection.c,
 * collection-ops.c, commit.c, create.c, dead-letters.c, requeue.c, schema.c, stored-events.c).
 * collection.c fills the struct in outbox_collection_new(); after that it is read-only except
 * for its cache, which locks itself, so the handle is shared between threads.
 */
#ifndef OUTBOX_COLLECTION_PRIVATE_H
#define OUTBOX_COLLECTION_PRIVATE_H

#include "outbox/collection.h"

#include "cache-private.h"
#include "document-private.h"

#define _OUTBOX_DEFAULT_MAX_PENDING 1000
#define _OUTBOX_SERVER_MAX_DOC (16 * 1024 * 1024)
#define _OUTBOX_DEFAULT_MAX_DOC (_OUTBOX_SERVER_MAX_DOC - 1024 * 1024)
#define _OUTBOX_DEFAULT_RETRIES 10
#define _OUTBOX_DEFAULT_CACHE 4096

struct _outbox_collection_t {
   mongoc_client_pool_t *pool; /* borrowed */
   char *db;
   char *coll;
   bson_t write_opts; /* {writeConcern: {...}}, given to every write */
   /* write_opts plus validate: false for commits' updates: the library has validated every
    * part of them already (_outbox_bson_is_storable() covers mongoc's checks), and mongoc's
    * second pass over the whole update was a measurable share of a commit's CPU. */
   bson_t update_opts;
   char *field_storage[8];
   _outbox_field_names_t names; /* points into field_storage */
   int64_t max_pending;
   int64_t max_doc_size;
   int64_t retries;
   _outbox_cache_t *cache;
};

/* A client popped from the pool and the collection on it, for the length of one call. */
typedef struct {
   mongoc_client_t *client;
   mongoc_collection_t *coll;
} _outbox_conn_t;

void _outbox_conn_open(const outbox_collection_t *collection, _outbox_conn_t *conn);

void _outbox_conn_close(const outbox_collection_t *collection, _outbox_conn_t *conn);

/* Reads the entity and its state (and refreshes the cache). `doc` may be NULL; when not, it
 * must be initialized and receives the document. Returns false with OUTBOX_ERROR_NOT_FOUND,
 * OUTBOX_ERROR_MALFORMED_DOCUMENT or a mongoc error. */
bool _outbox_read_state(outbox_collection_t *collection, _outbox_conn_t *conn,
                        const bson_value_t *id, bson_t *doc, _outbox_doc_state_t *state,
                        bson_error_t *error);

/* Turns the server's "document too large" write errors (17419, 10334, 2 "... too large") into
 * OUTBOX_ERROR_LIMIT_SIZE; leaves any other error unchanged. */
void _outbox_map_size_error(bson_error_t *error);

#endif /* OUTBOX_COLLECTION_PRIVATE_H */
