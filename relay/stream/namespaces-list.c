/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Listing the server's namespaces that match the patterns (namespaces.h,
 * relay_namespaces_list()): the one I/O of the watched set, run by the main thread before a
 * full sweep. One database's collection names at a time, so memory is names only. And the
 * collection handles a thread keeps per namespace (relay_ns_handles_t), one per
 * namespace met, owned by that thread.
 */
#include "stream/namespaces.h"

#include <string.h>

#include "util/log.h"

/* Takes the matching collections of @db. */
static bool
list_collections(relay_namespaces_t *ns, mongoc_client_t *client, const char *db,
                 bson_error_t *error)
{
   mongoc_database_t *d = mongoc_client_get_database(client, db);
   /* Views and time series cannot hold outbox documents the relay could update. */
   bson_t *opts = BCON_NEW("nameOnly", BCON_BOOL(true), "filter", "{", "type", "collection", "}");
   char **names = mongoc_database_get_collection_names_with_opts(d, opts, error);
   for (size_t i = 0; names && names[i]; i++) {
      relay_namespaces_take(ns, db, names[i]);
   }
   bool ok = names != NULL;
   bson_strfreev(names);
   bson_destroy(opts);
   mongoc_database_destroy(d);
   return ok;
}

bool
relay_namespaces_list(relay_namespaces_t *ns, mongoc_client_t *client, bson_error_t *error)
{
   const relay_nsset_t *set = relay_namespaces_patterns(ns);
   if (relay_nsset_literal(set)) {
      /* All known: each is swept again, dropped or not. A drop the stream showed may be
       * older than the sweep (a stream started at a time is inclusive, so it can begin with
       * the drop of a database the writers have made again since), and a sweep that skipped
       * the namespace left the events written before it to nobody (FINDINGS.md F21).
       * Sweeping a collection that is really gone costs one empty query. */
      relay_namespaces_revive(ns);
      return true;
   }
   const char *single = relay_nsset_single_db(set);
   if (single) {
      return list_collections(ns, client, single, error);
   }
   /* authorizedDatabases: a user with privileges on some databases only still lists those
    * (MongoDB 6.0 listDatabases without the cluster-wide action). */
   bson_t *opts = BCON_NEW("nameOnly", BCON_BOOL(true), "authorizedDatabases", BCON_BOOL(true));
   char **dbs = mongoc_client_get_database_names_with_opts(client, opts, error);
   bool ok = dbs != NULL;
   int before = relay_namespaces_count(ns);
   for (size_t i = 0; ok && dbs[i]; i++) {
      if (relay_nsset_match_db(set, dbs[i])) {
         ok = list_collections(ns, client, dbs[i], error);
      }
   }
   if (ok && relay_namespaces_count(ns) > before) {
      relay_log(RELAY_LOG_INFO, "stream", "found %d new namespaces matching the patterns",
                relay_namespaces_count(ns) - before);
   }
   bson_strfreev(dbs);
   bson_destroy(opts);
   return ok;
}

/* Frees the handles of namespaces that are gone, once per change of the set: a tenant
 * dropped leaves nothing here (a handle is made again if it comes back). */
static void
forget_gone(relay_ns_handles_t *c, relay_namespaces_t *ns)
{
   uint64_t v = relay_namespaces_version(ns);
   relay_ns_t n;
   if (v == c->version) {
      return;
   }
   c->version = v;
   for (int i = 0; i < c->n; i++) {
      if (c->h[i] && relay_namespaces_get(ns, i, &n) && n.gone) {
         mongoc_collection_destroy(c->h[i]);
         c->h[i] = NULL;
      }
   }
}

mongoc_collection_t *
relay_ns_handle(relay_ns_handles_t *c, relay_namespaces_t *ns, mongoc_client_t *client, int i)
{
   relay_ns_t n;
   forget_gone(c, ns);
   if (!relay_namespaces_get(ns, i, &n)) {
      return NULL;
   }
   if (i >= c->n) {
      int grown = c->n ? c->n : 16;
      while (grown <= i) {
         grown *= 2;
      }
      c->h = bson_realloc(c->h, (size_t)grown * sizeof *c->h);
      memset(c->h + c->n, 0, (size_t)(grown - c->n) * sizeof *c->h);
      c->n = grown;
   }
   if (!c->h[i]) {
      c->h[i] = mongoc_client_get_collection(client, n.db, n.coll);
   }
   return c->h[i];
}

void
relay_ns_handles_clear(relay_ns_handles_t *c)
{
   for (int i = 0; i < c->n; i++) {
      mongoc_collection_destroy(c->h[i]);
   }
   bson_free(c->h);
   c->h = NULL;
   c->n = 0;
}
