/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The write path every command and the TTL monitor share: inserting, updating, upserting
 * and deleting one document, claiming it from open transactions first, and recording each
 * change in the oplog (md_log_*) so change streams see it. Callers hold the server lock.
 */
#include "data/write.h"

#include <string.h>

#include "data/keyenc.h"
#include "data/validator.h"
#include "net/wire.h"

/* Equal values of the common _id types, without encoding keys; false when unsure. */
static bool
plainly_equal(const bson_value_t *a, const bson_value_t *b)
{
   if (a->value_type != b->value_type) {
      return false;
   }
   switch (a->value_type) {
   case BSON_TYPE_UTF8:
      return a->value.v_utf8.len == b->value.v_utf8.len &&
             memcmp(a->value.v_utf8.str, b->value.v_utf8.str, a->value.v_utf8.len) == 0;
   case BSON_TYPE_OID:
      return bson_oid_equal(&a->value.v_oid, &b->value.v_oid);
   case BSON_TYPE_INT32:
      return a->value.v_int32 == b->value.v_int32;
   case BSON_TYPE_INT64:
      return a->value.v_int64 == b->value.v_int64;
   default:
      return false;
   }
}

static bool
same_value(const bson_value_t *a, const bson_value_t *b)
{
   if (plainly_equal(a, b)) {
      return true;
   }
   bson_string_t *ka = bson_string_new(NULL), *kb = bson_string_new(NULL);
   md_keyenc_append(ka, a);
   md_keyenc_append(kb, b);
   bool same = ka->len == kb->len && memcmp(ka->str, kb->str, ka->len) == 0;
   bson_string_free(ka, true);
   bson_string_free(kb, true);
   return same && a->value_type == b->value_type;
}

/* Checks that the document (by its _id) may be written: see md_txns_claim. */
static bool
claim(md_dataset_t *ds, md_coll_t *coll, const bson_t *doc, bson_error_t *error)
{
   bson_iter_t it;
   return !bson_iter_init_find(&it, doc, "_id") ||
          md_txns_claim(&ds->txns, coll, bson_iter_value(&it), error);
}

static bool
coll_keeps_images(const md_coll_t *coll)
{
   bson_iter_t it;
   return bson_iter_init(&it, coll->options) &&
          bson_iter_find_descendant(&it, "changeStreamPreAndPostImages.enabled", &it) &&
          bson_iter_as_bool(&it);
}

/* Puts the old _id back first when a replacement omitted it, and rejects _id changes. */
static bson_t *
keep_id(const bson_t *old, bson_t *out, bson_error_t *error)
{
   bson_iter_t a, b;
   bson_iter_init_find(&a, old, "_id");
   if (!bson_iter_init_find(&b, out, "_id")) {
      bson_t *fixed = md_doc_with_id_first(out, bson_iter_value(&a));
      return fixed;
   }
   if (!same_value(bson_iter_value(&a), bson_iter_value(&b))) {
      tm_error_set(error, 66,
                   "Performing an update on the path '_id' would modify the "
                   "immutable field '_id'");
      return NULL;
   }
   return md_doc_with_id_first(out, NULL);
}

bool
md_write_update_doc(md_dataset_t *ds, md_coll_t *coll, md_doc_t *d, const tm_update_t *u,
                    int32_t positional, bool *modified, bson_t *details, bson_error_t *error)
{
   bson_t out;
   tm_update_desc_t desc;
   tm_update_desc_init(&desc);
   *modified = false;
   bool ok = tm_update_apply(u, d->bson, positional, false, &out, modified, &desc, error);
   bson_t *next = NULL;
   if (ok && *modified) {
      next = keep_id(d->bson, &out, error);
      ok = next != NULL;
   }
   if (ok && next && next->len == d->bson->len &&
       memcmp(bson_get_data(next), bson_get_data(d->bson), next->len) == 0) {
      /* An update that leaves the document as it was is a no-op: nModified 0, no event. */
      *modified = false;
      bson_destroy(next);
      next = NULL;
   }
   if (ok && next && next->len > MD_MAX_BSON_SIZE) {
      ok = tm_error_set(error, 17419, "Resulting document after update is larger than %d",
                        MD_MAX_BSON_SIZE);
   }
   if (ok && next) {
      ok = md_validator_check(ds, coll, d->bson, next, details, error) &&
           claim(ds, coll, d->bson, error);
   }
   bson_t *pre = ok && next && coll_keeps_images(coll) ? bson_copy(d->bson) : NULL;
   if (ok && next) {
      ok = md_coll_replace(coll, d, next, details, error);
      if (ok) {
         md_log_update(ds, coll, d->bson, tm_update_is_replacement(u), pre, &desc);
         next = NULL;
      }
   }
   if (!ok) {
      *modified = false;
   }
   bson_destroy(pre);
   bson_destroy(next);
   bson_destroy(&out);
   tm_update_desc_destroy(&desc);
   return ok;
}

