/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `ensure-schema` for the archive (--archive-collection): its validator and indexes, with the
 * relay's --archive-ttl, through liboutbox's outbox_archive_ensure_schema(); --print shows the
 * validator instead. What the relay does at its first archive write, for operators who give
 * the relay no collMod or createIndex privilege.
 */
#include <sysexits.h>

#include "admin/admin.h"

int
admin_ensure_archive(admin_t *a)
{
   const char *name = a->cfg.archive_collection;
   bson_t opts = BSON_INITIALIZER;
   bson_error_t error;
   mongoc_client_t *client;
   mongoc_collection_t *archive;
   int rc = EX_OK;

   if (a->print) {
      bson_t validator;
      outbox_archive_schema(&validator);
      admin_print_json(a->out, &validator);
      bson_destroy(&validator);
      return EX_OK;
   }
   if (a->cfg.archive_ttl_s > 0) {
      BSON_APPEND_INT64(&opts, "ttlSeconds", a->cfg.archive_ttl_s);
   }
   client = mongoc_client_pool_pop(a->pool);
   archive = mongoc_client_get_collection(client, a->cfg.database, name);
   if (outbox_archive_ensure_schema(archive, &opts, &error)) {
      fprintf(a->out, "%s: the archive contract is the validator; indexes by time, entity and "
              "seq, type%s\n", name, a->cfg.archive_ttl_s > 0 ? ", and the TTL index" : "");
   } else {
      rc = admin_fail(name, &error);
   }
   mongoc_collection_destroy(archive);
   mongoc_client_pool_push(a->pool, client);
   bson_destroy(&opts);
   return rc;
}
