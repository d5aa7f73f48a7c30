/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Storage of contacts over liboutbox: one document per contact in `<db>.contacts`, keyed by
 * an ObjectId, with the events of each change appended in the same update (the
 * stored contract of outbox/collection.h). Thread-safe: one repository serves all HTTP threads.
 */
#ifndef CONTACTS_REPOSITORY_H
#define CONTACTS_REPOSITORY_H

#include <mongoc/mongoc.h>
#include <outbox/outbox.h>

#include "contact.h"

typedef enum {
   REPO_OK,
   REPO_NOT_FOUND,
   REPO_CONFLICT,    /* the version moved: *version holds the current one */
   REPO_BUSY,        /* too many unpublished events (relay down?): retry later */
   REPO_UNAVAILABLE, /* MongoDB cannot be reached */
   REPO_ERROR,       /* anything else; *error says what */
} repo_status_t;

typedef struct _repository_t repository_t;

/* The W3C trace context a change's events carry (outbox/trace.h): the span of the request
 * that made the change, so consumers continue the caller's trace. */
typedef struct {
   char traceparent[OUTBOX_TRACEPARENT_LEN + 1]; /* "" = none */
   const char *tracestate;                       /* NULL = none; valid W3C tracestate */
} repo_trace_t;

/* `pool` is borrowed and must outlive the repository. No I/O. */
repository_t *repository_new(mongoc_client_pool_t *pool, const char *db, bson_error_t *error);
void repository_destroy(repository_t *repo);
/* Creates the outbox index the relay's sweep uses. */
bool repository_ensure_indexes(repository_t *repo, bson_error_t *error);

/* True if `id` is a contact id: 24 hexadecimal characters (an ObjectId). */
bool repository_id_valid(const char *id);
/* Writes a fresh id (25 bytes with the NUL). */
void repository_new_id(char id[25]);

/* Stores a new contact with its pending events, which carry `trace` (NULL: no trace
 * context); *version receives 1. */
repo_status_t repository_add(repository_t *repo, const contact_t *c, const repo_trace_t *trace,
                             int64_t *version, bson_error_t *error);
/* Loads a contact (deleted ones too: the caller decides). *c is the caller's on REPO_OK. */
repo_status_t repository_get(repository_t *repo, const char *id, contact_t **c, int64_t *version,
                             bson_error_t *error);
/* Stores the contact's changes and pending events (carrying `trace`, as repository_add())
 * if the stored version is `*version`; on REPO_OK *version is the new version, on
 * REPO_CONFLICT the current one. A contact without changes is not written (*version stays). */
repo_status_t repository_save(repository_t *repo, const contact_t *c, const repo_trace_t *trace,
                              int64_t *version, bson_error_t *error);
/* Lists up to `limit` live contacts with ids greater than `after` (NULL: from the start), in
 * id order, so pages stay stable while contacts are added or deleted. *items (free each with
 * contact_destroy, then bson_free the array) and *n receive them; *more tells whether more
 * follow. */
repo_status_t repository_list(repository_t *repo, const char *after, int limit, contact_t ***items,
                              size_t *n, bool *more, bson_error_t *error);

#endif /* CONTACTS_REPOSITORY_H */