bool
md_write_upsert(md_dataset_t *ds, md_coll_t *coll, const bson_t *filter, const tm_update_t *u,
                md_doc_t **out_doc, bson_t *details, bson_error_t *error)
{
   bson_t seed = BSON_INITIALIZER, out;
   bool modified;
   bool ok = tm_filter_upsert_seed(filter, &seed, error);
   if (!ok) {
      bson_destroy(&seed);
      return false;
   }
   ok = tm_update_apply(u, &seed, -1, true, &out, &modified, NULL, error);
   if (ok) {
      bson_iter_t it;
      bool seeded_id = bson_iter_init_find(&it, &seed, "_id");
      bson_t *doc = md_doc_with_id_first(&out, seeded_id ? bson_iter_value(&it) : NULL);
      if (doc->len > MD_MAX_BSON_SIZE) {
         ok = tm_error_set(error, 17419, "Resulting document after update is larger than %d",
                           MD_MAX_BSON_SIZE);
         bson_destroy(doc);
      } else if (!md_validator_check(ds, coll, NULL, doc, details, error) ||
                 !claim(ds, coll, doc, error)) {
         bson_destroy(doc);
         ok = false;
      } else if (md_coll_insert(coll, doc, out_doc, details, error)) {
         md_log_insert(ds, coll, doc);
      } else {
         bson_destroy(doc);
         ok = false;
      }
   }
   bson_destroy(&out);
   bson_destroy(&seed);
   return ok;
}

bool
md_write_insert(md_dataset_t *ds, md_coll_t *coll, const bson_t *doc, bson_t *details,
                bson_error_t *error)
{
   bson_iter_t it;
   if (doc->len > MD_MAX_BSON_SIZE) {
      return tm_error_set(error, 2,
                          "object to insert too large. size in bytes: %u, max size: "
                          "%d",
                          doc->len, MD_MAX_BSON_SIZE);
   }
   if (bson_iter_init_find(&it, doc, "_id") &&
       (BSON_ITER_HOLDS_ARRAY(&it) || BSON_ITER_HOLDS_REGEX(&it) ||
        bson_iter_type(&it) == BSON_TYPE_UNDEFINED)) {
      return tm_error_set(error, 2, "can't use an %s for _id",
                          BSON_ITER_HOLDS_ARRAY(&it) ? "array" : "regex or undefined");
   }
   bson_t *copy = md_doc_with_id_first(doc, NULL);
   md_doc_t *d;
   if (!md_validator_check(ds, coll, NULL, copy, details, error) || !claim(ds, coll, copy, error) ||
       !md_coll_insert(coll, copy, &d, details, error)) {
      bson_destroy(copy);
      return false;
   }
   md_log_insert(ds, coll, copy);
   return true;
}

bool
md_write_delete_doc(md_dataset_t *ds, md_coll_t *coll, md_doc_t *d, bson_error_t *error)
{
   if (!claim(ds, coll, d->bson, error)) {
      return false;
   }
   /* The store changes first, then the history records it, as for inserts and updates:
    * the previous version kept for reads at older positions (versions.h) is numbered
    * with this change's own history entry. */
   bson_t *gone = bson_copy(d->bson);
   md_coll_remove(coll, d);
   md_log_delete(ds, coll, gone);
   bson_destroy(gone);
   return true;
}

