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
   repo_trace_t trace; /* this request's span: the caller's trace continued, or a new one */
} call_t;

/* Tags an If-Match list may hold; more is refused (no client sends that many). */
#define IF_MATCH_MAX_TAGS 16

/* If-Match as RFC 9110 13.1.1 reads it: "*" or a list of entity tags. Strong comparison:
 * weak tags (W/"3") never match, nor do tags that are not one of our versions ("abc"). */
typedef struct {
   enum { IF_MATCH_MISSING, IF_MATCH_BAD, IF_MATCH_ANY, IF_MATCH_LIST } kind;
   int64_t versions[IF_MATCH_MAX_TAGS]; /* the strong tags that are versions */
   size_t n, n_tags;
} if_match_t;

/* Reads every If-Match field of the request (several lines make one list); a field that is
 * not "*" or a list of entity tags, or "*" next to tags, gives IF_MATCH_BAD. */
void if_match_read(struct MHD_Connection *conn, if_match_t *im);

/* Whether @im holds for a contact at @version: "*" always (it exists), a list when one of its
 * strong tags is the version. */
bool if_match_holds(const if_match_t *im, int64_t version);

/* Sends `body` (taken; may be NULL) with `status`, an ETag of `etag` when > 0 and a Location
 * when not NULL. */
enum MHD_Result http_respond(call_t *call, unsigned status, bson_string_t *body, int64_t etag,
                             const char *location);

/* Sends a JSON error {error: slug, message[, field]}; `etag` > 0 adds the current ETag. */
enum MHD_Result http_fail(call_t *call, unsigned status, const char *slug, const char *field,
                          const char *message, int64_t etag);

/* Answers a repository failure (404, 412, 503, 500). */
enum MHD_Result http_fail_repo(call_t *call, repo_status_t status, int64_t version,
                               const bson_error_t *error);

enum MHD_Result handle_list(call_t *call);
enum MHD_Result handle_create(call_t *call);
enum MHD_Result handle_get(call_t *call, const char *id);
enum MHD_Result handle_put(call_t *call, const char *id);
enum MHD_Result handle_patch(call_t *call, const char *id);
enum MHD_Result handle_delete(call_t *call, const char *id);

#endif /* CONTACTS_HTTP_PRIVATE_H */
