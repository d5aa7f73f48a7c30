/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Catching up from outbox-relay's archive (--archive-collection) when the consumer is new, so
 * that it starts with every contact event ever published, not only those published after it
 * subscribed. The sequence (relay/README.md, "The archive and replay"):
 *   1. subscribe to the live topic and hold its messages (main.c does not take them yet; the
 *      broker keeps them for the persistent session);
 *   2. wait until no event committed before the subscription is still pending in the outbox
 *      collection: the relay archives before it clears, so all of them are archived then;
 *   3. apply the archive up to the subscription time plus a margin for writers' clocks, in
 *      seq order per contact (liboutbox's outbox_archive_find());
 *   4. then the held live messages and everything after: the inbox drops every event it has
 *      applied already, so the overlap between the archive and the live topic counts once.
 */
#ifndef CONSUMER_BOOTSTRAP_H
#define CONSUMER_BOOTSTRAP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <mongoc/mongoc.h>

#include "directory.h"

typedef struct {
   const char *archive;    /* the relay's --archive-collection */
   const char *outbox_db;  /* the relay's --database */
   const char *collection; /* the outbox collection of the contacts (default "contacts") */
} bootstrap_opts_t;

/* Runs steps 2 and 3 for a consumer that subscribed at @subscribed_ms (ms since the epoch).
 * Stops early when *@stop becomes non-zero. Returns false with @error on a MongoDB error;
 * *@applied counts the archived events handed to the directory. */
bool bootstrap_from_archive(directory_t *dir, mongoc_client_pool_t *pool, const bootstrap_opts_t *o,
                            int64_t subscribed_ms, volatile sig_atomic_t *stop, int64_t *applied,
                            bson_error_t *error);

#endif /* CONSUMER_BOOTSTRAP_H */
