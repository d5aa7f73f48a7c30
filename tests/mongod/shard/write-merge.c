/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * A write batch split over shards, answered as one: the shards' counts summed, their
 * upserted ids and write errors renumbered with the client's statement indexes, the first
 * writeConcernError kept. Owned by the client thread that routes the write.
 */
#include <string.h>

#include "shard/router-private.h"

/* A write's merged result: counts, upserted ids and write errors with the client's indexes. */

void
md_merged_init(md_merged_t *m)
{
   memset(m, 0, sizeof *m);
   bson_init(&m->upserted);
   bson_init(&m->errors);
   bson_init(&m->wce);
}

/* Appends `doc` with its "index" replaced by `index`. */
void
md_merged_append(bson_t *arr, uint32_t *count, const bson_t *doc, int64_t index)
{
   char key[16];
   const char *k;
   bson_t out;
   bson_iter_t it;
   bson_uint32_to_string((*count)++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT_BEGIN(arr, k, &out);
   bson_iter_init(&it, doc);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "index") == 0) {
         BSON_APPEND_INT32(&out, "index", (int32_t)index);
      } else {
         bson_append_iter(&out, NULL, 0, &it);
      }
   }
   bson_append_document_end(arr, &out);
}

/* Adds one shard's reply; `indexes` maps its statement indexes to the client's. Returns
 * false if it reported a write error (or failed as a whole). */
bool
md_merged_add(md_merged_t *m, const bson_t *reply, const int64_t *indexes)
{
   bson_iter_t it, arr, el;
   if (!bson_iter_init_find(&it, reply, "ok") || !bson_iter_as_bool(&it)) {
      if (md_route_in_txn()) {
         /* In a transaction the shard's error is the statement's, labels and all (6.0's
          * TransactionRouter passes it on): it aborted the transaction there. */
         if (!m->failed) {
            m->failed = bson_copy(reply);
         }
         return false;
      }
      bson_t err = BSON_INITIALIZER;
      BSON_APPEND_INT32(&err, "index", 0);
      if (bson_iter_init_find(&it, reply, "code")) {
         BSON_APPEND_INT32(&err, "code", (int32_t)bson_iter_as_int64(&it));
      }
      if (bson_iter_init_find(&it, reply, "errmsg")) {
         bson_append_iter(&err, "errmsg", 6, &it);
      }
      md_merged_append(&m->errors, &m->n_errors, &err, indexes[0]);
      bson_destroy(&err);
      return false;
   }
   m->n += bson_iter_init_find(&it, reply, "n") ? bson_iter_as_int64(&it) : 0;
   if (bson_iter_init_find(&it, reply, "nModified")) {
      m->has_modified = true;
      m->n_modified += bson_iter_as_int64(&it);
   }
   static const char *const lists[] = {"upserted", "writeErrors"};
   bool ok = true;
   for (int l = 0; l < 2; l++) {
      if (!bson_iter_init_find(&it, reply, lists[l]) || !bson_iter_recurse(&it, &arr)) {
         continue;
      }
      while (bson_iter_next(&arr) && BSON_ITER_HOLDS_DOCUMENT(&arr)) {
         bson_t doc;
         uint32_t len;
         const uint8_t *data;
         bson_iter_document(&arr, &len, &data);
         bson_init_static(&doc, data, len);
         int64_t i = bson_iter_recurse(&arr, &el) && bson_iter_find(&el, "index")
                        ? bson_iter_as_int64(&el)
                        : 0;
         md_merged_append(l ? &m->errors : &m->upserted, l ? &m->n_errors : &m->n_upserted, &doc,
                          indexes[i]);
         ok = ok && l == 0;
      }
   }
   if (!m->has_wce && bson_iter_init_find(&it, reply, "writeConcernError") &&
       BSON_ITER_HOLDS_DOCUMENT(&it)) {
      uint32_t len;
      const uint8_t *data;
      bson_t wce;
      bson_iter_document(&it, &len, &data);
      bson_init_static(&wce, data, len);
      bson_concat(&m->wce, &wce); /* kept beyond the reply */
      m->has_wce = true;
   }
   return ok;
}

void
md_merged_reply(md_merged_t *m, bson_t *reply)
{
   if (m->failed) {
      bson_copy_to(m->failed, reply);
      bson_destroy(m->failed);
      m->failed = NULL;
      bson_destroy(&m->upserted);
      bson_destroy(&m->errors);
      bson_destroy(&m->wce);
      return;
   }
   bson_init(reply);
   BSON_APPEND_INT32(reply, "n", (int32_t)m->n);
   if (m->has_modified) {
      BSON_APPEND_INT32(reply, "nModified", (int32_t)m->n_modified);
   }
   if (m->n_upserted) {
      BSON_APPEND_ARRAY(reply, "upserted", &m->upserted);
   }
   if (m->n_errors) {
      BSON_APPEND_ARRAY(reply, "writeErrors", &m->errors);
   }
   if (m->has_wce) {
      BSON_APPEND_DOCUMENT(reply, "writeConcernError", &m->wce);
   }
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   bson_destroy(&m->upserted);
   bson_destroy(&m->errors);
   bson_destroy(&m->wce);
}

/* Sends the statements `stmts` (a BSON array, indexes[i] the client's index of each) of
 * `cmd`'s `field` to shard `s`. */
bool
md_merged_send(md_router_t *r, int s, const bson_t *cmd, const char *field, const bson_t *stmts,
               const int64_t *indexes, md_merged_t *m)
{
   const char *drop[16];
   size_t nd = 0;
   for (; md_shard_drop[nd]; nd++) {
      drop[nd] = md_shard_drop[nd];
   }
   drop[nd++] = field;
   drop[nd] = NULL;
   bson_t sent, reply;
   md_router_rewrite(cmd, NULL, NULL, drop, &sent);
   BSON_APPEND_ARRAY(&sent, field, stmts);
   md_router_call(r, s, &sent, &reply);
   bool ok = md_merged_add(m, &reply, indexes);
   bson_destroy(&sent);
   bson_destroy(&reply);
   return ok;
}
