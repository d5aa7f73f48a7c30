/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The TTL monitor: like mongod's, a background pass every `interval` seconds (mongod: 60)
 * deletes documents whose TTL-indexed date is older than expireAfterSeconds. Deletions are
 * logged, so change streams see them.
 */
#ifndef MD_TTL_H
#define MD_TTL_H

#include "net/server.h"

/* Deletes expired documents now; returns how many. Caller holds the server lock. */
size_t md_ttl_pass(md_server_t *srv);

/* Starts/stops the monitor thread (interval <= 0: no thread). */
void md_ttl_start(md_server_t *srv);
void md_ttl_stop(md_server_t *srv);

#endif