bool
md_write_check_selection(md_dataset_t *ds, md_coll_t *coll, const md_selection_t *sel,
                         bson_error_t *error)
{
   if (!coll || coll->txn_view || !ds->txns.open) {
      return true; /* a transaction claims documents as it writes them */
   }
   for (size_t i = 0; i < sel->n; i++) {
      bson_iter_t it;
      if (bson_iter_init_find(&it, sel->docs[i]->bson, "_id") &&
          !md_txns_claim(&ds->txns, coll, bson_iter_value(&it), error)) {
         return false;
      }
   }
   return true;
}

void
md_append_write_error(bson_t *arr, uint32_t *n, int32_t index, const bson_error_t *error,
                      const bson_t *details)
{
   char key[16];
   const char *k;
   bson_t we;
   bson_uint32_to_string((*n)++, &k, key, sizeof key);
   bson_append_document_begin(arr, k, -1, &we);
   BSON_APPEND_INT32(&we, "index", index);
   BSON_APPEND_INT32(&we, "code", error->code ? (int32_t)error->code : 1);
   if (details && !bson_empty(details)) {
      bson_concat(&we, details);
   }
   BSON_APPEND_UTF8(&we, "errmsg", error->message);
   bson_append_document_end(arr, &we);
}

/* ---- the oplog side ---------------------------------------------------------------------- */

/* A transaction's writes wait in the transaction until it commits. */
static void
append(md_dataset_t *ds, const md_coll_t *coll, md_oplog_entry_t *e)
{
   if (coll->txn_view) {
      md_txn_log(coll->txn_view, e);
   } else {
      md_oplog_append(&ds->oplog, e);
   }
}

/* Logs one document change: its key ({_id: ...}) taken from @doc, the rest from @parts. */
static void
log_doc(md_dataset_t *ds, const md_coll_t *coll, md_oplog_parts_t *parts, const bson_t *doc)
{
   bson_t key = BSON_INITIALIZER;
   bson_iter_t it;
   if (ds->doc_key && ds->doc_key(ds->doc_key_ctx, coll, doc, &key)) {
      /* a shard of a sharded collection: the shard key's fields and _id */
   } else if (bson_iter_init_find(&it, doc, "_id")) {
      bson_append_value(&key, "_id", 3, bson_iter_value(&it));
   }
   parts->db = coll->db->name;
   parts->coll = coll->name;
   parts->doc_key = &key;
   append(ds, coll, md_oplog_entry_new(parts));
   bson_destroy(&key);
}

void
md_log_insert(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc)
{
   md_oplog_parts_t parts = {.op = MD_OP_INSERT, .full_doc = doc};
   log_doc(ds, coll, &parts, doc);
}

void
md_log_delete(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc)
{
   md_oplog_parts_t parts = {.op = MD_OP_DELETE};
   if (coll_keeps_images(coll)) {
      parts.pre_image = doc;
   }
   log_doc(ds, coll, &parts, doc);
}

void
md_log_update(md_dataset_t *ds, const md_coll_t *coll, const bson_t *doc, bool replacement,
              const bson_t *pre, tm_update_desc_t *desc)
{
   md_oplog_parts_t parts = {.op = replacement ? MD_OP_REPLACE : MD_OP_UPDATE, .pre_image = pre};
   bson_t update_desc = BSON_INITIALIZER;
   if (replacement) {
      parts.full_doc = doc;
   } else {
      BSON_APPEND_DOCUMENT(&update_desc, "updatedFields", &desc->updated_fields);
      BSON_APPEND_ARRAY(&update_desc, "removedFields", &desc->removed_fields);
      BSON_APPEND_ARRAY(&update_desc, "truncatedArrays", &desc->truncated_arrays);
      parts.update_desc = &update_desc;
      if (coll_keeps_images(coll)) {
         parts.full_doc = doc;
      }
   }
   log_doc(ds, coll, &parts, doc);
   bson_destroy(&update_desc);
}
