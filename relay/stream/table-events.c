/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event table (table.h), the events of its entities: offering them in seq order, their
 * states (queued, in flight, to clear, parked), the ready and dirty lists, and taking them
 * out. The ordering rule of table.h is kept here. Not thread-safe: the main thread alone
 * touches a table.
 */
#include "stream/table-private.h"

#include <string.h>

/* Frees an item already unlinked from @e's list, with its share of every count. */
static void
item_forget(relay_table_t *t, relay_entity_t *e, relay_item_t *it)
{
   if (it->pos && it->pos->remaining > 0) {
      it->pos->remaining--;
   }
   e->n_state[it->state]--;
   t->buffered--;
   t->buffered_bytes -= it->bytes;
   relay_table_item_free(it);
}

static void
push_ready(relay_table_t *t, relay_entity_t *e)
{
   if (e->on_ready) {
      return;
   }
   e->on_ready = true;
   e->rnext = NULL;
   if (t->ready_tail) {
      t->ready_tail->rnext = e;
   } else {
      t->ready_head = e;
   }
   t->ready_tail = e;
}

void
relay_table_mark_dirty(relay_table_t *t, relay_entity_t *e)
{
   if (e->on_dirty) {
      return;
   }
   e->on_dirty = true;
   e->dnext = NULL;
   if (t->dirty_tail) {
      t->dirty_tail->dnext = e;
   } else {
      t->dirty_head = e;
   }
   t->dirty_tail = e;
}

/* Whether @e buffers this very element (same seq, same bytes): read again with its document. */
static bool
holds(const relay_entity_t *e, int64_t seq, const bson_value_t *raw)
{
   if (raw->value_type != BSON_TYPE_DOCUMENT) {
      return false;
   }
   for (const relay_item_t *it = e->head; it; it = it->next) {
      if (it->ev.seq == seq && it->ev.raw.value_type == BSON_TYPE_DOCUMENT &&
          it->ev.raw.value.v_doc.data_len == raw->value.v_doc.data_len &&
          !memcmp(it->ev.raw.value.v_doc.data, raw->value.v_doc.data, raw->value.v_doc.data_len)) {
         return true;
      }
   }
   return false;
}

bool
relay_table_seen(const relay_entity_t *e, int64_t seq, const bson_value_t *raw,
                 int64_t replayed_upto)
{
   return seq != 0 && seq <= e->last_seq && (seq <= replayed_upto || holds(e, seq, raw));
}

bool
relay_table_offer(relay_table_t *t, relay_entity_t *e, relay_event_t *ev, relay_pos_t *pos,
                  int64_t replayed_upto)
{
   relay_item_t *it;
   bool valid = ev->reason == NULL;

   if (ev->seq != 0 && ev->seq <= e->last_seq) {
      /* A requeued event below last_seq is taken only from the document as it is now
       * (relay_table_offer_requeued()): a change may show it after it was published. */
      if (relay_table_seen(e, ev->seq, &ev->raw, replayed_upto) || ev->requeued > 0) {
         return false; /* seen already: a replayed change, or read again with its document */
      }
      /* Another event at or below a seq already taken or handled (written outside
       * liboutbox): it can never be published in order, and nothing else would ever remove
       * it from the document. */
      valid = false;
      ev->reason = RELAY_REASON_SEQ_NOT_ABOVE;
   } else if (valid || ev->seq != 0) {
      e->last_seq = ev->seq;
   }
   it = bson_malloc0(sizeof *it);
   it->ev = *ev;
   memset(ev, 0, sizeof *ev);
   it->state = valid ? RELAY_ITEM_QUEUED : RELAY_ITEM_POISON;
   e->n_state[it->state]++;
   it->reason = valid ? NULL : it->ev.reason;
   it->pos = pos;
   if (pos) {
      pos->remaining++;
   }
   if (e->tail) {
      e->tail->next = it;
   } else {
      e->head = it;
   }
   e->tail = it;
   t->buffered++;
   it->bytes =
      it->ev.raw.value_type == BSON_TYPE_DOCUMENT ? it->ev.raw.value.v_doc.data_len : sizeof *it;
   t->buffered_bytes += it->bytes;
   if (valid) {
      push_ready(t, e);
   } else {
      relay_table_mark_dirty(t, e);
   }
   return true;
}

