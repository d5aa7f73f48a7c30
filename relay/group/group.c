/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner (group.h): lease events into partition state and into what the stream
 * should do (returned as intents, applied by relay.c), and the checkpoint's validity per
 * partition, and the queries others may ask (owner.h). The gate, parking and draining are in
 * gate.c. Main thread only; its state is relay_group_t (owner-private.h).
 */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "group/group.h"
#include "group/owner-private.h"

#include "group/gate.h"
#include "group/hash.h"
#include "util/log.h"
#include "util/util.h"

static void
make_instance_id(relay_group_t *g)
{
   uint8_t rnd[4] = {0};
   char host[256] = "unknown";

   if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
      uint32_t t = (uint32_t)bson_get_monotonic_time() ^ ((uint32_t)getpid() << 16);
      memcpy(rnd, &t, sizeof rnd);
   }
   if (gethostname(host, sizeof host) != 0) {
      strcpy(host, "unknown");
   }
   host[sizeof host - 1] = '\0';
   bson_snprintf(g->suffix, sizeof g->suffix, "%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3]);
   bson_snprintf(g->instance_id, sizeof g->instance_id, "%s/%d/%s", host, (int)getpid(), g->suffix);
}

relay_group_t *
relay_group_new(const relay_config_t *cfg, relay_metrics_t *metrics, relay_table_t *table,
                const relay_group_ops_t *ops, void *ctx)
{
   relay_group_t *g = bson_malloc0(sizeof *g);
   g->cfg = cfg;
   g->metrics = metrics;
   g->table = table;
   g->ops = ops;
   g->ctx = ctx;
   g->n = cfg->partitions;
   g->parts = bson_malloc0(sizeof *g->parts * (size_t)g->n);
   g->eligible = true;
   make_instance_id(g);
   /* Members of a group must never share a client id: the broker would disconnect one
    * whenever the other connects. An explicit --client-id is used as given. */
   g->client_id = cfg->client_id_from_name ? bson_strdup_printf("%s-%s", cfg->client_id, g->suffix)
                                           : bson_strdup(cfg->client_id);
   return g;
}

void
relay_group_destroy(relay_group_t *g)
{
   if (!g) {
      return;
   }
   for (int p = 0; g->parts && p < g->n; p++) {
      bson_destroy(g->parts[p].token);
   }
   bson_free(g->parts);
   bson_free(g->client_id);
   bson_free(g);
}

void
relay_group_intents_cleanup(relay_group_intents_t *in)
{
   bson_destroy(in->token);
   in->token = NULL;
}

int
relay_group_part_of(const relay_group_t *g, const bson_value_t *id)
{
   return relay_partition_of(relay_hash_value(id), g->n);
}

bool
relay_group_fresh(const relay_group_t *g, int p)
{
   return g->parts[p].fresh;
}

bool
relay_group_takes(const relay_group_t *g, int p)
{
   const relay_part_t *part = &g->parts[p];
   return part->owned && !part->draining;
}

int
relay_group_partitions(const relay_group_t *g)
{
   return g->n;
}

const relay_partset_t *
relay_group_active(const relay_group_t *g)
{
   return &g->active;
}

bool
relay_group_server_filters(const relay_group_t *g)
{
   return g->probe > 0;
}

const char *
relay_group_instance_id(const relay_group_t *g)
{
   return g->instance_id;
}

const char *
relay_group_client_id(const relay_group_t *g)
{
   return g->client_id;
}

void
relay_group_stream_at(relay_group_t *g, const relay_ts_t *ts)
{
   if (g->n_fresh_done == 0 || (ts && relay_ts_cmp(*ts, g->fresh_min) <= 0)) {
      return;
   }
   g->n_fresh_done = 0;
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      if (part->fresh && part->sweep_done) {
         if (!ts || relay_ts_cmp(*ts, part->fresh_until) > 0) {
            part->fresh = false;
         } else if (g->n_fresh_done++ == 0 || relay_ts_cmp(part->fresh_until, g->fresh_min) < 0) {
            g->fresh_min = part->fresh_until;
         }
      }
   }
}

void
relay_group_valid_after(relay_group_t *g, const relay_partset_t *parts, const relay_pos_t *marker)
{
   for (int p = 0; p < g->n; p++) {
      if (relay_partset_has(parts, p)) {
         g->parts[p].marker_seq = marker->seq;
         g->parts[p].sweep_done = false;
      }
   }
}

void
relay_group_sweep_began(relay_group_t *g, const relay_partset_t *parts, const relay_pos_t *marker)
{
   relay_group_valid_after(g, parts, marker);
   /* Fresh again, not only when acquired: a sweep after the stream's history was lost reads
    * documents whose missed changes never come, while the new stream delivers later ones.
    * An entity the table does not know must be read (its missed events first), not taken
    * from such a change, which made them "not above the last seq" when the sweep got to
    * its document. */
   for (int p = 0; p < g->n; p++) {
      if (relay_partset_has(parts, p) && g->parts[p].owned) {
         g->parts[p].fresh = true;
      }
   }
}

void
relay_group_sweep_ended(relay_group_t *g, const relay_partset_t *parts, relay_ts_t ts)
{
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      if (relay_partset_has(parts, p) && part->owned && part->fresh && !part->sweep_done) {
         part->sweep_done = true;
         part->fresh_until = ts;
         if (g->n_fresh_done++ == 0 || relay_ts_cmp(ts, g->fresh_min) < 0) {
            g->fresh_min = ts;
         }
      }
   }
}

