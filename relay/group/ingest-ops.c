/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner as ingest sees it (relay_group_ingest_ops, stream/ingest.h's owner
 * ops): each entry calls the partition owner's query or notice of the same name on the
 * relay_group_t it is given as context. So stream/ needs nothing of group/, and relay.c and the
 * unit tests hand ingest the same table. No state of its own; main thread only, like the partition
 * owner.
 */
#include "group/group.h"

static bool
takes(void *ctx, int part)
{
   return relay_group_takes(ctx, part);
}

static bool
fresh(void *ctx, int part)
{
   return relay_group_fresh(ctx, part);
}

static int
part_of(void *ctx, const bson_value_t *id)
{
   return relay_group_part_of(ctx, id);
}

static int
partitions(void *ctx)
{
   return relay_group_partitions(ctx);
}

static const relay_partset_t *
active(void *ctx)
{
   return relay_group_active(ctx);
}

static bool
server_filters(void *ctx)
{
   return relay_group_server_filters(ctx);
}

static void
stream_at(void *ctx, const relay_ts_t *ts)
{
   relay_group_stream_at(ctx, ts);
}

static void
valid_after(void *ctx, const relay_partset_t *parts, const relay_pos_t *marker)
{
   relay_group_valid_after(ctx, parts, marker);
}

static void
sweep_began(void *ctx, const relay_partset_t *parts, const relay_pos_t *marker)
{
   relay_group_sweep_began(ctx, parts, marker);
}

static void
sweep_ended(void *ctx, const relay_partset_t *parts, relay_ts_t ts)
{
   relay_group_sweep_ended(ctx, parts, ts);
}

const relay_ingest_owner_ops_t relay_group_ingest_ops = {
   .takes = takes,
   .fresh = fresh,
   .part_of = part_of,
   .partitions = partitions,
   .active = active,
   .server_filters = server_filters,
   .stream_at = stream_at,
   .valid_after = valid_after,
   .sweep_began = sweep_began,
   .sweep_ended = sweep_ended,
};
