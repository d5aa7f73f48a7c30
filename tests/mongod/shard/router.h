/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * --mongos: turns a server into a router in front of in-process shards, as a MongoDB 6.0
 * sharded cluster looks to a driver through mongos. main.c attaches it before listening and
 * detaches it after the last connection ended; nothing else touches the router's state.
 */
#ifndef MD_ROUTER_H
#define MD_ROUTER_H

#include "net/server.h"

/* Creates opts.shards shards and routes every command of `front` through them. */
void md_router_attach(md_server_t *front);
/* Stops the shards' no-op writer and frees the shards (NULL-safe, no-op without a router). */
void md_router_detach(md_server_t *front);

#endif
