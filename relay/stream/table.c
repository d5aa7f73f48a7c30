/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The event table (table.h), its entities: the hash table keyed by collection and _id, adding,
 * finding, evicting and holding them. The events of an entity are table-events.c's, the
 * positions and the checkpoint candidate table-pos.c's, the walks table-walk.c's. Not
 * thread-safe: the main thread alone touches a table.
 */
#include "stream/table-private.h"

#include <string.h>

#include "base/render-id.h"

void
relay_table_init(relay_table_t *t)
{
   memset(t, 0, sizeof *t);
   t->nbuckets = 64;
   t->buckets = bson_malloc0(t->nbuckets * sizeof *t->buckets);
}

void
relay_table_item_free(relay_item_t *it)
{
   relay_event_cleanup(&it->ev);
   bson_free(it);
}

static void
entity_free(relay_entity_t *e)
{
   relay_item_t *it = e->head;
   while (it) {
      relay_item_t *next = it->next;
      relay_table_item_free(it);
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
