/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The partition owner's gate (gate.h). Main thread only: the table and the partitions'
 * parked lists are the main thread's. The gate is checked right before each publish is handed to
 * paho; what can still slip through after a lease is lost is only what was handed over before its
 * deadline (at most the in-flight window), each a duplicate or a first delivery still in order
 * (relay/README.md, "Running several relays").
 */
#include "group/gate.h"
#include "group/owner-private.h"

#include "util/log.h"

bool
relay_gate_admit(relay_group_t *g, relay_entity_t *e)
{
   relay_part_t *part = &g->parts[e->part];
   bool listed = e->parked;
   if (relay_group_takes(g, e->part) && g->ops->may_publish(g->ctx, e->part)) {
      return true;
   }
   relay_table_park(g->table, e);
   /* A parked entity is offered again when a new event of it comes (the table queues it
    * as ready): it is on the list already. Pushed a second time, it would link back to the
    * head and cut off the entities behind it, which would stay parked, never offered again,
    * their events pending with nothing left to publish them (FINDINGS.md F14). */
   if (!listed) {
      e->pnext = part->parked;
      part->parked = e;
   }
   return false;
}

bool
relay_gate_keep_failed(relay_group_t *g, relay_entity_t *e)
{
   if (relay_group_takes(g, e->part)) {
      return true;
   }
   relay_table_drop_inflight(g->table, e);
   relay_table_forget_if_idle(g->table, e);
   return false;
}

/* Takes every entity of @p off its parked list, without offering it. */
static void
unlist_parked(relay_part_t *part)
{
   relay_entity_t *e = part->parked;
   while (e) {
      relay_entity_t *next = e->pnext;
      e->parked = false;
      e->pnext = NULL;
      e = next;
   }
   part->parked = NULL;
}

/* The partition went to another member: its queued events are dropped (they stay pending in
 * their documents); acknowledged ones are still cleared, the in-flight ones end as they end. */
static void
drop_partition(relay_group_t *g, int p)
{
   size_t dropped;

   unlist_parked(&g->parts[p]);
   dropped = relay_table_drop_partition(g->table, p);
   if (dropped > 0) {
      relay_log(RELAY_LOG_DEBUG, "group",
                "partition %d: %zu queued events dropped (pending for the new owner)", p, dropped);
   }
}

bool
relay_gate_lost(relay_group_t *g, int p, int64_t epoch)
{
   relay_part_t *part = &g->parts[p];

   if (!part->owned || part->epoch != epoch) {
      return false;
   }
   if (part->draining) {
      g->n_draining--;
   }
   part->owned = part->draining = part->fresh = false;
   bson_destroy(part->token);
   part->token = NULL;
   relay_partset_remove(&g->active, p);
   drop_partition(g, p);
   return true;
}

bool
relay_gate_drain(relay_group_t *g, int p, int64_t epoch, int64_t now)
{
   relay_part_t *part = &g->parts[p];

   if (!part->owned || part->epoch != epoch || part->draining) {
      return false;
   }
   part->draining = true;
   part->drain_started_ms = now;
   g->n_draining++;
   relay_partset_remove(&g->active, p);
   drop_partition(g, p);
   return true;
}

void
relay_gate_finish_drains(relay_group_t *g, int64_t now)
{
   bool *busy;

   if (g->n_draining == 0 || now - g->drain_check_ms < 50) {
      return;
   }
   g->drain_check_ms = now;
   busy = bson_malloc0(sizeof(bool) * (size_t)g->n);
   relay_table_find_busy(g->table, busy);
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      bool late = now - part->drain_started_ms > g->cfg->lease_ttl_ms;
      if (!part->draining || (busy[p] && !late)) {
         continue;
      }
      if (busy[p]) {
         relay_log(RELAY_LOG_WARNING, "group",
                   "partition %d: still busy after draining for a lease time; handing it over "
                   "(what is in flight may be published twice)",
                   p);
      }
      part->draining = part->owned = part->fresh = false;
      g->n_draining--;
      g->ops->drained(g->ctx, p, part->epoch);
   }
   bson_free(busy);
}

void
relay_gate_unpark(relay_group_t *g)
{
   for (int p = 0; p < g->n; p++) {
      relay_part_t *part = &g->parts[p];
      relay_entity_t *e;
      if (!part->parked || !part->owned || part->draining || !g->ops->may_publish(g->ctx, p)) {
         continue;
      }
      e = part->parked;
      part->parked = NULL;
      while (e) {
         relay_entity_t *next = e->pnext;
         e->pnext = NULL;
         relay_table_unpark(g->table, e);
         e = next;
      }
   }
}

void
relay_gate_eligibility(relay_group_t *g, int64_t now, bool mqtt_connected)
{
   bool eligible;

   if (mqtt_connected) {
      g->mqtt_down_since_ms = 0;
   } else if (g->mqtt_down_since_ms == 0) {
      g->mqtt_down_since_ms = now;
   }
   eligible = g->mqtt_down_since_ms == 0 || now - g->mqtt_down_since_ms <= g->cfg->lease_ttl_ms;
   if (eligible != g->eligible) {
      g->eligible = eligible;
      relay_log(eligible ? RELAY_LOG_INFO : RELAY_LOG_WARNING, "group",
                eligible ? "connected to the broker again: taking a share of the partitions"
                         : "the broker has been unreachable for more than a lease time: leaving "
                           "the partitions to members that can publish (if any)");
      g->ops->set_eligible(g->ctx, eligible);
   }
}
