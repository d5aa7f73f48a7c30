/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 */
#include "backlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* Documents per bulk execution: large enough to amortize round trips, small enough that a
 * batch of 64 KiB events stays well inside one 48 MB message. */
#define BULK_DOCS 500
#define BULK_BYTES (8 * 1024 * 1024)

void
bench_layout_init(bench_layout_t *l, size_t events, size_t entities)
{
   l->events = events;
   l->entities = entities;
   l->entity_of = calloc(events ? events : 1, sizeof *l->entity_of);
   if (!l->entity_of) {
      abort();
   }
}

void
bench_layout_free(bench_layout_t *l)
{
   free(l->entity_of);
   l->entity_of = NULL;
}

void
bench_entity_id(char *buf, size_t size, size_t e)
{
   snprintf(buf, size, "ent-%06zu", e);
}

/* Event ids are unique across entities and runs: a random per-process prefix plus n. */
static void
event_id(char *buf, size_t size, int64_t n)
{
   static uint32_t run;
   if (!run && getrandom(&run, sizeof run, 0) != (ssize_t)sizeof run) {
      run = (uint32_t)bench_now_ns();
   }
   snprintf(buf, size, "%08x-0000-4000-8000-%012llx", run,
            (unsigned long long)n & 0xffffffffffffULL);
}

void
bench_event_data(bson_t *data, int64_t n, size_t payload)
{
   size_t pad = bench_pad_len(payload);
   BSON_APPEND_INT64(data, "bench_n", n);
   bson_append_utf8(data, "pad", 3, bench_pad(pad), (int)pad);
}

void
bench_append_event(bson_t *parent, const char *key, int64_t n, int64_t seq, size_t payload)
{
   bson_t ev, data;
   char id[40];
   event_id(id, sizeof id, n);
   bson_append_document_begin(parent, key, -1, &ev);
   BSON_APPEND_UTF8(&ev, "id", id);
   BSON_APPEND_INT64(&ev, "seq", seq);
   BSON_APPEND_UTF8(&ev, "type", "bench.event");
   BSON_APPEND_DATE_TIME(&ev, "time", (int64_t)time(NULL) * 1000);
   bson_append_document_begin(&ev, "data", 4, &data);
   bench_event_data(&data, n, payload);
   bson_append_document_end(&ev, &data);
   bson_append_document_end(parent, &ev);
}

void
bench_coll_drop(mongoc_client_t *c, const char *db, const char *coll)
{
   mongoc_collection_t *col = mongoc_client_get_collection(c, db, coll);
   bson_error_t err;
   if (!mongoc_collection_drop(col, &err) && err.code != 26) {
      fprintf(stderr, "outbox-bench: drop %s.%s: %s\n", db, coll, err.message);
   }
   mongoc_collection_destroy(col);
}

bool
bench_coll_prepare(mongoc_client_t *c, const char *db, const char *coll)
{
   bench_coll_drop(c, db, coll);
   bson_t *cmd =
      BCON_NEW("createIndexes", BCON_UTF8(coll), "indexes", "[", "{", "key", "{", "eventSeq",
               BCON_INT32(1), "}", "name", BCON_UTF8("outbox_pending"), "partialFilterExpression",
               "{", "events.0", "{", "$exists", BCON_BOOL(true), "}", "}", "}", "]");
   bson_error_t err;
   bool ok = mongoc_client_write_command_with_opts(c, db, cmd, NULL, NULL, &err);
   if (!ok) {
      fprintf(stderr, "outbox-bench: createIndexes on %s.%s: %s\n", db, coll, err.message);
   }
   bson_destroy(cmd);
   return ok;
}

typedef struct {
   mongoc_collection_t *col;
   mongoc_bulk_operation_t *bulk;
   size_t docs, bytes;
   int32_t updates; /* update_one operations in the current batch, all of which must match */
   bool ok;
} bulk_t;

static void
bulk_flush(bulk_t *b)
{
   if (b->bulk && b->docs) {
      bson_error_t err;
      bson_t reply;
      if (!mongoc_bulk_operation_execute(b->bulk, &reply, &err)) {
         fprintf(stderr, "outbox-bench: bulk write: %s\n", err.message);
         b->ok = false;
      } else if (b->updates) {
         bson_iter_t it;
         int32_t matched = bson_iter_init_find(&it, &reply, "nMatched") ? bson_iter_int32(&it) : 0;
         if (matched != b->updates) {
            fprintf(stderr, "outbox-bench: bulk write matched %d of %d updates\n", matched,
                    b->updates);
            b->ok = false;
         }
      }
      bson_destroy(&reply);
   }
   mongoc_bulk_operation_destroy(b->bulk);
   b->bulk = NULL;
   b->docs = b->bytes = 0;
   b->updates = 0;
}

