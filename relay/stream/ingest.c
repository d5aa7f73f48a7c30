/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Ingest's lifetime and what others may ask of it (ingest.h); the work is in changes.c and
 * sweep.c. Main thread only.
 */
#include "stream/ingest-private.h"

relay_ingest_t *
relay_ingest_new(const relay_config_t *cfg, relay_namespaces_t *ns, relay_metrics_t *metrics,
                 relay_table_t *table, const relay_ingest_owner_ops_t *owner, void *owner_ctx,
                 const relay_ingest_ops_t *ops, void *ctx)
{
   relay_ingest_t *in = bson_malloc0(sizeof *in);
   in->cfg = cfg;
   in->ns = ns;
   in->metrics = metrics;
   in->table = table;
   in->owner = owner;
   in->owner_ctx = owner_ctx;
   in->ops = ops;
   in->ctx = ctx;
   in->stream_gen = UINT64_MAX;
   return in;
}

int
relay_ingest_label(relay_ingest_t *in, int coll)
{
   relay_ns_t ns;
   return relay_namespaces_get(in->ns, coll, &ns) ? ns.label : 0;
}

void
relay_ingest_destroy(relay_ingest_t *in)
{
   if (!in) {
      return;
   }
   relay_changes_cleanup(in);
   bson_free(in);
}

void
relay_ingest_sweep(relay_ingest_t *in, int part)
{
   relay_sweep_request(in, part);
}

bool
relay_ingest_started(const relay_ingest_t *in)
{
   return in->started;
}

bool
relay_ingest_verifying(const relay_ingest_t *in)
{
   return in->verifying;
}

int64_t
relay_ingest_lag_ms(const relay_ingest_t *in)
{
   return in->stream_lag_ms;
}
