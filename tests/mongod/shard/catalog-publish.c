/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The config database as 6.0's config servers hold it (config.shards, config.databases,
 * config.collections, config.chunks; shapes of src/mongo/s/catalog/type_*.h), rewritten on
 * the front after every catalog change so that clients and tools read it with find. Built
 * under the router's lock, written without it, one rewrite at a time (publish_lock).
 */
#include <string.h>

#include "shard/router-private.h"

static void
append_doc(bson_t *arr, uint32_t *i, const bson_t *doc)
{
   char key[16];
   const char *k;
   bson_uint32_to_string((*i)++, &k, key, sizeof key);
   BSON_APPEND_DOCUMENT(arr, k, doc);
}

static void
shards_docs(md_router_t *r, bson_t *arr)
{
   uint32_t n = 0;
   for (int s = 0; s < r->n_shards; s++) {
      char name[16], host[64];
      bson_t doc = BSON_INITIALIZER;
      snprintf(name, sizeof name, "shard%d", s);
      snprintf(host, sizeof host, "%s/in-process:%d", name, s);
      BSON_APPEND_UTF8(&doc, "_id", name);
      BSON_APPEND_UTF8(&doc, "host", host);
      BSON_APPEND_INT32(&doc, "state", 1);
      BSON_APPEND_TIMESTAMP(&doc, "topologyTime", r->shards[s]->data.oplog.start.t, 1);
      append_doc(arr, &n, &doc);
      bson_destroy(&doc);
   }
}

static void
databases_docs(md_router_t *r, bson_t *arr)
{
   uint32_t n = 0;
   for (size_t i = 0; i < r->n_dbs; i++) {
      char primary[16];
      bson_t doc = BSON_INITIALIZER, version;
      snprintf(primary, sizeof primary, "shard%d", r->dbs[i].primary);
      BSON_APPEND_UTF8(&doc, "_id", r->dbs[i].name);
      BSON_APPEND_UTF8(&doc, "primary", primary);
      BSON_APPEND_BOOL(&doc, "partitioned", false);
      BSON_APPEND_DOCUMENT_BEGIN(&doc, "version", &version);
      BSON_APPEND_TIMESTAMP(&version, "timestamp", r->shards[0]->data.oplog.start.t,
                            (uint32_t)i + 1);
      BSON_APPEND_INT32(&version, "lastMod", 1);
      bson_append_document_end(&doc, &version);
      append_doc(arr, &n, &doc);
      bson_destroy(&doc);
   }
}

static void
collections_docs(md_router_t *r, bson_t *colls, bson_t *chunks)
{
   uint32_t n = 0, m = 0;
   for (size_t i = 0; i < r->n_colls; i++) {
      const md_rcoll_t *c = &r->colls[i];
      bson_t doc = BSON_INITIALIZER;
      BSON_APPEND_UTF8(&doc, "_id", c->ns);
      BSON_APPEND_OID(&doc, "lastmodEpoch", &c->epoch);
      BSON_APPEND_DATE_TIME(&doc, "lastmod", (int64_t)c->created_t * 1000);
      BSON_APPEND_TIMESTAMP(&doc, "timestamp", c->created_t, 1);
      BSON_APPEND_BINARY(&doc, "uuid", BSON_SUBTYPE_UUID, c->uuid, 16);
      BSON_APPEND_DOCUMENT(&doc, "key", c->key);
      BSON_APPEND_BOOL(&doc, "unique", c->unique);
      BSON_APPEND_BOOL(&doc, "noBalance", false);
      append_doc(colls, &n, &doc);
      bson_destroy(&doc);
      for (size_t k = 0; k < c->n_chunks; k++) {
         const md_chunk_t *ch = &c->chunks[k];
         char shard[16];
         bson_oid_t oid;
         bson_t chunk = BSON_INITIALIZER, history, entry;
         snprintf(shard, sizeof shard, "shard%d", ch->shard);
         bson_oid_init(&oid, NULL);
         BSON_APPEND_OID(&chunk, "_id", &oid);
         BSON_APPEND_BINARY(&chunk, "uuid", BSON_SUBTYPE_UUID, c->uuid, 16);
         BSON_APPEND_DOCUMENT(&chunk, "min", ch->min);
         BSON_APPEND_DOCUMENT(&chunk, "max", ch->max);
         BSON_APPEND_UTF8(&chunk, "shard", shard);
         BSON_APPEND_TIMESTAMP(&chunk, "lastmod", ch->major, ch->minor);
         BSON_APPEND_TIMESTAMP(&chunk, "onCurrentShardSince", c->created_t, 1);
         BSON_APPEND_ARRAY_BEGIN(&chunk, "history", &history);
         BSON_APPEND_DOCUMENT_BEGIN(&history, "0", &entry);
         BSON_APPEND_TIMESTAMP(&entry, "validAfter", c->created_t, 1);
         BSON_APPEND_UTF8(&entry, "shard", shard);
         bson_append_document_end(&history, &entry);
         bson_append_array_end(&chunk, &history);
         append_doc(chunks, &m, &chunk);
         bson_destroy(&chunk);
      }
   }
}

/* Replaces config.<coll>'s documents with `docs` (an array). */
static void
rewrite(md_router_t *r, const char *coll, const bson_t *docs)
{
   bson_t cmd, reply, deletes, del, q;
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, "delete", coll);
   BSON_APPEND_ARRAY_BEGIN(&cmd, "deletes", &deletes);
   BSON_APPEND_DOCUMENT_BEGIN(&deletes, "0", &del);
   BSON_APPEND_DOCUMENT_BEGIN(&del, "q", &q);
   bson_append_document_end(&del, &q);
   BSON_APPEND_INT32(&del, "limit", 0);
   bson_append_document_end(&deletes, &del);
   bson_append_array_end(&cmd, &deletes);
   BSON_APPEND_UTF8(&cmd, "$db", "config");
   md_router_call(r, -1, &cmd, &reply);
   bson_destroy(&cmd);
   bson_destroy(&reply);
   if (bson_empty(docs)) {
      return;
   }
   bson_init(&cmd);
   BSON_APPEND_UTF8(&cmd, "insert", coll);
   BSON_APPEND_ARRAY(&cmd, "documents", docs);
   BSON_APPEND_UTF8(&cmd, "$db", "config");
   md_router_call(r, -1, &cmd, &reply);
   bson_destroy(&cmd);
   bson_destroy(&reply);
}

void
md_catalog_publish(md_router_t *r)
{
   bson_t shards = BSON_INITIALIZER, dbs = BSON_INITIALIZER;
   bson_t colls = BSON_INITIALIZER, chunks = BSON_INITIALIZER;
   pthread_mutex_lock(&r->publish_lock);
   pthread_mutex_lock(&r->lock);
   shards_docs(r, &shards);
   databases_docs(r, &dbs);
   collections_docs(r, &colls, &chunks);
   pthread_mutex_unlock(&r->lock);
   rewrite(r, "shards", &shards);
   rewrite(r, "databases", &dbs);
   rewrite(r, "collections", &colls);
   rewrite(r, "chunks", &chunks);
   pthread_mutex_unlock(&r->publish_lock);
   bson_destroy(&shards);
   bson_destroy(&dbs);
   bson_destroy(&colls);
   bson_destroy(&chunks);
}