void
relay_group_checkpoint(relay_group_t *g, const bson_t *token)
{
   relay_partset_t valid;
   int64_t *epochs = bson_malloc0(sizeof(int64_t) * (size_t)g->n);

   relay_partset_clear(&valid);
   for (int p = 0; p < g->n; p++) {
      const relay_part_t *part = &g->parts[p];
      if (part->owned && !part->draining && g->table->checkpoint_seq > part->marker_seq) {
         relay_partset_add(&valid, p);
         epochs[p] = part->epoch;
      }
   }
   g->ops->checkpoint(g->ctx, token, &valid, epochs);
   bson_free(epochs);
}

/* Takes the oldest of the tokens the active partitions came with ("_data" strings order
 * like the stream), and the set of partitions that came without one. */
static const bson_t *
oldest_token(relay_group_t *g, relay_partset_t *without)
{
   const bson_t *oldest = NULL;
   const char *oldest_data = NULL;

   relay_partset_clear(without);
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      bson_iter_t it;
      const char *data;
      if (!relay_partset_has(&g->active, p)) {
         continue;
      }
      if (!part->token || !bson_iter_init_find(&it, part->token, "_data") ||
          !BSON_ITER_HOLDS_UTF8(&it)) {
         relay_partset_add(without, p);
         continue;
      }
      data = bson_iter_utf8(&it, NULL);
      if (!oldest || strcmp(data, oldest_data) < 0) {
         oldest = part->token;
         oldest_data = data;
      }
   }
   return oldest;
}

/* The stream starts for the active partitions: after the oldest of their tokens. */
static void
start_stream(relay_group_t *g, relay_group_intents_t *out)
{
   const bson_t *token = oldest_token(g, &out->unswept);

   out->stream = RELAY_STREAM_OPEN;
   out->filter = g->probe > 0 ? &g->active : NULL;
   out->token = token ? bson_copy(token) : NULL;
   g->streamed = g->active;
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      /* Resumed partitions: the replay after the token is verified (changes.c). */
      if (relay_partset_has(&g->active, p) && !relay_partset_has(&out->unswept, p) && token) {
         part->fresh = false;
      }
   }
   for (int p = 0; p < g->n; p++) {
      bson_destroy(g->parts[p].token);
      g->parts[p].token = NULL;
   }
}

/* After ownership changed: start, stop or refilter the stream. */
static void
update_stream(relay_group_t *g, int64_t now, bool started, relay_group_intents_t *out)
{
   bool empty = relay_partset_count(&g->active, g->n) == 0;

   if (empty) {
      if (started) {
         out->stream = RELAY_STREAM_CLOSE;
         relay_partset_clear(&g->streamed);
         relay_log(RELAY_LOG_INFO, "group", "standby: this member owns no partition");
      }
      return;
   }
   if (!started) {
      if (g->probe == 0 && now >= g->probe_retry_at_ms) {
         g->probe = g->ops->probe(g->ctx);
         if (g->probe == 0) {
            g->probe_retry_at_ms =
               now + relay_backoff_next(g->cfg->reconnect_min_ms, g->cfg->reconnect_max_ms,
                                        &g->probe_backoff_ms);
         }
      }
      if (g->probe != 0) {
         start_stream(g, out);
      }
      return;
   }
   if (g->probe > 0 && !relay_partset_equal(&g->active, &g->streamed)) {
      out->stream = RELAY_STREAM_REFILTER;
      out->filter = &g->active;
      g->streamed = g->active;
   }
}

static void
on_acquired(relay_group_t *g, relay_lease_event_t *ev, bool started, relay_group_intents_t *out)
{
   relay_part_t *part = &g->parts[ev->part];

   part->owned = true;
   part->draining = false;
   part->epoch = ev->epoch;
   part->fresh = true;
   part->sweep_done = false;
   part->marker_seq = UINT64_MAX; /* no token is valid before its sweep began */
   bson_destroy(part->token);
   part->token = ev->token;
   ev->token = NULL;
   relay_partset_add(&g->active, ev->part);
   if (started) {
      relay_partset_add(&out->sweep, ev->part);
   }
}

/* Applies the lease thread's events; true when the set the stream carries changed. */
static bool
take_events(relay_group_t *g, int64_t now, bool started, relay_group_intents_t *out)
{
   relay_lease_event_t *ev;
   bool changed = false;

   while ((ev = g->ops->pop(g->ctx))) {
      switch (ev->kind) {
      case RELAY_LEASE_ACQUIRED:
         on_acquired(g, ev, started, out);
         changed = true;
         break;
      case RELAY_LEASE_LOST:
         changed = relay_gate_lost(g, ev->part, ev->epoch) || changed;
         break;
      case RELAY_LEASE_HANDOFF:
         changed = relay_gate_drain(g, ev->part, ev->epoch, now) || changed;
         break;
      case RELAY_LEASE_FATAL:
         relay_log(RELAY_LOG_ERROR, "group", "%s", ev->message);
         out->fatal = true;
         out->exit_code = ev->code;
         break;
      }
      relay_lease_event_free(ev);
   }
   return changed;
}

void
relay_group_step(relay_group_t *g, int64_t now, bool started, bool mqtt_connected,
                 relay_group_intents_t *out)
{
   bool changed;

   memset(out, 0, sizeof *out);
   relay_partset_clear(&out->sweep);
   relay_partset_clear(&out->unswept);
   changed = take_events(g, now, started, out);
   relay_gate_finish_drains(g, now);
   if (changed || (!started && relay_partset_count(&g->active, g->n) > 0)) {
      update_stream(g, now, started, out);
   }
   relay_gate_unpark(g);
   relay_gate_eligibility(g, now, mqtt_connected);
   relay_metrics_set_role(g->metrics,
                          relay_partset_count(&g->active, g->n) > 0 ? "active" : "standby");
}
