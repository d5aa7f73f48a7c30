/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Lease events to stream, sweep and checkpoint changes (main thread). The gate, parking and
 * draining are in gate.c.
 */
#include <inttypes.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "group/gate.h"
#include "group/hash.h"
#include "relay-private.h"
#include "util/log.h"

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

bool
relay_group_init(relay_t *r, bson_error_t *error)
{
   relay_group_t *g = &r->group;
   const relay_config_t *cfg = r->cfg;

   g->n = cfg->partitions;
   g->parts = bson_malloc0(sizeof *g->parts * (size_t)g->n);
   g->eligible = true;
   make_instance_id(g);
   /* Members of a group must never share a client id: the broker would disconnect one
    * whenever the other connects. An explicit --client-id is used as given. */
   g->client_id = cfg->client_id_from_name ? bson_strdup_printf("%s-%s", cfg->client_id, g->suffix)
                                           : bson_strdup(cfg->client_id);
   return true;
}

static void
wake_main(void *ctx)
{
   relay_mqtt_wake(ctx);
}

static void
render_metrics(void *ctx, bson_string_t *out)
{
   relay_lease_render_metrics(ctx, out);
}

bool
relay_group_start(relay_t *r, bson_error_t *error)
{
   relay_group_t *g = &r->group;
   g->lease = relay_lease_new(r->cfg, g->instance_id, r->metrics, wake_main, r->mqtt, error);
   if (!g->lease) {
      return false;
   }
   relay_metrics_set_renderer(r->metrics, render_metrics, g->lease);
   relay_log(RELAY_LOG_INFO, "group", "member %s of group '%s' (%d partitions, lease %d ms)",
             g->instance_id, r->cfg->name, g->n, r->cfg->lease_ttl_ms);
   return true;
}

void
relay_group_cleanup(relay_t *r)
{
   relay_group_t *g = &r->group;
   relay_metrics_set_renderer(r->metrics, NULL, NULL);
   relay_lease_destroy(g->lease);
   g->lease = NULL;
   for (int p = 0; g->parts && p < g->n; p++) {
      bson_destroy(g->parts[p].token);
   }
   bson_free(g->parts);
   g->parts = NULL;
   bson_free(g->client_id);
   g->client_id = NULL;
}

int
relay_group_part_of(const relay_t *r, const bson_value_t *id)
{
   return relay_partition_of(relay_hash_value(id), r->group.n);
}

bool
relay_group_takes(const relay_t *r, int p)
{
   const relay_part_t *part = &r->group.parts[p];
   return part->owned && !part->draining;
}

bool
relay_group_fresh(const relay_t *r, int p)
{
   return r->group.parts[p].fresh;
}

