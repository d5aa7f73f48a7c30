/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event table (table.h), its positions: the FIFO of stream positions that buffered events
 * hold, markers, and the checkpoint candidate that moves only past positions whose events
 * are all cleared (the checkpoint rule in table.h). Not thread-safe: the main thread alone
 * touches a table.
 */
#include "stream/table-private.h"

relay_pos_t *
relay_table_pos_push(relay_table_t *t, const bson_t *token, int64_t wall_ms)
{
   relay_pos_t *p = t->pos_tail;

   /* A tail with nothing left only waits for older positions: it can stand for this newer
    * one too, since both become checkpointable at the same moment. */
   if (!p || p->remaining > 0) {
      p = bson_malloc0(sizeof *p);
      if (t->pos_tail) {
         t->pos_tail->next = p;
      } else {
         t->pos_head = p;
      }
      t->pos_tail = p;
   }
   if (token) {
      bson_destroy(p->token);
      p->token = bson_copy(token);
   }
   p->seq = ++t->next_seq; /* a reused tail stands for this newer position */
   p->wall_ms = wall_ms;
   return p;
}

relay_pos_t *
relay_table_pos_marker(relay_table_t *t)
{
   relay_pos_t *p = bson_malloc0(sizeof *p);
   p->seq = ++t->next_seq;
   p->remaining = 1;
   if (t->pos_tail) {
      t->pos_tail->next = p;
   } else {
      t->pos_head = p;
   }
   t->pos_tail = p;
   return p;
}

void
relay_table_pos_release(relay_table_t *t, relay_pos_t *pos)
{
   if (pos->remaining > 0) {
      pos->remaining--;
   }
   relay_table_pos_settle(t);
}

void
relay_table_pos_settle(relay_table_t *t)
{
   while (t->pos_head && t->pos_head->remaining == 0) {
      relay_pos_t *p = t->pos_head;
      t->pos_head = p->next;
      if (!t->pos_head) {
         t->pos_tail = NULL;
      }
      if (p->token) {
         bson_destroy(t->checkpoint);
         t->checkpoint = p->token;
         t->checkpoint_seq = p->seq;
         t->checkpoint_changed = true;
      }
      bson_free(p);
   }
}

void
relay_table_pos_reset(relay_table_t *t)
{
   relay_pos_t *p = t->pos_head;
   while (p) {
      relay_pos_t *next = p->next;
      bson_destroy(p->token);
      bson_free(p);
      p = next;
   }
   t->pos_head = t->pos_tail = NULL;
   bson_destroy(t->checkpoint);
   t->checkpoint = NULL;
   t->checkpoint_changed = false;
   /* Items still point at freed positions: detach them. */
   for (size_t i = 0; i < t->nbuckets; i++) {
      for (relay_entity_t *e = t->buckets[i]; e; e = e->hnext) {
         for (relay_item_t *it = e->head; it; it = it->next) {
            it->pos = NULL;
         }
      }
   }
}

void
relay_table_pos_adopt(relay_table_t *t, relay_pos_t *pos)
{
   for (size_t i = 0; i < t->nbuckets; i++) {
      for (relay_entity_t *e = t->buckets[i]; e; e = e->hnext) {
         for (relay_item_t *it = e->head; it; it = it->next) {
            if (!it->pos) {
               it->pos = pos;
               pos->remaining++;
            }
         }
      }
   }
}

bson_t *
relay_table_take_checkpoint(relay_table_t *t)
{
   if (!t->checkpoint_changed || !t->checkpoint) {
      return NULL;
   }
   t->checkpoint_changed = false;
   return bson_copy(t->checkpoint);
}
