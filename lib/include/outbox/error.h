/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * liboutbox's errors: the bson_error_t domain and the codes of the errors the library raises
 * itself. Constants only, no state.
 *
 * ERRORS. Every function that can fail returns false (or NULL) and fills the bson_error_t
 * (which may be NULL). Errors found by this library use OUTBOX_ERROR_DOMAIN and the codes of
 * outbox_error_code_t; errors from mongoc and the server (network, authentication, write
 * concern ...) are passed through unchanged with mongoc's domains and codes, except that a
 * commit whose outcome is unknown (network error after sending, election during the write,
 * writeConcernError) fails with OUTBOX_ERROR_UNKNOWN_OUTCOME: retrying it with the same event
 * objects is safe. Any other failed call leaves the stored document exactly as it was (for the
 * non-commit writes, a network or write-concern error may or may not have applied the change,
 * as with any MongoDB write). Events are never half-written: all events of a call are stored
 * together with the change, or none is.
 */
#ifndef OUTBOX_ERROR_H
#define OUTBOX_ERROR_H

#include <bson/bson.h>

/* The bson_error_t domain of errors raised by liboutbox itself ("ob" in ASCII; far from
 * mongoc's and libbson's small domain numbers). */
#define OUTBOX_ERROR_DOMAIN 0x6f62

typedef enum {
   /* A NULL or malformed argument, an unsupported id type, an update that is not made of
    * update operators, an unknown option, invalid UTF-8 in fields or update. */
   OUTBOX_ERROR_INVALID_ARGUMENT = 1,
   /* The caller's fields or update touch _id or a bookkeeping field (version, eventSeq,
    * events, or their configured names), including dotted paths ("events.0") and $rename
    * targets. */
   OUTBOX_ERROR_RESERVED_FIELD,
   /* An event is invalid: bad type, header or data (the message names the event and why). */
   OUTBOX_ERROR_INVALID_EVENT,
   /* The entity's version is not the expected one. outbox_commit_t.version holds the
    * current version. */
   OUTBOX_ERROR_CONFLICT,
   /* No entity with that id. */
   OUTBOX_ERROR_NOT_FOUND,
   /* outbox_collection_create(): an entity with that id exists already. */
   OUTBOX_ERROR_ALREADY_EXISTS,
   /* The change would leave more than maxPendingEvents unpublished events in the entity
    * (the relay is behind or down). Nothing was written; retry later. */
   OUTBOX_ERROR_LIMIT_PENDING,
   /* The change would make the document larger than maxDocumentSize (or the server refused
    * it as too large). Nothing was written. */
   OUTBOX_ERROR_LIMIT_SIZE,
   /* outbox_collection_delete(): the entity still has pending events, which would be lost. */
   OUTBOX_ERROR_PENDING_EVENTS,
   /* OUTBOX_ANY_VERSION: the entity kept changing under us appendRetries times in a row. */
   OUTBOX_ERROR_RETRIES_EXHAUSTED,
   /* The stored document breaks the stored contract (e.g. version is not an integer). */
   OUTBOX_ERROR_MALFORMED_DOCUMENT,
   /* outbox_collection_ensure_schema(): the collection has a validator this library did not
    * install; it was left unchanged. */
   OUTBOX_ERROR_FOREIGN_VALIDATOR,
   /* A commit (create, update, append, soft delete) was sent but its outcome is unknown: the
    * connection was lost after sending, the primary stepped down during the write, or the
    * server applied it but reported a writeConcernError (e.g. 64, wtimeout), so it may still
    * be rolled back. The message names the original error. It may or may not be stored. Retry
    * with the SAME event objects: the retry first finds out whether this attempt was
    * stored ("Commit outcomes" in README.md says what each case returns). A commit known to
    * be stored is a success, one known not to be a plain failure: never this code. */
   OUTBOX_ERROR_UNKNOWN_OUTCOME,
   /* outbox_archive_ensure_schema(): an index of someone else's on the same key stands in
    * the way of one the archive needs (e.g. {publishedAt: 1} without the TTL asked for);
    * it was left alone and the other indexes were created. The message names it. */
   OUTBOX_ERROR_ARCHIVE_INDEX,
} outbox_error_code_t;

#endif /* OUTBOX_ERROR_H */