/* Whether @e holds an item (in any state) with event id @id. */
static bool
holds_id(const relay_entity_t *e, const char *id)
{
   for (const relay_item_t *it = e->head; it && id; it = it->next) {
      if (it->ev.id && !strcmp(it->ev.id, id)) {
         return true;
      }
   }
   return false;
}

bool
relay_table_offer_requeued(relay_table_t *t, relay_entity_t *e, relay_event_t *ev, relay_pos_t *pos)
{
   int64_t last_seq = e->last_seq;
   if (ev->requeued <= 0 || ev->seq == 0 || ev->seq > last_seq) {
      return relay_table_offer(t, e, ev, pos, 0);
   }
   if (holds_id(e, ev->id)) {
      return false; /* taken before, still in flight or being cleared */
   }
   /* Below the entity's last seq by design: taken without lowering or raising last_seq. */
   e->last_seq = ev->seq - 1;
   bool taken = relay_table_offer(t, e, ev, pos, 0);
   e->last_seq = last_seq;
   return taken;
}

void
relay_table_set_state(relay_entity_t *e, relay_item_t *it, relay_item_state_t state)
{
   BSON_ASSERT(e->n_state[it->state] > 0);
   e->n_state[it->state]--;
   it->state = state;
   e->n_state[state]++;
}

static relay_item_t *
first_queued(const relay_entity_t *e)
{
   if (e->n_state[RELAY_ITEM_QUEUED] == 0) {
      return NULL;
   }
   for (relay_item_t *it = e->head; it; it = it->next) {
      if (it->state == RELAY_ITEM_QUEUED) {
         return it;
      }
   }
   return NULL;
}

relay_entity_t *
relay_table_next_ready(relay_table_t *t, int64_t now_ms)
{
   relay_entity_t *stop = NULL;

   while (t->ready_head) {
      relay_entity_t *e = t->ready_head;
      relay_item_t *it;

      t->ready_head = e->rnext;
      if (!t->ready_head) {
         t->ready_tail = NULL;
      }
      e->on_ready = false;
      it = e->inflight ? NULL : first_queued(e);
      if (!it) {
         continue; /* stale entry: it is put back when it has work again */
      }
      if (e->ready_at_ms > now_ms) {
         push_ready(t, e); /* backing off: look again later */
         if (!stop) {
            stop = e;
         } else if (stop == e) {
            return NULL; /* went round once: every ready entity is backing off */
         }
         continue;
      }
      relay_table_set_state(e, it, RELAY_ITEM_INFLIGHT);
      e->inflight = it;
      t->inflight++;
      return e;
   }
   return NULL;
}

static relay_item_t *
end_flight(relay_table_t *t, relay_entity_t *e)
{
   relay_item_t *it = e->inflight;
   BSON_ASSERT(it);
   e->inflight = NULL;
   t->inflight--;
   return it;
}

void
relay_table_acked(relay_table_t *t, relay_entity_t *e)
{
   relay_item_t *it = end_flight(t, e);
   relay_table_set_state(e, it, RELAY_ITEM_ACKED);
   e->ready_at_ms = 0;
   relay_table_mark_dirty(t, e);
   /* The count says whether more is queued: no walk of the list. */
   if (e->n_state[RELAY_ITEM_QUEUED] > 0) {
      push_ready(t, e);
   }
}

void
relay_table_failed(relay_table_t *t, relay_entity_t *e, int64_t retry_at_ms)
{
   relay_item_t *it = end_flight(t, e);
   relay_table_set_state(e, it, RELAY_ITEM_QUEUED);
   e->ready_at_ms = retry_at_ms;
   push_ready(t, e);
}

void
relay_table_poisoned(relay_table_t *t, relay_entity_t *e, const char *reason)
{
   relay_item_t *it = end_flight(t, e);
   relay_table_set_state(e, it, RELAY_ITEM_POISON);
   it->reason = reason;
   relay_table_mark_dirty(t, e);
   if (e->n_state[RELAY_ITEM_QUEUED] > 0) {
      push_ready(t, e);
   }
}