void
relay_group_stream_at(relay_t *r, const relay_ts_t *ts)
{
   relay_group_t *g = &r->group;
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
relay_group_valid_after(relay_t *r, const relay_partset_t *parts, const relay_pos_t *marker)
{
   for (int p = 0; p < r->group.n; p++) {
      if (relay_partset_has(parts, p)) {
         r->group.parts[p].marker_seq = marker->seq;
         r->group.parts[p].sweep_done = false;
      }
   }
}

void
relay_group_sweep_began(relay_t *r, const relay_partset_t *parts, const relay_pos_t *marker)
{
   relay_group_valid_after(r, parts, marker);
   /* Fresh again, not only when acquired: a sweep after the stream's history was lost reads
    * documents whose missed changes never come, while the new stream delivers later ones.
    * An entity the table does not know must be read (its missed events first), not taken
    * from such a change, which made them "not above the last seq" when the sweep got to
    * its document. */
   for (int p = 0; p < r->group.n; p++) {
      if (relay_partset_has(parts, p) && r->group.parts[p].owned) {
         r->group.parts[p].fresh = true;
      }
   }
}

void
relay_group_sweep_ended(relay_t *r, const relay_partset_t *parts, relay_ts_t ts)
{
   relay_group_t *g = &r->group;
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
relay_group_checkpoint(relay_t *r, const bson_t *token)
{
   relay_group_t *g = &r->group;
   relay_partset_t valid;
   int64_t *epochs = bson_malloc0(sizeof(int64_t) * (size_t)g->n);

   relay_partset_clear(&valid);
   for (int p = 0; p < g->n; p++) {
      const relay_part_t *part = &g->parts[p];
      if (part->owned && !part->draining && r->table.checkpoint_seq > part->marker_seq) {
         relay_partset_add(&valid, p);
         epochs[p] = part->epoch;
      }
   }
   relay_lease_checkpoint(g->lease, token, &valid, epochs);
   bson_free(epochs);
}

/* The start-up probe: the server's $toHashedIndexKey of a few values of every checked _id
 * type (partition.h), compared with ours. 1: filter on the server; -1: filter here; 0: ask
 * again later (the server could not be asked). */
static int
probe(relay_t *r)
{
   static const char *const values[] = {
       "{\"$numberInt\": \"5\"}",
       "{\"$numberLong\": \"1099511627776\"}",
       "{\"$numberDouble\": \"-2.7\"}",
       "\"string to hash\"",
       "{\"a\": \"abc\", \"b\": [1, {\"c\": true}]}",
       "{\"$binary\": {\"base64\": \"AAECAwQFBgcICQoLDA0ODw==\", \"subType\": \"04\"}}",
       "{\"$binary\": {\"base64\": \"AAECAwQG\", \"subType\": \"00\"}}",
       "{\"$oid\": \"5b2be413c06d924ab26ff9ca\"}",
       "true",
       "{\"$date\": {\"$numberLong\": \"1700000000000\"}}"};
   bson_string_t *json =
       bson_string_new("{\"pipeline\": [{\"$limit\": 1}, {\"$project\": {\"_id\": 0");
   bson_t *pipeline;
   bson_error_t error;
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   int result = 1;
   size_t n = sizeof values / sizeof values[0];

   for (size_t i = 0; i < n; i++) {
      bson_string_append_printf(json, ", \"v%zu\": {\"$toHashedIndexKey\": {\"$literal\": %s}}", i,
                                values[i]);
   }
   bson_string_append(json, "}}]}");
   pipeline = bson_new_from_json((const uint8_t *)json->str, -1, &error);
   BSON_ASSERT(pipeline);
   cursor = mongoc_collection_aggregate(r->state, MONGOC_QUERY_NONE, pipeline, NULL, NULL);
   if (mongoc_cursor_next(cursor, &doc)) {
      bson_iter_t got, want;
      bson_iter_init(&got, doc);
      bson_iter_init(&want, pipeline);
      for (size_t i = 0; i < n && result == 1; i++) {
         char path[64];
         bson_snprintf(path, sizeof path, "pipeline.1.$project.v%zu.$toHashedIndexKey.$literal", i);
         if (!bson_iter_init(&want, pipeline) || !bson_iter_find_descendant(&want, path, &want) ||
             !bson_iter_next(&got) || !BSON_ITER_HOLDS_INT64(&got) ||
             bson_iter_int64(&got) != relay_hash_iter(&want)) {
            relay_log(RELAY_LOG_WARNING, "group",
                      "the server's $toHashedIndexKey differs from the relay's for %s: partitions "
                      "are filtered in the relay",
                      values[i]);
            result = -1;
         }
      }
   } else if (mongoc_cursor_error(cursor, &error)) {
      bool network =
          error.domain == MONGOC_ERROR_STREAM || error.domain == MONGOC_ERROR_SERVER_SELECTION;
      if (network) {
         result = 0;
      } else {
         relay_log(RELAY_LOG_INFO, "group",
                   "the server cannot compute $toHashedIndexKey (%s): partitions are filtered in "
                   "the relay",
                   error.message);
         result = -1;
      }
   } else {
      result = 0; /* nothing to run it on yet */
   }
   if (result == 1) {
      relay_log(RELAY_LOG_INFO, "group", "the server filters partitions ($toHashedIndexKey)");
   }
   mongoc_cursor_destroy(cursor);
   bson_destroy(pipeline);
   bson_string_free(json, true);
   return result;
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

static void
start_stream(relay_t *r)
{
   relay_group_t *g = &r->group;
   relay_partset_t without;
   const bson_t *token = oldest_token(g, &without);

   relay_reader_set_partitions(r->reader, g->probe > 0 ? &g->active : NULL, g->n);
   g->streamed = g->active;
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      /* Resumed partitions: the replay after the token is verified (changes.c). */
      if (relay_partset_has(&g->active, p) && !relay_partset_has(&without, p) && token) {
         part->fresh = false;
      }
   }
   relay_changes_open(r, token, &without);
   for (int p = 0; p < g->n; p++) {
      bson_destroy(g->parts[p].token);
      g->parts[p].token = NULL;
   }
}

static void
go_standby(relay_t *r)
{
   relay_changes_close(r);
   relay_partset_clear(&r->group.streamed);
   relay_log(RELAY_LOG_INFO, "group", "standby: this member owns no partition");
}

/* After ownership changed: start, stop or refilter the stream. */
static void
update_stream(relay_t *r, int64_t now)
{
   relay_group_t *g = &r->group;
   bool empty = relay_partset_count(&g->active, g->n) == 0;

   if (empty) {
      if (r->started) {
         go_standby(r);
      }
      return;
   }
   if (!r->started) {
      if (g->probe == 0 && now >= g->probe_retry_at_ms) {
         g->probe = probe(r);
         if (g->probe == 0) {
            g->probe_retry_at_ms = now + relay_backoff_next(r->cfg, &g->probe_backoff_ms);
         }
      }
      if (g->probe != 0) {
         start_stream(r);
      }
      return;
   }
   if (g->probe > 0 && !relay_partset_equal(&g->active, &g->streamed)) {
      relay_reader_set_partitions(r->reader, &g->active, g->n);
      relay_reader_reopen(r->reader);
      g->streamed = g->active;
   }
}

static void
on_acquired(relay_t *r, relay_lease_event_t *ev)
{
   relay_group_t *g = &r->group;
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
   if (r->started) {
      relay_sweep_request(r, ev->part);
   }
}

void
relay_group_step(relay_t *r, int64_t now)
{
   relay_group_t *g = &r->group;
   relay_lease_event_t *ev;
   bool changed = false;

   while ((ev = relay_lease_pop(g->lease))) {
      switch (ev->kind) {
      case RELAY_LEASE_ACQUIRED:
         on_acquired(r, ev);
         changed = true;
         break;
      case RELAY_LEASE_LOST:
         changed = relay_gate_lost(r, ev->part, ev->epoch) || changed;
         break;
      case RELAY_LEASE_HANDOFF:
         changed = relay_gate_drain(r, ev->part, ev->epoch, now) || changed;
         break;
      case RELAY_LEASE_FATAL:
         relay_log(RELAY_LOG_ERROR, "group", "%s", ev->message);
         r->exit_code = ev->code;
         g->fatal = true;
         break;
      }
      relay_lease_event_free(ev);
   }
   relay_gate_finish_drains(r, now);
   if (changed || (!r->started && relay_partset_count(&g->active, g->n) > 0)) {
      update_stream(r, now);
   }
   relay_gate_unpark(r);
   relay_gate_eligibility(r, now);
   relay_metrics_set_role(r->metrics,
                          relay_partset_count(&g->active, g->n) > 0 ? "active" : "standby");
}

void
relay_group_shutdown(relay_t *r)
{
   relay_lease_shutdown(r->group.lease, 5000);
}
