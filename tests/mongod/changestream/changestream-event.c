/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Change events: which oplog entries concern a stream, the events in MongoDB 6.0's shapes
 * (with the images a stream asks for, 47 when 'required' ones are missing), invalidates,
 * and the user's stages run on each event. Callers hold the server lock.
 */
#include <string.h>

#include "changestream/changestream-private.h"
#include "net/wire.h"

static bool
is_internal_db(const char *db)
{
   return strcmp(db, "admin") == 0 || strcmp(db, "config") == 0 || strcmp(db, "local") == 0;
}

bool
md_cs_relevant(const md_changestream_t *cs, const md_oplog_entry_t *e, bool *invalidates)
{
   *invalidates = false;
   if (e->op == MD_OP_NOOP) {
      return false; /* a catalog change's position: 6.0 shows create and createIndexes
                     * only with showExpandedEvents, which test-mongod refuses */
   }
   if (cs->cluster) {
      return !is_internal_db(e->db) && (!e->coll || strncmp(e->coll, "system.", 7) != 0);
   }
   if (strcmp(e->db, cs->db) != 0) {
      return false;
   }
   if (!cs->coll) {
      *invalidates = e->op == MD_OP_DROP_DATABASE;
      return !e->coll || strncmp(e->coll, "system.", 7) != 0;
   }
   if (e->op == MD_OP_DROP_DATABASE) {
      *invalidates = true;
      return false; /* the collection's drop event came first */
   }
   if (strcmp(e->coll, cs->coll) != 0) {
      return false;
   }
   *invalidates = e->op == MD_OP_DROP || e->op == MD_OP_RENAME;
   return true;
}

static const char *
op_name(md_op_t op)
{
   static const char *const names[] = {"insert", "update", "replace",     "delete",
                                       "drop",   "rename", "dropDatabase"};
   return names[op];
}

static void
append_id(bson_t *ev, md_ts_t ts, uint32_t index, unsigned kind)
{
   char token[MD_TOKEN_LEN + 1];
   bson_t id;
   md_token_format(token, ts, index, kind);
   bson_append_document_begin(ev, "_id", 3, &id);
   BSON_APPEND_UTF8(&id, "_data", token);
   bson_append_document_end(ev, &id);
}

static void
append_ns(bson_t *ev, const char *key, const char *db, const char *coll)
{
   bson_t ns;
   bson_append_document_begin(ev, key, -1, &ns);
   BSON_APPEND_UTF8(&ns, "db", db);
   if (coll) {
      BSON_APPEND_UTF8(&ns, "coll", coll);
   }
   bson_append_document_end(ev, &ns);
}

/* mongod names the event in a missing-image error as {operationType, ns, clusterTime}. */
static char *
event_summary(const md_oplog_entry_t *e)
{
   return bson_strdup_printf("{operationType: \"%s\", ns: {db: \"%s\", coll: \"%s\"}, "
                             "clusterTime: Timestamp(%u, %u)}",
                             op_name(e->op), e->db, e->coll ? e->coll : "", e->ts.t, e->ts.i);
}

/* 'required' images that are not there: 47 NoMatchingDocument when the event is reached, the
 * pre-image checked first as mongod's stages run (a post-image is computed from it). */
static bool
check_required_images(const md_changestream_t *cs, const md_oplog_entry_t *e, bson_error_t *error)
{
   bool modifies = e->op == MD_OP_UPDATE || e->op == MD_OP_REPLACE || e->op == MD_OP_DELETE;
   const char *which = NULL, *events = NULL;
   if (cs->before_change == FD_REQUIRED && modifies && !e->pre_image.len) {
      which = "pre";
      events = "update, delete and replace";
   } else if (cs->full_document == FD_REQUIRED && e->op == MD_OP_UPDATE && !e->full_doc.len) {
      which = "post";
      events = "update";
   }
   if (!which) {
      return true;
   }
   char *summary = event_summary(e);
   tm_error_set(error, 47,
                "Change stream was configured to require a %s-image for all %s "
                "events, but the %s-image was not found for event: %s",
                which, events, which, summary);
   bson_free(summary);
   return false;
}

static bool
append_full_document(const md_changestream_t *cs, const md_oplog_entry_t *e, md_store_t *store,
                     bson_t *ev, bson_error_t *error)
{
   bson_t doc;
   if (e->op == MD_OP_INSERT || e->op == MD_OP_REPLACE) {
      if (md_oplog_doc(e->full_doc, &doc)) {
         BSON_APPEND_DOCUMENT(ev, "fullDocument", &doc);
      }
      return true;
   }
   if (e->op != MD_OP_UPDATE || cs->full_document == FD_DEFAULT) {
      return true;
   }
   if (cs->full_document == FD_UPDATE_LOOKUP) {
      md_coll_t *coll = md_store_coll(store, e->db, e->coll, false, NULL);
      bson_iter_t it;
      md_doc_t *d = NULL;
      if (coll && md_oplog_doc(e->doc_key, &doc) && bson_iter_init_find(&it, &doc, "_id")) {
         d = md_coll_find_id(coll, bson_iter_value(&it));
      }
      if (d) {
         BSON_APPEND_DOCUMENT(ev, "fullDocument", d->bson);
      } else {
         BSON_APPEND_NULL(ev, "fullDocument");
      }
   } else if (md_oplog_doc(e->full_doc, &doc)) {
      BSON_APPEND_DOCUMENT(ev, "fullDocument", &doc);
   } else {
      BSON_APPEND_NULL(ev, "fullDocument");
   }
   return true;
}

