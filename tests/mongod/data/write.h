/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Applying one update to one document, and upserts: shared by update and findAndModify.
 * Each successful change is recorded in the oplog, so change streams see it (a change in a
 * transaction's copy is kept by the transaction until it commits). Each document written is
 * first claimed (md_txns_claim): write conflicts and writes waiting for transactions.
 */
#ifndef MD_WRITE_H
#define MD_WRITE_H

#include "data/dataset.h"
#include "data/query.h"

/* Applies `u` to `d`. *modified says whether the document changed (no-op updates change
 * nothing and log nothing). On 11000, `details` (may be NULL) receives keyPattern/keyValue. */
bool md_write_update_doc(md_dataset_t *ds, md_coll_t *coll, md_doc_t *d, const tm_update_t *u,
                         int32_t positional, bool *modified, bson_t *details, bson_error_t *error);

/* Inserts the document an upsert of `u` with `filter` produces; *out_doc is the new one. */
bool md_write_upsert(md_dataset_t *ds, md_coll_t *coll, const bson_t *filter, const tm_update_t *u,
                     md_doc_t **out_doc, bson_t *details, bson_error_t *error);

/* Inserts `doc` (copied; _id moved first or generated). */
bool md_write_insert(md_dataset_t *ds, md_coll_t *coll, const bson_t *doc, bson_t *details,
                     bson_error_t *error);

bool md_write_delete_doc(md_dataset_t *ds, md_coll_t *coll, md_doc_t *d, bson_error_t *error);

/* Before a statement outside transactions changes the selected documents: fails with
 * MD_CODE_BLOCKED while an open transaction holds one of them (the caller waits and runs
 * the statement again; see md_write_wait). Writes in a transaction claim as they go. */
bool md_write_check_selection(md_dataset_t *ds, md_coll_t *coll, const md_selection_t *sel,
                              bson_error_t *error);

/* Adds oplog entries for document changes. */
void md_log_insert(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc);
void md_log_delete(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc);
void md_log_update(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc, bool replacement,
                   const bson_t *pre, tm_update_desc_t *desc);

/* Appends a writeErrors entry. */
void md_append_write_error(bson_t *arr, uint32_t *n, int32_t index, const bson_error_t *error,
                           const bson_t *details);

#endif
