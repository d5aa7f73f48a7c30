/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The table's walks over all its entities (table.h): forgetting the idle ones (the one
 * keep_idle rule), a partition's entities (dropped when it goes, busy while it drains) and the
 * holds that keep entities known. Not thread-safe: the main thread alone touches a table.
 */
#include "stream/table.h"

void
relay_table_evict_idle(relay_table_t *t)
{
   for (size_t i = 0; i < t->nbuckets; i++) {
      relay_entity_t *e = t->buckets[i];
      while (e) {
         relay_entity_t *next = e->hnext;
         relay_table_evict(t, e);
         e = next;
      }
   }
}

void
relay_table_keep_idle(relay_table_t *t, bool keep)
{
   t->keep_idle = keep;
}

bool
relay_table_forget_if_idle(relay_table_t *t, relay_entity_t *e)
{
   return !t->keep_idle && relay_table_evict(t, e);
}

size_t
relay_table_drop_partition(relay_table_t *t, int p)
{
   size_t dropped = 0;
   for (size_t i = 0; i < t->nbuckets; i++) {
      relay_entity_t *e = t->buckets[i];
      while (e) {
         relay_entity_t *next = e->hnext;
         if (e->part == p) {
            dropped += relay_table_drop_queued(t, e);
            relay_table_forget_if_idle(t, e);
         }
         e = next;
      }
   }
   return dropped;
}

void
relay_table_find_busy(const relay_table_t *t, bool *busy)
{
   for (size_t i = 0; i < t->nbuckets; i++) {
      for (relay_entity_t *e = t->buckets[i]; e; e = e->hnext) {
         if (e->inflight || e->n_state[RELAY_ITEM_ACKED] || e->n_state[RELAY_ITEM_CLEARING] ||
             e->n_state[RELAY_ITEM_POISON]) {
            busy[e->part] = true;
         }
      }
   }
}

void
relay_table_hold_parts(relay_table_t *t, const relay_partset_t *parts)
{
   for (size_t i = 0; i < t->nbuckets; i++) {
      for (relay_entity_t *e = t->buckets[i]; e; e = e->hnext) {
         if (e->part >= 0 && relay_partset_has(parts, e->part)) {
            e->sweep_hold = true;
         }
      }
   }
}

void
relay_table_release_holds(relay_table_t *t, bool read)
{
   if (read && t->read_holds == 0) {
      return;
   }
   for (size_t i = 0; i < t->nbuckets; i++) {
      relay_entity_t *e = t->buckets[i];
      while (e) {
         relay_entity_t *next = e->hnext;
         bool held = read ? e->read_seq > 0 : e->sweep_hold;
         if (held) {
            if (read) {
               relay_table_release_read(t, e);
            } else {
               e->sweep_hold = false;
            }
            relay_table_forget_if_idle(t, e);
         }
         e = next;
      }
   }
}
