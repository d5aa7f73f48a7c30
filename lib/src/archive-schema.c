/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The archive contract (outbox/archive.h) as a $jsonSchema validator, and installing it with
 * the archive's indexes (archive-index.c): outbox_archive_schema(),
 * outbox_archive_ensure_schema(). No state.
 */
#include <string.h>

#include "archive-private.h"
#include "error-private.h"
#include "outbox/archive.h"
#include "outbox/outbox.h"
#include "outbox/contract.h"
#include "schema-props-private.h"

#define ARCHIVE_TITLE "outbox archive contract"

/* The archived copy of each EVENT row of the event contract (contract.c): the event id is
 * the entry's _id. */
static const char *
archived_name(const outbox_contract_rule_t *r)
{
   return strcmp(r->name, "id") == 0 ? "_id" : r->name;
}

void
outbox_archive_schema(bson_t *validator)
{
   static const char *const entry_fields[] = {"collection", "entityId", "publishedAt"};
   const outbox_contract_rule_t *rules;
   size_t n = outbox_contract_rules(&rules);
   bson_t schema, props, required;
   uint32_t k = 0;
   char key[16];
   const char *kp;

   bson_init(validator);
   BSON_APPEND_DOCUMENT_BEGIN(validator, "$jsonSchema", &schema);
   BCON_APPEND(&schema, "title", ARCHIVE_TITLE, "description",
               "published events kept by outbox-relay --archive-collection", "bsonType", "object");
   /* What every published event has (the relay's accepted form: time may be missing), and
    * the entry's own fields. */
   BSON_APPEND_ARRAY_BEGIN(&schema, "required", &required);
   for (size_t i = 0; i < n; i++) {
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT && rules[i].accepted.required) {
         bson_uint32_to_string(k++, &kp, key, sizeof key);
         BSON_APPEND_UTF8(&required, kp, archived_name(&rules[i]));
      }
   }
   for (size_t i = 0; i < sizeof entry_fields / sizeof entry_fields[0]; i++) {
      bson_uint32_to_string(k++, &kp, key, sizeof key);
      BSON_APPEND_UTF8(&required, kp, entry_fields[i]);
   }
   bson_append_array_end(&schema, &required);
   BSON_APPEND_DOCUMENT_BEGIN(&schema, "properties", &props);
   for (size_t i = 0; i < n; i++) {
      if (rules[i].scope == OUTBOX_CONTRACT_EVENT) {
         _outbox_schema_rule_prop(&props, archived_name(&rules[i]), &rules[i], true, NULL);
      }
   }
   _outbox_schema_prop(&props, "collection", "string", "the outbox collection it came from");
   _outbox_schema_prop(&props, "partition", "int", "the relay group's partition of the entity");
   _outbox_schema_prop(&props, "publishedAt", "date",
                       "when the relay archived it, after the acknowledgement");
   _outbox_schema_prop(&props, "relay", "string", "the relay's name (its group's)");
   _outbox_schema_prop(&props, "member", "string",
                       "the group member that archived it (its instance id)");
   bson_append_document_end(&schema, &props);
   bson_append_document_end(validator, &schema);
}

/* collMod, or create when the collection does not exist yet (26 NamespaceNotFound); a create
 * that loses a race with another creator (48 NamespaceExists) falls back to collMod. */
static bool
install_validator(mongoc_collection_t *archive, bson_error_t *error)
{
   const char *name = mongoc_collection_get_name(archive);
   bson_t validator;
   bool ok = false;

   outbox_archive_schema(&validator);
   for (int attempt = 0; attempt < 3 && !ok; attempt++) {
      bool create = attempt == 1;
      bson_t *cmd = BCON_NEW(create ? "create" : "collMod", BCON_UTF8(name), "validator",
                             BCON_DOCUMENT(&validator), "validationLevel", "strict",
                             "validationAction", "error");
      ok = mongoc_collection_command_simple(archive, cmd, NULL, NULL, error);
      bson_destroy(cmd);
      if (!ok && !create && error->code != 26) {
         break;
      }
      if (!ok && create && error->code != 48) {
         break;
      }
   }
   bson_destroy(&validator);
   return ok;
}

bool
outbox_archive_ensure_schema(mongoc_collection_t *archive, const bson_t *opts, bson_error_t *error)
{
   int64_t ttl = 0;
   bson_iter_t it;
   bson_error_t local;

   /* install_validator() reads the code of a failure. */
   error = error ? error : &local;
   if (!archive) {
      _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT, "archive is NULL");
      return false;
   }
   if (opts && bson_iter_init(&it, opts)) {
      while (bson_iter_next(&it)) {
         /* Above INT32_MAX MongoDB refuses a TTL index (r6.0
          * src/mongo/db/catalog/index_key_validate.cpp, validateExpireAfterSeconds()). */
         if (strcmp(bson_iter_key(&it), "ttlSeconds") != 0 || !BSON_ITER_HOLDS_NUMBER(&it) ||
             bson_iter_as_int64(&it) < 0 || bson_iter_as_int64(&it) > INT32_MAX) {
            _outbox_set_error(error, OUTBOX_ERROR_INVALID_ARGUMENT,
                              "unknown or mistyped archive option \"%.64s\"", bson_iter_key(&it));
            return false;
         }
         ttl = bson_iter_as_int64(&it);
      }
   }
   if (!install_validator(archive, error)) {
      return false;
   }
   return _outbox_archive_ensure_indexes(archive, ttl, error);
}
