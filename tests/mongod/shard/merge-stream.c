/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 * (placeholder, replaced below)
 */
#include "shard/router-private.h"

bool
md_mstream_open(md_router_t *r, const bson_t *cmd, bson_t *reply)
{
   (void) cmd;
   return md_router_error(r, reply, 20, "$changeStream through mongos: not yet");
}

bool
md_mstream_get_more(md_router_t *r, const bson_t *cmd, int64_t id, bson_t *reply)
{
   (void) r; (void) cmd; (void) id; (void) reply;
   return false;
}

bool
md_mstream_kill(md_router_t *r, int64_t id)
{
   (void) r; (void) id;
   return false;
}

void
md_mstream_destroy_all(md_router_t *r)
{
   (void) r;
}
