/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's schema: the stored contract of outbox/collection.h as a MongoDB $jsonSchema
 * validator, so that the server refuses writes that break it, whoever sends them. Stateless
 * apart from the collection's options on the server; thread-safe.
 */
#ifndef OUTBOX_SCHEMA_H
#define OUTBOX_SCHEMA_H

#include <bson/bson.h>

#include "outbox/collection.h"
#include "outbox/outbox-macros.h"

OUTBOX_BEGIN_DECLS

/* Installs the stored contract as the collection's validator, so that MongoDB refuses any
 * write (from this library, another language, a shell) that would leave a document breaking
 * it, with error 121 DocumentValidationFailure and an errInfo naming the rule. The validator
 * is a $jsonSchema titled "outbox stored contract" (see outbox_collection_schema()) that
 * checks the bookkeeping fields under their configured names:
 *   version and eventSeq   required, Int64, version >= 1, eventSeq >= 0. Every document of an
 *                          outbox collection is an entity this library can change, and it
 *                          always writes both; insert entities without them elsewhere;
 *   events (if present)    an array of documents with id (lowercase UUID v4 string), seq
 *                          (Int64 >= 1), type (1..128 of [A-Za-z0-9._-]), time (Date) and
 *                          data (document) required, headers (document of strings) optional;
 *   deadLetters (if present, the relay's --dead-letters-field) an array of documents.
 * Business fields, _id and deletedField are not checked. The relay's own writes (clearing
 * published events, moving an event to the dead letters) keep documents valid.
 *
 * `opts` (may be NULL), read during the call:
 *   validationAction  "error" (default): refuse; "warn": accept and have the server log it;
 *   validationLevel   "moderate" (default): check inserts and updates of documents that
 *                     satisfy the contract; documents that broke it before (written without
 *                     the validator) stay writable, so the relay can still clear and
 *                     dead-letter their events; "strict": check every write;
 *   deadLettersField  string, default the collection's deadLettersField;
 *   combine           bool, default false: see below.
 * If the collection does not exist it is created with the validator. If it has no validator
 * or ours (any version, any field names), the validator, level and action are set with
 * collMod, which is skipped when they are already as asked (so calling this at every start-up
 * costs one listCollections). A validator installed by someone else is never dropped: the call
 * fails with OUTBOX_ERROR_FOREIGN_VALIDATOR and changes nothing, unless `combine` is true, in
 * which case {$and: [their validator, ours]} is installed (the level and action then apply to
 * both); a later call replaces only our part of such a $and. Errors from the server (e.g. a
 * user without the collMod or listCollections privilege: 13 Unauthorized) are passed through.
 * Documents already stored are not checked. Thread-safe. */
OUTBOX_API bool outbox_collection_ensure_schema(outbox_collection_t *collection, const bson_t *opts,
                                                bson_error_t *error);

/* The validator outbox_collection_ensure_schema() installs with the same `opts`
 * ({$jsonSchema: {...}}), e.g. for an admin tool to print or install it. `validator` is always
 * initialised by the callee and must be freed with bson_destroy(); it is empty when the call
 * fails (OUTBOX_ERROR_INVALID_ARGUMENT on a bad option). No I/O. Thread-safe. */
OUTBOX_API bool outbox_collection_schema(const outbox_collection_t *collection, const bson_t *opts,
                                         bson_t *validator, bson_error_t *error);

OUTBOX_END_DECLS

#endif /* OUTBOX_SCHEMA_H */
