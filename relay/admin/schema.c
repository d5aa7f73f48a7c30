/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * `ensure-schema`: installs (or with --print shows) the stored contract as each collection's
 * $jsonSchema validator, through liboutbox's outbox_collection_ensure_schema(), with the
 * relay's field names. A validator someone else installed is never dropped: the command fails
 * unless --combine asks for {$and: [theirs, ours]}.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include <string.h>
#include <sysexits.h>

#include "admin/admin.h"

static bson_t *
schema_opts(const admin_t *a)
{
   bson_t *opts =
      BCON_NEW("validationAction", BCON_UTF8(a->validation_action ? a->validation_action : "error"),
               "validationLevel", BCON_UTF8(a->validation_level ? a->validation_level : "moderate"),
               "combine", BCON_BOOL(a->combine));
   return opts;
}

static int
one(admin_t *a, const char *name, const bson_t *opts)
{
   outbox_collection_t *c = admin_collection(a, name);
   bson_error_t error;
   int rc = EX_OK;

   if (!c) {
      return EX_CONFIG;
   }
   /* The options first, without the server: a bad --validation-action is a usage error;
    * what the server's side refuses afterwards (the collection is a view) is not. */
   bson_t validator;
   bool valid = outbox_collection_schema(c, opts, &validator, &error);
   if (!valid) {
      fprintf(stderr, "outbox-admin: %s: %s\n", name, error.message);
      rc = EX_USAGE;
   } else if (a->print) {
      admin_print_json(a->out, &validator);
   } else if (outbox_collection_ensure_schema(c, opts, &error)) {
      fprintf(a->out, "%s: the stored contract is the validator (action %s, level %s)\n", name,
              a->validation_action ? a->validation_action : "error",
              a->validation_level ? a->validation_level : "moderate");
   } else if (error.domain == OUTBOX_ERROR_DOMAIN && error.code == OUTBOX_ERROR_FOREIGN_VALIDATOR) {
      fprintf(stderr, "outbox-admin: %s: %s (left unchanged; --combine keeps it beside ours)\n",
              name, error.message);
      rc = EX_DATAERR;
   } else if (error.domain == OUTBOX_ERROR_DOMAIN) {
      fprintf(stderr,
              "outbox-admin: %s: %s: the configured collection cannot hold the stored "
              "contract\n",
              name, error.message);
      rc = EX_CONFIG;
   } else {
      rc = admin_fail(name, &error);
   }
   bson_destroy(&validator);
   outbox_collection_destroy(c);
   return rc;
}

int
admin_ensure_schema(admin_t *a)
{
   bson_t *opts = schema_opts(a);
   int rc = EX_OK;

   if (a->n_targets == 0) {
      fprintf(stderr, "outbox-admin: no collection: give --collection (or the relay's config)\n");
      rc = EX_USAGE;
   }
   for (size_t i = 0; i < a->n_targets && rc == EX_OK; i++) {
      rc = one(a, a->targets[i].label, opts);
   }
   if (rc == EX_OK && a->cfg.archive_collection) {
      rc = admin_ensure_archive(a);
   }
   bson_destroy(opts);
   return rc;
}