static void
bulk_count(bulk_t *b, size_t bytes)
{
   b->docs++;
   b->bytes += bytes;
   if (b->docs >= BULK_DOCS || b->bytes >= BULK_BYTES) {
      bulk_flush(b);
   }
}

static mongoc_bulk_operation_t *
bulk_get(bulk_t *b)
{
   if (!b->bulk) {
      /* Ordered: successive appends to one entity in a batch depend on each other. */
      b->bulk = mongoc_collection_create_bulk_operation_with_opts(b->col, NULL);
   }
   return b->bulk;
}

static void
entity_doc(bson_t *doc, size_t e, int64_t event_seq)
{
   char id[32];
   bench_entity_id(id, sizeof id, e);
   BSON_APPEND_UTF8(doc, "_id", id);
   BSON_APPEND_UTF8(doc, "name", "benchmark entity");
   BSON_APPEND_INT64(doc, "version", 1);
   BSON_APPEND_INT64(doc, "eventSeq", event_seq);
}

bool
bench_backlog_insert(mongoc_client_t *c, const char *db, const char *coll, bench_layout_t *l,
                     size_t payload)
{
   bulk_t b = {.col = mongoc_client_get_collection(c, db, coll), .ok = true};
   for (size_t e = 0; e < l->entities && b.ok; e++) {
      size_t count = e < l->events ? (l->events - e - 1) / l->entities + 1 : 0;
      bson_t doc = BSON_INITIALIZER, arr;
      entity_doc(&doc, e, (int64_t)count);
      bson_append_array_begin(&doc, "events", 6, &arr);
      for (size_t k = 0; k < count; k++) {
         size_t n = e + k * l->entities;
         char key[16];
         const char *kp;
         bson_uint32_to_string((uint32_t)k, &kp, key, sizeof key);
         bench_append_event(&arr, kp, (int64_t)n, (int64_t)k + 1, payload);
         l->entity_of[n] = (uint32_t)e;
      }
      bson_append_array_end(&doc, &arr);
      mongoc_bulk_operation_insert(bulk_get(&b), &doc);
      bulk_count(&b, doc.len);
      bson_destroy(&doc);
   }
   bulk_flush(&b);
   mongoc_collection_destroy(b.col);
   return b.ok;
}

bool
bench_archive_insert(mongoc_client_t *c, const char *db, const char *archive, const char *coll,
                     bench_layout_t *l, size_t payload)
{
   bulk_t b = {.col = mongoc_client_get_collection(c, db, archive), .ok = true};
   int64_t now_ms = (int64_t)time(NULL) * 1000;
   for (size_t n = 0; n < l->events && b.ok; n++) {
      size_t e = n % l->entities;
      char id[40], entity[32];
      bson_t entry = BSON_INITIALIZER, data;
      event_id(id, sizeof id, (int64_t)n);
      bench_entity_id(entity, sizeof entity, e);
      /* An entry as the relay writes it (outbox/archive.h). */
      BSON_APPEND_UTF8(&entry, "_id", id);
      BSON_APPEND_UTF8(&entry, "collection", coll);
      BSON_APPEND_UTF8(&entry, "entityId", entity);
      BSON_APPEND_INT64(&entry, "seq", (int64_t)(n / l->entities) + 1);
      BSON_APPEND_UTF8(&entry, "type", "bench.event");
      BSON_APPEND_DATE_TIME(&entry, "time", now_ms);
      bson_append_document_begin(&entry, "data", 4, &data);
      bench_event_data(&data, (int64_t)n, payload);
      bson_append_document_end(&entry, &data);
      BSON_APPEND_DATE_TIME(&entry, "publishedAt", now_ms);
      BSON_APPEND_UTF8(&entry, "relay", "outbox-bench");
      l->entity_of[n] = (uint32_t)e;
      mongoc_bulk_operation_insert(bulk_get(&b), &entry);
      bulk_count(&b, entry.len);
      bson_destroy(&entry);
   }
   bulk_flush(&b);
   mongoc_collection_destroy(b.col);
   return b.ok;
}

bool
bench_entities_insert(mongoc_client_t *c, const char *db, const char *coll, size_t entities)
{
   bulk_t b = {.col = mongoc_client_get_collection(c, db, coll), .ok = true};
   for (size_t e = 0; e < entities && b.ok; e++) {
      bson_t doc = BSON_INITIALIZER, arr;
      entity_doc(&doc, e, 0);
      bson_append_array_begin(&doc, "events", 6, &arr);
      bson_append_array_end(&doc, &arr);
      mongoc_bulk_operation_insert(bulk_get(&b), &doc);
      bulk_count(&b, doc.len);
      bson_destroy(&doc);
   }
   bulk_flush(&b);
   mongoc_collection_destroy(b.col);
   return b.ok;
}

