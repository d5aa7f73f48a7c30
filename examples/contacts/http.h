/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The contacts REST API over libmicrohttpd:
 *   POST   /contacts                  201 + Location + ETag, 400, 413, 415
 *   GET    /contacts?pageSize=N&continuationToken=T   200 {items, continuationToken}, 400
 *   GET    /contacts/{id}             200 + ETag, 400 (bad id), 404
 *   PUT    /contacts/{id}  If-Match   200 + ETag, 400, 404, 412, 428
 *   PATCH  /contacts/{id}  If-Match   like PUT, with a JSON merge patch (RFC 7396) as body
 *   DELETE /contacts/{id}  If-Match   204, 400, 404, 412, 428
 *   GET    /healthz                   200
 * ETags are the contact's version ("3"). Errors are JSON: {error, message[, field]}.
 */
#ifndef CONTACTS_HTTP_H
#define CONTACTS_HTTP_H

#include <stdint.h>

#include "repository.h"

/* Largest accepted request body: a contact is far smaller. */
#define HTTP_MAX_BODY (64 * 1024)

typedef struct _http_server_t http_server_t;

/* Starts serving on `listen` ("HOST:PORT"; port 0 picks a free one) with its own threads.
 * `repo` is borrowed and must outlive the server. *port receives the bound port. Returns NULL
 * with a message in `err` on failure. */
http_server_t *http_server_start(repository_t *repo, const char *listen, uint16_t *port, char *err,
                                 size_t errlen);

/* Stops serving (waits for requests in progress) and frees the server. NULL is allowed. */
void http_server_stop(http_server_t *server);

#endif /* CONTACTS_HTTP_H */
