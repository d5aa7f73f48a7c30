/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Collection validators as MongoDB 6.0 applies them: `validator` (query operators and
 * $jsonSchema), `validationLevel` (strict | moderate | off) and `validationAction`
 * (error | warn), set by create and collMod and kept in the collection's options. Every
 * insert, update, replacement and upsert passes md_validator_check once, from write.c; the
 * command's bypassDocumentValidation skips it. Called with the server lock held.
 */
#ifndef MD_VALIDATOR_H
#define MD_VALIDATOR_H

#include "data/dataset.h"

/* Checks the validation fields of a create or collMod command (`cmd_name` names it in
 * messages): validator a document that parses (its error code, "Parsing of collection
 * validator failed :: caused by :: ..."), validationLevel and validationAction known values
 * (2 otherwise). */
bool md_validator_check_options(const bson_t *cmd, const char *cmd_name, bson_error_t *error);

/* (Re)builds coll->validator from coll->options (none when absent or {}). The options must
 * have passed md_validator_check_options. */
void md_validator_install(md_coll_t *coll);

/* Decides whether writing `doc` (the new version of a document; `old` is the version it
 * replaces, NULL for an insert) is allowed. On refusal: error 121 "Document failed
 * validation" and, if `details` is not NULL, errInfo appended to it ({failingDocumentId,
 * details}). With validationAction "warn" the write is allowed and a warning logged;
 * validationLevel "moderate" does not check updates of documents that already failed. */
bool md_validator_check(md_dataset_t *ds, md_coll_t *coll, const bson_t *old, const bson_t *doc,
                        bson_t *details, bson_error_t *error);

#endif
