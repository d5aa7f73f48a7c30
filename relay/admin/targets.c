/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The namespaces a command works on: the relay's patterns (--database + --collection,
 * --namespace) resolved against the server once, at the start, through the relay's own
 * watched set (stream/namespaces.h), so outbox-admin and the relay agree on what matches.
 * Each is labelled with the watched set's name for it (relay_ns_t.name: the collection's name
 * in the state database, "db.coll" elsewhere), the one the archive's entries carry.
 *
 * Single-threaded, like all of outbox-admin (admin.h).
 */
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"
#include "stream/namespaces.h"

static void
add(admin_t *a, const relay_ns_t *n)
{
   admin_target_t *t;
   a->targets = bson_realloc(a->targets, (a->n_targets + 1) * sizeof *a->targets);
   t = &a->targets[a->n_targets++];
   t->db = bson_strdup(n->db);
   t->coll = bson_strdup(n->coll);
   t->label = bson_strdup(n->name);
}

int
admin_targets_resolve(admin_t *a)
{
   bson_error_t error;
   relay_namespaces_t *ns;
   relay_ns_t n;
   int rc = EX_OK;

   if (a->cfg.n_watch == 0) {
      return EX_OK; /* the commands that need a collection say so */
   }
   if (!(ns = relay_namespaces_new(&a->cfg, &error))) {
      fprintf(stderr, "outbox-admin: %s\n", error.message);
      return EX_CONFIG;
   }
   mongoc_client_t *client = mongoc_client_pool_pop(a->pool);
   if (!relay_namespaces_list(ns, client, &error)) {
      rc = admin_fail("listing the namespaces", &error);
   }
   mongoc_client_pool_push(a->pool, client);
   for (int i = 0; rc == EX_OK && relay_namespaces_get(ns, i, &n); i++) {
      add(a, &n);
   }
   relay_namespaces_destroy(ns);
   return rc;
}

const admin_target_t *
admin_target(const admin_t *a, const char *label)
{
   for (size_t i = 0; i < a->n_targets; i++) {
      if (!strcmp(a->targets[i].label, label)) {
         return &a->targets[i];
      }
   }
   return NULL;
}

void
admin_targets_cleanup(admin_t *a)
{
   for (size_t i = 0; i < a->n_targets; i++) {
      bson_free(a->targets[i].db);
      bson_free(a->targets[i].coll);
      bson_free(a->targets[i].label);
   }
   bson_free(a->targets);
   a->targets = NULL;
   a->n_targets = 0;
}
