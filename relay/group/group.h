/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner (group.c and gate.c): which partitions this member may publish, and
 * what it does when that changes. The lease thread (lease.h) decides ownership and says so in
 * events; here they turn into stream and sweep changes and into the table: an acquired
 * partition is swept and its entities are read from their documents until that sweep is
 * behind the stream ("fresh"); a lost or handed-over partition's queued events are dropped
 * (they stay pending in their documents for the new owner), its acknowledged ones are still
 * cleared. Before every publish the entity's partition must be owned, not draining, and
 * inside its lease deadline (the gate); otherwise the entity is parked until it is.
 *
 * Checkpoints: the table's checkpoint candidate (a stream position) is valid for partition p
 * only once the FIFO passed p's acquisition marker (the position pushed when its sweep
 * began: everything swept hangs on it), so a token saved in p's lease never claims events
 * of p that were not done.
 *
 * The partition owner never calls into the stream or the sweeps: its step returns what it
 * wants done (relay_group_intents_t: open, refilter or close the stream, sweep partitions,
 * stop) and relay.c applies it. It reaches the lease thread and the server only through the
 * ops it is handed (relay_group_ops_t), so a unit test runs it with fakes. It changes the
 * table it is given (dropping a lost partition's events, parking and unparking).
 *
 * Its state is opaque outside relay/group/ (owner.h has the handle and the queries).
 * Main thread only; relay.c owns the handle.
 */
#ifndef RELAY_GROUP_H
#define RELAY_GROUP_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

#include "group/gate.h"
#include "group/owner.h"
#include "store/store.h"
#include "stream/ingest.h"
#include "stream/table.h"

/* What the stream should do after a step. */
typedef enum {
   RELAY_STREAM_KEEP = 0,
   RELAY_STREAM_OPEN,     /* start it: after @token, sweeping @unswept (no token: full sweep) */
   RELAY_STREAM_REFILTER, /* reopen it with the server-side filter @filter */
   RELAY_STREAM_CLOSE,    /* stop it: this member owns nothing (standby) */
} relay_stream_wish_t;

/* What a step asks of relay.c, in the order it applies them: sweeps, then the stream. */
typedef struct {
   relay_partset_t sweep; /* acquired while the stream runs: sweep these */
   relay_stream_wish_t stream;
   const relay_partset_t *filter; /* OPEN, REFILTER: the server-side filter (NULL: none) */
   bson_t *token;                 /* OPEN: resume after it (owned here; NULL: full sweep) */
   relay_partset_t unswept;       /* OPEN: partitions that came without a checkpoint */
   bool fatal;                    /* this process cannot join its group: stop ... */
   int exit_code;                 /* ... with this <sysexits.h> status */
} relay_group_intents_t;

/* Frees what @in owns (NULL-safe fields). */
void relay_group_intents_cleanup(relay_group_intents_t *in);

/* Makes the partition owner, owning nothing yet, with its instance id and MQTT client id.
 * Everything is borrowed and must outlive it; @metrics may be NULL. */
relay_group_t *relay_group_new(const relay_config_t *cfg, relay_metrics_t *metrics,
                               relay_table_t *table, const relay_group_ops_t *ops, void *ctx);
/* NULL-safe. */
void relay_group_destroy(relay_group_t *g);

/* One turn of the main loop: lease events, drains, the parked, eligibility (@mqtt_connected);
 * @started: whether the stream runs now. Fills @out (relay_group_intents_cleanup() it). */
void relay_group_step(relay_group_t *g, int64_t now, bool started, bool mqtt_connected,
                      relay_group_intents_t *out);

/* The stream reached @ts (a change's clusterTime), or caught up (@ts NULL): partitions whose
 * sweep ended before it are not fresh any more. */
void relay_group_stream_at(relay_group_t *g, const relay_ts_t *ts);

/* Hands the checkpoint candidate @token to the lease thread for the partitions it is valid
 * for. */
void relay_group_checkpoint(relay_group_t *g, const bson_t *token);

/* The stream starts at marker @marker for @parts: their tokens become valid past it. */
void relay_group_valid_after(relay_group_t *g, const relay_partset_t *parts,
                             const relay_pos_t *marker);

/* A sweep of @parts began at marker @marker: relay_group_valid_after(), and they are fresh
 * until the stream passes the time the sweep ends (relay_group_sweep_ended()). */
void relay_group_sweep_began(relay_group_t *g, const relay_partset_t *parts,
                             const relay_pos_t *marker);

/* The sweep of @parts ended; the server's time then was @ts. */
void relay_group_sweep_ended(relay_group_t *g, const relay_partset_t *parts, relay_ts_t ts);

/* The partition owner as ingest sees it (stream/ingest.h), the context being the relay_group_t:
 * group/ingest-ops.c. */
extern const relay_ingest_owner_ops_t relay_group_ingest_ops;

#endif /* RELAY_GROUP_H */
