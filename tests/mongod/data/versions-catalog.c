/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Older versions of the catalog (see versions.h): before a collection is created, dropped,
 * renamed or gets an index, the store's catalog hook keeps what it was (nothing, or a
 * detached copy) numbered with the next history position, so that a member reading at an
 * older position sees the catalog it has applied, as a MongoDB secondary applies create,
 * drop and createIndexes oplog entries in order (src/mongo/db/repl/oplog.cpp, r6.0: the
 * commands of `_opCommandMap`). Records no member can read before any more are dropped.
 * Callers hold the server lock.
 */
#include <stdlib.h>
#include <string.h>

#include "data/versions.h"

static void
catalog_free(md_catalog_version_t *r)
{
   bson_free(r->ns);
   if (r->before) {
      md_db_t *db = r->before->db;
      md_coll_free_detached(r->before);
      free(db->name);
      free(db);
   }
}

void
md_versions_catalog_destroy(md_versions_t *v)
{
   for (size_t i = v->catalog_first; i < v->n_catalog; i++) {
      catalog_free(&v->catalog[i]);
   }
   free(v->catalog);
   v->catalog = NULL;
   v->n_catalog = v->cap_catalog = v->catalog_first = 0;
}

static void
catalog_trim(md_versions_t *v)
{
   uint64_t oldest = v->oldest ? v->oldest(v->oldest_ctx) : v->log->next_seq;
   while (v->catalog_first < v->n_catalog && v->catalog[v->catalog_first].seq <= oldest) {
      catalog_free(&v->catalog[v->catalog_first++]);
   }
   if (v->catalog_first == v->n_catalog) {
      v->catalog_first = v->n_catalog = 0;
   }
}

/* A detached copy of `coll` in a detached database of the same name. */
static md_coll_t *
copy_detached(const md_coll_t *coll)
{
   md_db_t *db = calloc(1, sizeof *db);
   db->name = strdup(coll->db->name);
   return md_coll_copy(coll, db);
}

void
md_versions_catalog_record(md_versions_t *v, md_db_t *db, const char *name, md_coll_t *coll)
{
   if (!v->enabled) {
      return;
   }
   catalog_trim(v);
   if (v->n_catalog == v->cap_catalog) {
      v->cap_catalog = v->cap_catalog ? v->cap_catalog * 2 : 16;
      v->catalog = realloc(v->catalog, v->cap_catalog * sizeof *v->catalog);
   }
   md_catalog_version_t *r = &v->catalog[v->n_catalog++];
   r->seq = v->log->next_seq;
   r->ns = bson_strdup_printf("%s.%s", db->name, name);
   r->before = coll ? copy_detached(coll) : NULL;
}

void
md_versions_catalog_note(md_versions_t *v, md_oplog_t *log, const char *db, const char *coll)
{
   if (v->enabled) {
      md_oplog_parts_t parts = {.op = MD_OP_NOOP, .db = db, .coll = coll};
      md_oplog_append(log, md_oplog_entry_new(&parts));
   }
}

/* The first record of `ns` at or after `seq`, or NULL. */
static const md_catalog_version_t *
first_change(const md_versions_t *v, const char *ns, uint64_t seq)
{
   const md_catalog_version_t *found = NULL;
   for (size_t i = v->n_catalog; i > v->catalog_first && v->catalog[i - 1].seq > seq; i--) {
      found = strcmp(v->catalog[i - 1].ns, ns) == 0 ? &v->catalog[i - 1] : found;
   }
   return found;
}

md_coll_t *
md_versions_catalog_at(const md_versions_t *v, const char *db, const char *name, uint64_t seq,
                       md_coll_t *live)
{
   if (!v->enabled || v->n_catalog == v->catalog_first) {
      return live;
   }
   char *ns = bson_strdup_printf("%s.%s", db, name);
   const md_catalog_version_t *r = first_change(v, ns, seq);
   bson_free(ns);
   return r ? r->before : live;
}

void
md_versions_catalog_gone(const md_versions_t *v, md_store_t *store, const char *db, uint64_t seq,
                         void (*fn)(md_coll_t *coll, void *ctx), void *ctx)
{
   for (size_t i = v->catalog_first; v->enabled && i < v->n_catalog; i++) {
      const md_catalog_version_t *r = &v->catalog[i];
      /* Each name once: its first change after `seq` tells what it was then. */
      if (r->seq <= seq || !r->before || strcmp(r->before->db->name, db) != 0 ||
          first_change(v, r->ns, seq) != r ||
          md_store_coll(store, db, r->before->name, false, NULL)) {
         continue;
      }
      fn(r->before, ctx);
   }
}
