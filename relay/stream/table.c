/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event table (table.h): entities, events, positions, the checkpoint candidate. Not
 * thread-safe: the main thread alone touches a table.
 */
#include "stream/table.h"

#include <string.h>

#include "base/render-id.h"

void
relay_table_init(relay_table_t *t)
{
   memset(t, 0, sizeof *t);
   t->nbuckets = 64;
   t->buckets = bson_malloc0(t->nbuckets * sizeof *t->buckets);
}

static void
item_free(relay_item_t *it)
{
   relay_event_cleanup(&it->ev);
   bson_free(it);
}

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
   item_free(it);
}

static void
entity_free(relay_entity_t *e)
{
   relay_item_t *it = e->head;
   while (it) {
      relay_item_t *next = it->next;
      item_free(it);
      it = next;
   }
   bson_value_destroy(&e->id);
   bson_free(e->rendered);
   bson_free(e->encoded);
   bson_free(e->key);
   bson_free(e);
}

void
relay_table_cleanup(relay_table_t *t)
{
   relay_table_pos_reset(t); /* first: it walks the entities */
   for (size_t i = 0; i < t->nbuckets; i++) {
      relay_entity_t *e = t->buckets[i];
      while (e) {
         relay_entity_t *next = e->hnext;
         entity_free(e);
         e = next;
      }
   }
   bson_free(t->buckets);
   memset(t, 0, sizeof *t);
}

/* Key: 4 bytes of collection index, then {"": _id} as BSON. BSON equality is what the
 * server's _id index uses too (close enough: it treats 1 and 1L alike, we do not; such an
 * entity would only be tracked twice, costing a duplicate at worst). */
static uint8_t *
make_key(int coll, const bson_value_t *id, size_t *len)
{
   bson_t doc = BSON_INITIALIZER;
   uint8_t *key;
   uint32_t c = (uint32_t)coll;

   bson_append_value(&doc, "", 0, id);
   *len = sizeof c + doc.len;
   key = bson_malloc(*len);
   memcpy(key, &c, sizeof c);
   memcpy(key + sizeof c, bson_get_data(&doc), doc.len);
   bson_destroy(&doc);
   return key;
}

static uint32_t
hash_bytes(const uint8_t *p, size_t n)
{
   uint32_t h = 2166136261u; /* FNV-1a */
   for (size_t i = 0; i < n; i++) {
      h = (h ^ p[i]) * 16777619u;
   }
   return h;
}

static relay_entity_t *
lookup(relay_table_t *t, const uint8_t *key, size_t len, uint32_t h)
{
   for (relay_entity_t *e = t->buckets[h % t->nbuckets]; e; e = e->hnext) {
      if (e->hash == h && e->key_len == len && !memcmp(e->key, key, len)) {
         return e;
      }
   }
   return NULL;
}

relay_entity_t *
relay_table_find(relay_table_t *t, int coll, const bson_value_t *id)
{
   size_t len;
   uint8_t *key = make_key(coll, id, &len);
   relay_entity_t *e = lookup(t, key, len, hash_bytes(key, len));
   bson_free(key);
   return e;
}

static void
grow(relay_table_t *t)
{
   size_t n = t->nbuckets * 2;
   relay_entity_t **b = bson_malloc0(n * sizeof *b);
   for (size_t i = 0; i < t->nbuckets; i++) {
      relay_entity_t *e = t->buckets[i];
      while (e) {
         relay_entity_t *next = e->hnext;
         e->hnext = b[e->hash % n];
         b[e->hash % n] = e;
         e = next;
      }
   }
   bson_free(t->buckets);
   t->buckets = b;
   t->nbuckets = n;
}

relay_entity_t *
relay_table_add(relay_table_t *t, int coll, const bson_value_t *id)
{
   size_t len;
   uint8_t *key = make_key(coll, id, &len);
   uint32_t h = hash_bytes(key, len);
   relay_entity_t *e = lookup(t, key, len, h);

   if (e) {
      bson_free(key);
      return e;
   }
   if (t->count >= t->nbuckets) {
      grow(t);
   }
   e = bson_malloc0(sizeof *e);
   e->key = key;
   e->key_len = len;
   e->hash = h;
   e->coll = coll;
   bson_value_copy(id, &e->id);
   e->rendered = relay_render_id(id, &e->rendered_len);
   e->hnext = t->buckets[h % t->nbuckets];
   t->buckets[h % t->nbuckets] = e;
   t->count++;
   return e;
}

bool
relay_table_evict(relay_table_t *t, relay_entity_t *e)
{
   relay_entity_t **pp;

   if (e->head || e->inflight || e->on_ready || e->on_dirty || e->parked || e->sweep_hold ||
       e->read_seq > 0) {
      return false;
   }
   for (pp = &t->buckets[e->hash % t->nbuckets]; *pp; pp = &(*pp)->hnext) {
      if (*pp == e) {
         *pp = e->hnext;
         t->count--;
         entity_free(e);
         return true;
      }
   }
   return false;
}

void
relay_table_hold_read(relay_table_t *t, relay_entity_t *e, int64_t seq)
{
   if (seq > e->read_seq) {
      t->read_holds += e->read_seq == 0;
      e->read_seq = seq;
   }
}

void
relay_table_release_read(relay_table_t *t, relay_entity_t *e)
{
   if (e->read_seq > 0) {
      e->read_seq = 0;
      t->read_holds--;
   }
}

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

bson_t *
relay_table_take_checkpoint(relay_table_t *t)
{
   if (!t->checkpoint_changed || !t->checkpoint) {
      return NULL;
   }
   t->checkpoint_changed = false;
   return bson_copy(t->checkpoint);
}
