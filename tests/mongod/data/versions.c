/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Older versions of documents for reads at an older position (see versions.h). MongoDB's
 * secondaries hold their own copy of the data at their applied position (and WiredTiger
 * keeps older versions for reads at the majority commit point: readConcern "majority",
 * src/mongo/db/repl/replication_coordinator_impl.cpp's _currentCommittedSnapshot); the
 * one shared data set here keeps the previous version of each recent change instead.
 * Callers hold the server lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/keyenc.h"
#include "data/versions.h"

void
md_versions_init(md_versions_t *v, const md_oplog_t *log)
{
   memset(v, 0, sizeof *v);
   v->log = log;
}

static void
record_free(md_version_t *r)
{
   bson_free(r->ns);
   bson_free(r->key);
   if (r->pre) {
      bson_destroy(r->pre);
   }
}

void
md_versions_destroy(md_versions_t *v)
{
   md_versions_catalog_destroy(v);
   for (size_t i = v->first; i < v->n; i++) {
      record_free(&v->records[i]);
   }
   free(v->records);
   memset(v, 0, sizeof *v);
}

/* Drops the records no member can read before any more, and compacts the array. */
static void
trim(md_versions_t *v)
{
   uint64_t oldest = v->oldest ? v->oldest(v->oldest_ctx) : v->log->next_seq;
   oldest = oldest > v->log->first_seq ? oldest : v->log->first_seq;
   while (v->first < v->n && v->records[v->first].seq < oldest) {
      record_free(&v->records[v->first++]);
   }
   if (v->first == v->n) {
      v->first = v->n = 0;
   } else if (v->first > v->cap / 2) {
      memmove(v->records, v->records + v->first, (v->n - v->first) * sizeof *v->records);
      v->n -= v->first;
      v->first = 0;
   }
}

static char *
coll_ns(const md_coll_t *coll)
{
   return bson_strdup_printf("%s.%s", coll->db->name, coll->name);
}

void
md_versions_record(md_versions_t *v, md_coll_t *coll, const bson_t *doc)
{
   bson_iter_t it;
   if (!v->enabled || !bson_iter_init_find(&it, doc, "_id")) {
      return;
   }
   trim(v);
   if (v->n == v->cap) {
      v->cap = v->cap ? v->cap * 2 : 64;
      v->records = realloc(v->records, v->cap * sizeof *v->records);
   }
   const md_doc_t *current = md_coll_find_id(coll, bson_iter_value(&it));
   bson_string_t *key = bson_string_new(NULL);
   md_keyenc_append(key, bson_iter_value(&it));
   md_version_t *r = &v->records[v->n++];
   r->seq = v->log->next_seq;
   r->ns = coll_ns(coll);
   r->key_len = key->len;
   r->key = bson_string_free(key, false);
   r->pre = current ? bson_copy(current->bson) : NULL;
}

/* The first record of each document of `ns` changed at or after `seq`: key -> record. */
static md_hmap_t *
first_changes(const md_versions_t *v, const char *ns, uint64_t seq)
{
   md_hmap_t *map = md_hmap_new();
   for (size_t i = v->n; i > v->first && v->records[i - 1].seq >= seq; i--) {
      md_version_t *r = &v->records[i - 1];
      if (strcmp(r->ns, ns) == 0) {
         md_hmap_put(map, r->key, r->key_len, r); /* the older one replaces the newer */
      }
   }
   return map;
}

bool
md_versions_changed_since(const md_versions_t *v, const md_coll_t *coll, uint64_t seq)
{
   char *ns = coll_ns(coll);
   bool changed = false;
   for (size_t i = v->n; !changed && i > v->first && v->records[i - 1].seq >= seq; i--) {
      changed = strcmp(v->records[i - 1].ns, ns) == 0;
   }
   bson_free(ns);
   return changed;
}

typedef struct {
   md_coll_t *snap;
   md_hmap_t *emitted;
} restore_ctx_t;

/* A document deleted since the position comes back (at the end: natural order is lost). */
static void
restore_deleted(void *value, void *ctx)
{
   md_version_t *r = value;
   restore_ctx_t *rc = ctx;
   if (r->pre && !md_hmap_get(rc->emitted, r->key, r->key_len)) {
      md_coll_append_unindexed(rc->snap, bson_copy(r->pre));
   }
}

md_coll_t *
md_versions_snapshot(const md_versions_t *v, const md_coll_t *coll, uint64_t seq)
{
   char *ns = coll_ns(coll);
   md_hmap_t *changes = first_changes(v, ns, seq);
   md_hmap_t *emitted = md_hmap_new();
   md_coll_t *snap = calloc(1, sizeof *snap);
   snap->name = strdup(coll->name);
   snap->db = coll->db;
   snap->options = bson_copy(coll->options);
   snap->is_snapshot = true;
   bson_string_t *key = bson_string_new(NULL);
   for (const md_doc_t *d = coll->head; d; d = d->next) {
      bson_string_truncate(key, 0);
      md_keyenc_field(key, d->bson, "_id");
      const md_version_t *r = md_hmap_get(changes, key->str, key->len);
      if (r) {
         md_hmap_put(emitted, r->key, r->key_len, (void *)r);
      }
      if (!r || r->pre) {
         md_coll_append_unindexed(snap, bson_copy(r ? r->pre : d->bson));
      }
   }
   restore_ctx_t rc = {snap, emitted};
   md_hmap_foreach(changes, restore_deleted, &rc);
   bson_string_free(key, true);
   md_hmap_destroy(emitted);
   md_hmap_destroy(changes);
   bson_free(ns);
   return snap;
}
