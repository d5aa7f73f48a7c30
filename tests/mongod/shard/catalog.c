/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The sharding catalog: databases and their primary shards, sharded collections, their
 * chunks; the commands that change it (enableSharding, shardCollection, split, moveChunk of
 * an empty chunk) and listShards. The router's lock guards it; md_catalog_publish mirrors it
 * into the front's config database, which clients read as they read 6.0's config servers.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shard/router-private.h"

md_rdb_t *
md_catalog_db(md_router_t *r, const char *db, bool create)
{
   for (size_t i = 0; i < r->n_dbs; i++) {
      if (strcmp(r->dbs[i].name, db) == 0) {
         return &r->dbs[i];
      }
   }
   if (!create) {
      return NULL;
   }
   /* 6.0 puts a new database on the shard holding the least data
    * (src/mongo/db/s/config/sharding_catalog_manager_database_operations.cpp); here: the
    * shard that is primary for the fewest databases, the lowest-numbered on a tie. */
   int counts[MD_MAX_SHARDS] = {0}, best = 0;
   for (size_t i = 0; i < r->n_dbs; i++) {
      counts[r->dbs[i].primary]++;
   }
   for (int s = 1; s < r->n_shards; s++) {
      best = counts[s] < counts[best] ? s : best;
   }
   r->dbs = realloc(r->dbs, (r->n_dbs + 1) * sizeof *r->dbs);
   r->dbs[r->n_dbs] = (md_rdb_t){.name = bson_strdup(db), .primary = best};
   return &r->dbs[r->n_dbs++];
}

md_rcoll_t *
md_catalog_coll(md_router_t *r, const char *ns)
{
   for (size_t i = 0; i < r->n_colls; i++) {
      if (strcmp(r->colls[i].ns, ns) == 0) {
         return &r->colls[i];
      }
   }
   return NULL;
}

void
md_catalog_destroy(md_router_t *r)
{
   for (size_t i = 0; i < r->n_dbs; i++) {
      bson_free(r->dbs[i].name);
   }
   free(r->dbs);
   for (size_t i = 0; i < r->n_colls; i++) {
      md_rcoll_t *c = &r->colls[i];
      for (size_t k = 0; k < c->n_chunks; k++) {
         bson_destroy(c->chunks[k].min);
         bson_destroy(c->chunks[k].max);
      }
      free(c->chunks);
      bson_destroy(c->key);
      bson_free(c->ns);
   }
   free(r->colls);
}

static bool
shard_index(md_router_t *r, const char *name, int *shard)
{
   for (int s = 0; s < r->n_shards; s++) {
      char want[16];
      snprintf(want, sizeof want, "shard%d", s);
      if (strcmp(name, want) == 0) {
         *shard = s;
         return true;
      }
   }
   return false;
}

bool
md_cmd_enable_sharding(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_iter_t it;
   bson_iter_init(&it, cmd);
   bson_iter_next(&it);
   if (!BSON_ITER_HOLDS_UTF8(&it) || !*bson_iter_utf8(&it, NULL)) {
      return md_router_error(r, reply, 2, "enableSharding needs a database name");
   }
   const char *db = bson_iter_utf8(&it, NULL);
   if (strcmp(db, "admin") == 0 || strcmp(db, "config") == 0 || strcmp(db, "local") == 0) {
      return md_router_error(r, reply, 72, "Cannot enable sharding on the %s database", db);
   }
   int want = -1;
   if (bson_iter_init_find(&it, cmd, "primaryShard") && BSON_ITER_HOLDS_UTF8(&it) &&
       !shard_index(r, bson_iter_utf8(&it, NULL), &want)) {
      return md_router_error(r, reply, 70, "Shard %s not found", bson_iter_utf8(&it, NULL));
   }
   pthread_mutex_lock(&r->lock);
   bool existed = md_catalog_db(r, db, false) != NULL;
   md_rdb_t *d = md_catalog_db(r, db, true);
   if (want >= 0 && !existed) {
      d->primary = want;
   }
   pthread_mutex_unlock(&r->lock);
   md_catalog_publish(r);
   bson_init(reply);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   return true;
}

bool
md_cmd_list_shards(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   bson_t arr, doc;
   (void)cmd;
   bson_init(reply);
   BSON_APPEND_ARRAY_BEGIN(reply, "shards", &arr);
   for (int s = 0; s < r->n_shards; s++) {
      char key[16], name[16], host[64];
      const char *k;
      bson_uint32_to_string((uint32_t)s, &k, key, sizeof key);
      snprintf(name, sizeof name, "shard%d", s);
      /* In-process shards have no address of their own: the host names the set only. */
      snprintf(host, sizeof host, "%s/in-process:%d", name, s);
      BSON_APPEND_DOCUMENT_BEGIN(&arr, k, &doc);
      BSON_APPEND_UTF8(&doc, "_id", name);
      BSON_APPEND_UTF8(&doc, "host", host);
      BSON_APPEND_INT32(&doc, "state", 1);
      BSON_APPEND_TIMESTAMP(&doc, "topologyTime", r->shards[s]->data.oplog.start.t, 1);
      bson_append_document_end(&arr, &doc);
   }
   bson_append_array_end(reply, &arr);
   BSON_APPEND_DOUBLE(reply, "ok", 1.0);
   return true;
}