/* One append of `per_commit` events as liboutbox sends it: version check in the filter,
 * $inc of version and eventSeq, $push of the events. */
static void
build_append(size_t e, int64_t round, int per_commit, int64_t first_n, size_t payload,
             bson_t **filter, bson_t *upd)
{
   char id[32];
   bson_t inc, push, each, arr;
   bench_entity_id(id, sizeof id, e);
   *filter = BCON_NEW("_id", BCON_UTF8(id), "version", BCON_INT64(round + 1));
   bson_init(upd);
   bson_append_document_begin(upd, "$inc", 4, &inc);
   BSON_APPEND_INT64(&inc, "version", 1);
   BSON_APPEND_INT64(&inc, "eventSeq", per_commit);
   bson_append_document_end(upd, &inc);
   bson_append_document_begin(upd, "$push", 5, &push);
   bson_append_document_begin(&push, "events", 6, &each);
   bson_append_array_begin(&each, "$each", 5, &arr);
   for (int j = 0; j < per_commit; j++) {
      char key[16];
      const char *kp;
      bson_uint32_to_string((uint32_t)j, &kp, key, sizeof key);
      bench_append_event(&arr, kp, first_n + j, round * per_commit + j + 1, payload);
   }
   bson_append_array_end(&each, &arr);
   bson_append_document_end(&push, &each);
   bson_append_document_end(upd, &push);
}

static size_t
stream_update(bulk_t *b, size_t e, int64_t round, int per_commit, int64_t first_n, size_t payload)
{
   bson_t *filter, upd;
   build_append(e, round, per_commit, first_n, payload, &filter, &upd);
   mongoc_bulk_operation_update_one(bulk_get(b), filter, &upd, false);
   b->updates++;
   size_t bytes = upd.len;
   bson_destroy(&upd);
   bson_destroy(filter);
   return bytes;
}

bool
bench_append_one(mongoc_collection_t *col, size_t e, int64_t round, int64_t n, size_t payload)
{
   bson_t *filter, upd;
   bson_error_t err;
   build_append(e, round, 1, n, payload, &filter, &upd);
   bool ok = mongoc_collection_update_one(col, filter, &upd, NULL, NULL, &err);
   if (!ok) {
      fprintf(stderr, "outbox-bench: append: %s\n", err.message);
   }
   bson_destroy(&upd);
   bson_destroy(filter);
   return ok;
}

bool
bench_stream_write(mongoc_client_t *c, const char *db, const char *coll, bench_layout_t *l,
                   int per_commit, size_t payload, int64_t base)
{
   bulk_t b = {.col = mongoc_client_get_collection(c, db, coll), .ok = true};
   size_t n = 0;
   for (int64_t round = 0; n < l->events && b.ok; round++) {
      for (size_t e = 0; e < l->entities && n < l->events && b.ok; e++) {
         /* The last commit may be short; the layout's count is what is expected. */
         int k = (int)(l->events - n < (size_t)per_commit ? l->events - n : (size_t)per_commit);
         for (int j = 0; j < k; j++) {
            l->entity_of[n + (size_t)j] = (uint32_t)e;
         }
         bulk_count(&b, stream_update(&b, e, round, k, base + (int64_t)n, payload));
         n += (size_t)k;
      }
   }
   bulk_flush(&b);
   mongoc_collection_destroy(b.col);
   return b.ok;
}

int
bench_pending_any(mongoc_client_t *c, const char *db, const char *coll)
{
   mongoc_collection_t *col = mongoc_client_get_collection(c, db, coll);
   bson_t *filter = BCON_NEW("events.0", "{", "$exists", BCON_BOOL(true), "}");
   bson_t *opts = BCON_NEW("limit", BCON_INT64(1), "projection", "{", "_id", BCON_INT32(1), "}");
   mongoc_cursor_t *cur = mongoc_collection_find_with_opts(col, filter, opts, NULL);
   const bson_t *doc;
   int found = mongoc_cursor_next(cur, &doc) ? 1 : 0;
   bson_error_t err;
   if (mongoc_cursor_error(cur, &err)) {
      fprintf(stderr, "outbox-bench: pending check: %s\n", err.message);
      found = -1;
   }
   mongoc_cursor_destroy(cur);
   bson_destroy(opts);
   bson_destroy(filter);
   mongoc_collection_destroy(col);
   return found;
}