void
relay_table_park(relay_table_t *t, relay_entity_t *e)
{
   relay_item_t *it = end_flight(t, e);
   relay_table_set_state(e, it, RELAY_ITEM_QUEUED);
   e->parked = true;
}

void
relay_table_unpark(relay_table_t *t, relay_entity_t *e)
{
   e->parked = false;
   if (e->n_state[RELAY_ITEM_QUEUED] > 0 && !e->inflight) {
      push_ready(t, e);
   }
}

/* last_seq: the highest seq @e still holds (0 if nothing), but below @dropped, the lowest seq
 * dropped: the dropped events are taken again when read again, and the seq rule must not take
 * them for repeats of a held event with a higher seq (a poison one waiting for the dead
 * letters). */
static void
reset_last_seq(relay_entity_t *e, int64_t dropped)
{
   e->last_seq = 0;
   for (relay_item_t *it = e->head; it; it = it->next) {
      if (it->ev.seq > e->last_seq && (dropped <= 0 || it->ev.seq < dropped)) {
         e->last_seq = it->ev.seq;
      }
   }
}

size_t
relay_table_drop_queued(relay_table_t *t, relay_entity_t *e)
{
   int64_t lowest = 0;
   for (relay_item_t *it = e->head; it; it = it->next) {
      if (it->state == RELAY_ITEM_QUEUED && it->ev.seq > 0 && (!lowest || it->ev.seq < lowest)) {
         lowest = it->ev.seq;
      }
   }
   size_t n = relay_table_remove_state(t, e, RELAY_ITEM_QUEUED);
   reset_last_seq(e, lowest);
   return n;
}

void
relay_table_drop_inflight(relay_table_t *t, relay_entity_t *e)
{
   relay_item_t *it = end_flight(t, e);
   int64_t seq = it->ev.seq;
   relay_table_remove_item(t, e, it);
   reset_last_seq(e, seq);
}

uint32_t
relay_table_gather_limit(int max_buffered, int window)
{
   int n = window > 0 ? max_buffered / (4 * window) : 1;
   return n < 1 ? 1 : n > 16 ? 16 : (uint32_t)n;
}

bool
relay_table_may_gather(const relay_entity_t *e, uint32_t limit)
{
   return e->inflight && e->n_state[RELAY_ITEM_POISON] == 0 && e->n_state[RELAY_ITEM_ACKED] < limit;
}

relay_entity_t *
relay_table_next_dirty(relay_table_t *t)
{
   relay_entity_t *e = t->dirty_head;
   if (e) {
      t->dirty_head = e->dnext;
      if (!t->dirty_head) {
         t->dirty_tail = NULL;
      }
      e->on_dirty = false;
   }
   return e;
}

size_t
relay_table_remove_state(relay_table_t *t, relay_entity_t *e, relay_item_state_t state)
{
   relay_item_t **pp = &e->head, *prev = NULL;
   size_t n = 0, want = e->n_state[state];

   /* Acknowledged items sit at the front: stop once all of them are found. */
   while (*pp && n < want) {
      relay_item_t *it = *pp;
      if (it->state != state) {
         prev = it;
         pp = &it->next;
         continue;
      }
      *pp = it->next;
      if (e->tail == it) {
         e->tail = prev;
      }
      item_forget(t, e, it);
      n++;
   }
   return n;
}

void
relay_table_remove_item(relay_table_t *t, relay_entity_t *e, relay_item_t *item)
{
   relay_item_t **pp = &e->head, *prev = NULL;

   while (*pp && *pp != item) {
      prev = *pp;
      pp = &(*pp)->next;
   }
   if (!*pp) {
      return;
   }
   *pp = item->next;
   if (e->tail == item) {
      e->tail = prev;
   }
   item_forget(t, e, item);
}

size_t
relay_table_restate(relay_entity_t *e, relay_item_state_t from, relay_item_state_t to)
{
   size_t n = 0;
   for (relay_item_t *it = e->head; it && e->n_state[from] > 0; it = it->next) {
      if (it->state == from) {
         relay_table_set_state(e, it, to);
         n++;
      }
   }
   return n;
}

size_t
relay_table_count_state(const relay_entity_t *e, relay_item_state_t state)
{
   return e->n_state[state];
}
