/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The inbox's handle and the MongoDB side of it (inbox-store.c), shared with the public
 * entry points and the building of the update (inbox.c, above it). inbox.c fills the handle in
 * outbox_inbox_new(); afterwards it is read-only, so any thread may use it.
 */
#ifndef OUTBOX_INBOX_PRIVATE_H
#define OUTBOX_INBOX_PRIVATE_H

#include "outbox/inbox.h"

struct _outbox_inbox_t {
   mongoc_client_pool_t *pool;
   char *db;
   char *coll;
   char *inbox_field;
   char *seq_field;
   char *ledger; /* NULL: disabled */
   int32_t window;
   int32_t ttl;
   bool upsert;
   bool skip_late;
   bson_t *write_concern; /* {w: ...} document (a pointer: an embedded bson_t needs 128-byte
                           * alignment, which bson_malloc does not give) */
};

/* Whether the state document exists and whether its window holds the event. */
typedef enum {
   _OUTBOX_DOC_MISSING,
   _OUTBOX_DOC_WITHOUT_ID,
   _OUTBOX_DOC_WITH_ID,
} _outbox_doc_lookup_t;

/* Reads state document `doc_id` from `coll` (the inbox's collection): *state tells
 * whether it exists and holds `event_id` in its window, *stored_seq receives its seqField
 * (0 when missing). */
bool _outbox_inbox_doc_lookup(const outbox_inbox_t *ib, mongoc_collection_t *coll,
                              const bson_value_t *doc_id, const char *event_id,
                              _outbox_doc_lookup_t *state, int64_t *stored_seq,
                              bson_error_t *error);

/* Sets *seen to whether the ledger holds the (event_id, doc_id) pair; false without a
 * ledger. */
bool _outbox_inbox_ledger_has(const outbox_inbox_t *ib, mongoc_client_t *client,
                              const bson_value_t *doc_id, const char *event_id, bool *seen,
                              bson_error_t *error);

/* The apply loop: the ledger check, then guarded findAndModify rounds with `update` (already
 * merged with the inbox's own operators by inbox.c). Fills *res; `client` is borrowed. */
bool _outbox_inbox_apply_with(const outbox_inbox_t *ib, mongoc_client_t *client,
                              const bson_value_t *doc_id, const char *event_id, int64_t seq,
                              const bson_t *update, outbox_inbox_result_t *res,
                              bson_error_t *error);

#endif /* OUTBOX_INBOX_PRIVATE_H */
