/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Shared between the HTTP server (http.c) and the endpoint handlers (handlers.c).
 */
#ifndef CONTACTS_HTTP_PRIVATE_H
#define CONTACTS_HTTP_PRIVATE_H

#include <microhttpd.h>
#include <stdbool.h>

#include "http.h"

/* One request being answered. */
typedef struct {
   struct MHD_Connection *conn;
   repository_t *repo;
   const char *method;
   const char *url;
   const char *body; /* the upload, NUL-terminated; len bytes */
   size_t len;
} call_t;

/* Sends `body` (taken; may be NULL) with `status`, an ETag of `etag` when > 0 and a Location
 * when not NULL. */
enum MHD_Result
http_respond(call_t *call, unsigned status, bson_string_t *body, int64_t etag,
             const char *location);

/* Sends a JSON error {error: slug, message[, field]}; `etag` > 0 adds the current ETag. */
enum MHD_Result
http_fail(call_t *call, unsigned status, const char *slug, const char *field,
          const char *message, int64_t etag);

/* Answers a repository failure (404, 412, 503, 500). */
enum MHD_Result
http_fail_repo(call_t *call, repo_status_t status, int64_t version, const bson_error_t *error);

enum MHD_Result
handle_list(call_t *call);
enum MHD_Result
handle_create(call_t *call);
enum MHD_Result
handle_get(call_t *call, const char *id);
enum MHD_Result
handle_put(call_t *call, const char *id);
enum MHD_Result
handle_patch(call_t *call, const char *id);
enum MHD_Result
handle_delete(call_t *call, const char *id);

#endif /* CONTACTS_HTTP_PRIVATE_H */