static bool
append_before_change(const md_changestream_t *cs, const md_oplog_entry_t *e, bson_t *ev,
                     bson_error_t *error)
{
   if (cs->before_change == FD_OFF ||
       (e->op != MD_OP_UPDATE && e->op != MD_OP_REPLACE && e->op != MD_OP_DELETE)) {
      return true;
   }
   bson_t doc;
   if (md_oplog_doc(e->pre_image, &doc)) {
      BSON_APPEND_DOCUMENT(ev, "fullDocumentBeforeChange", &doc);
   } else {
      BSON_APPEND_NULL(ev, "fullDocumentBeforeChange");
   }
   return true;
}

bson_t *
md_cs_make_event(const md_changestream_t *cs, const md_oplog_entry_t *e, md_store_t *store,
                 bson_error_t *error)
{
   if (!check_required_images(cs, e, error)) {
      return NULL;
   }
   bson_t *ev = bson_new();
   if (e->lsid) {
      /* As 6.0 builds a transaction's events: these two fields first. */
      BSON_APPEND_INT64(ev, "txnNumber", e->txn_number);
      BSON_APPEND_DOCUMENT(ev, "lsid", e->lsid);
   }
   append_id(ev, e->ts, e->txn_index, MD_TOKEN_EVENT);
   BSON_APPEND_UTF8(ev, "operationType", op_name(e->op));
   bson_append_timestamp(ev, "clusterTime", -1, e->ts.t, e->ts.i);
   BSON_APPEND_DATE_TIME(ev, "wallTime", e->wall_ms);
   if (!append_full_document(cs, e, store, ev, error)) {
      bson_destroy(ev);
      return NULL;
   }
   append_ns(ev, "ns", e->db, e->coll);
   if (e->op == MD_OP_RENAME) {
      append_ns(ev, "to", e->to_db, e->to_coll);
   }
   bson_t doc;
   if (md_oplog_doc(e->doc_key, &doc)) {
      BSON_APPEND_DOCUMENT(ev, "documentKey", &doc);
   }
   if (md_oplog_doc(e->update_desc, &doc)) {
      BSON_APPEND_DOCUMENT(ev, "updateDescription", &doc);
   }
   if (!append_before_change(cs, e, ev, error)) {
      bson_destroy(ev);
      return NULL;
   }
   return ev;
}

bson_t *
md_cs_make_invalidate(md_ts_t ts, uint32_t index, int64_t wall_ms)
{
   bson_t *ev = bson_new();
   append_id(ev, ts, index, MD_TOKEN_INVALIDATE);
   BSON_APPEND_UTF8(ev, "operationType", "invalidate");
   bson_append_timestamp(ev, "clusterTime", -1, ts.t, ts.i);
   BSON_APPEND_DATE_TIME(ev, "wallTime", wall_ms);
   return ev;
}

bool
md_cs_transform(const md_changestream_t *cs, bson_t *ev, bson_t **out, bson_error_t *error)
{
   *out = ev;
   if (!cs->stages) {
      return true;
   }
   bson_t **res = NULL;
   size_t n = 0;
   bson_t *in[1] = {ev};
   bool ok = tm_pipeline_exec(cs->stages, in, 1, &res, &n, error);
   *out = NULL;
   if (ok && n == 1) {
      bson_iter_t a, b;
      bool same =
         bson_iter_init_find(&a, ev, "_id") && bson_iter_init_find(&b, res[0], "_id") &&
         BSON_ITER_HOLDS_DOCUMENT(&b) &&
         bson_iter_value(&a)->value.v_doc.data_len == bson_iter_value(&b)->value.v_doc.data_len &&
         memcmp(bson_iter_value(&a)->value.v_doc.data, bson_iter_value(&b)->value.v_doc.data,
                bson_iter_value(&a)->value.v_doc.data_len) == 0;
      if (same) {
         *out = res[0];
         res[0] = NULL;
      } else {
         ok = tm_error_set(error, 280,
                           "Encountered an event whose _id field, which contains "
                           "the resume token, was modified by the pipeline. "
                           "Modifying the _id field of an event makes it impossible "
                           "to resume the stream from that point. Only "
                           "transformations that retain the unmodified _id field "
                           "are allowed.");
      }
   }
   if (res) {
      tm_docs_free(res, n);
   }
   bson_destroy(ev);
   return ok;
}
