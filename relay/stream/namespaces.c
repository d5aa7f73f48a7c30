/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The watched set (namespaces.h): entries by index, a hash of "db\0coll" to index, under
 * one lock. Entries are never freed or moved while the registry lives (the array of
 * pointers grows; the entries do not), so names handed out stay valid.
 */
#include "stream/namespaces.h"

#include <pthread.h>
#include <string.h>

#include "util/error.h"

typedef struct {
   char *db;
   char *coll;
   char *label;
   int label_index;
   bool gone;
   bool listed; /* seen by the listing under way */
} entry_t;

struct relay_namespaces_t {
   relay_nsset_t *set;
   char *state_db;
   pthread_mutex_t lock;
   entry_t **entries;
   int n, cap;
   int *slots; /* open addressing: index + 1, 0 empty */
   size_t n_slots;
   uint64_t version;
};

static uint64_t
hash_ns(const char *db, const char *coll)
{
   uint64_t h = 1469598103934665603ull; /* FNV-1a over db, a NUL, coll */
   for (const char *p = db; *p; p++) {
      h = (h ^ (unsigned char)*p) * 1099511628211ull;
   }
   h *= 1099511628211ull;
   for (const char *p = coll; *p; p++) {
      h = (h ^ (unsigned char)*p) * 1099511628211ull;
   }
   return h;
}

/* The slot of @db.@coll: its entry's, or the empty one where it would go. Lock held. */
static size_t
slot_of(const relay_namespaces_t *ns, const char *db, const char *coll)
{
   size_t mask = ns->n_slots - 1;
   size_t s = (size_t)hash_ns(db, coll) & mask;
   while (ns->slots[s]) {
      const entry_t *e = ns->entries[ns->slots[s] - 1];
      if (!strcmp(e->db, db) && !strcmp(e->coll, coll)) {
         break;
      }
      s = (s + 1) & mask;
   }
   return s;
}

static void
grow_slots(relay_namespaces_t *ns)
{
   bson_free(ns->slots);
   ns->n_slots = ns->n_slots ? ns->n_slots * 2 : 64;
   ns->slots = bson_malloc0(ns->n_slots * sizeof *ns->slots);
   for (int i = 0; i < ns->n; i++) {
      ns->slots[slot_of(ns, ns->entries[i]->db, ns->entries[i]->coll)] = i + 1;
   }
}

/* Adds @db.@coll (not there yet) with @label. Lock held. */
static int
add(relay_namespaces_t *ns, const char *db, const char *coll, int label)
{
   if ((size_t)(ns->n + 1) * 2 > ns->n_slots) {
      grow_slots(ns);
   }
   if (ns->n == ns->cap) {
      ns->cap = ns->cap ? ns->cap * 2 : 16;
      ns->entries = bson_realloc(ns->entries, (size_t)ns->cap * sizeof *ns->entries);
   }
   entry_t *e = bson_malloc0(sizeof *e);
   e->db = bson_strdup(db);
   e->coll = bson_strdup(coll);
   e->label = ns->state_db && !strcmp(db, ns->state_db) ? bson_strdup(coll)
                                                        : bson_strdup_printf("%s.%s", db, coll);
   e->label_index = label;
   ns->entries[ns->n] = e;
   ns->slots[slot_of(ns, db, coll)] = ns->n + 1;
   ns->version++;
   return ns->n++;
}

relay_namespaces_t *
relay_namespaces_new(const relay_config_t *cfg, bson_error_t *error)
{
   relay_nsset_t *set = relay_nsset_new(cfg, error);
   if (!set) {
      return NULL;
   }
   relay_namespaces_t *ns = bson_malloc0(sizeof *ns);
   ns->set = set;
   ns->state_db = bson_strdup(cfg->state_database);
   pthread_mutex_init(&ns->lock, NULL);
   grow_slots(ns);
   for (size_t i = 0; i < relay_nsset_count(set); i++) {
      const relay_nspat_t *p = relay_nsset_at(set, i);
      if (!p->db_glob && !p->coll_glob) {
         add(ns, p->db, p->coll, (int)i);
      }
   }
   return ns;
}

void
relay_namespaces_destroy(relay_namespaces_t *ns)
{
   if (!ns) {
      return;
   }
   for (int i = 0; i < ns->n; i++) {
      bson_free(ns->entries[i]->db);
      bson_free(ns->entries[i]->coll);
      bson_free(ns->entries[i]->label);
      bson_free(ns->entries[i]);
   }
   bson_free(ns->entries);
   bson_free(ns->slots);
   relay_nsset_destroy(ns->set);
   bson_free(ns->state_db);
   pthread_mutex_destroy(&ns->lock);
   bson_free(ns);
}

const relay_nsset_t *
relay_namespaces_patterns(const relay_namespaces_t *ns)
{
   return ns->set;
}

int
relay_namespaces_find(relay_namespaces_t *ns, const char *db, const char *coll)
{
   pthread_mutex_lock(&ns->lock);
   int i = ns->slots[slot_of(ns, db, coll)] - 1;
   pthread_mutex_unlock(&ns->lock);
   return i;
}

int
relay_namespaces_take(relay_namespaces_t *ns, const char *db, const char *coll)
{
   if (!db || !coll) {
      return -1;
   }
   pthread_mutex_lock(&ns->lock);
   int i = ns->slots[slot_of(ns, db, coll)] - 1;
   if (i >= 0 && ns->entries[i]->gone) {
      ns->entries[i]->gone = false; /* created again */
      ns->version++;
   } else if (i < 0) {
      int label = relay_nsset_which(ns->set, db, coll);
      i = label < 0 ? -1 : add(ns, db, coll, label);
   }
   pthread_mutex_unlock(&ns->lock);
   return i;
}

int
relay_namespaces_count(relay_namespaces_t *ns)
{
   pthread_mutex_lock(&ns->lock);
   int n = ns->n;
   pthread_mutex_unlock(&ns->lock);
   return n;
}

bool
relay_namespaces_get(relay_namespaces_t *ns, int i, relay_ns_t *out)
{
   if (!ns) {
      return false;
   }
   pthread_mutex_lock(&ns->lock);
   bool ok = i >= 0 && i < ns->n;
   if (ok) {
      const entry_t *e = ns->entries[i];
      *out = (relay_ns_t){
         .db = e->db, .coll = e->coll, .name = e->label, .label = e->label_index, .gone = e->gone};
   }
   pthread_mutex_unlock(&ns->lock);
   return ok;
}

const char *
relay_namespaces_coll(relay_namespaces_t *ns, int i)
{
   relay_ns_t n;
   return relay_namespaces_get(ns, i, &n) ? n.coll : "?";
}

const char *
relay_namespaces_name(relay_namespaces_t *ns, int i)
{
   relay_ns_t n;
   return relay_namespaces_get(ns, i, &n) ? n.name : "?";
}

const char *
relay_namespaces_db(relay_namespaces_t *ns, int i)
{
   relay_ns_t n;
   return relay_namespaces_get(ns, i, &n) ? n.db : "?";
}

void
relay_namespaces_revive(relay_namespaces_t *ns)
{
   pthread_mutex_lock(&ns->lock);
   for (int i = 0; i < ns->n; i++) {
      if (ns->entries[i]->gone) {
         ns->entries[i]->gone = false;
         ns->version++;
      }
   }
   pthread_mutex_unlock(&ns->lock);
}

int
relay_namespaces_drop(relay_namespaces_t *ns, const char *db, const char *coll)
{
   int dropped = 0;
   pthread_mutex_lock(&ns->lock);
   for (int i = 0; i < ns->n && db; i++) {
      entry_t *e = ns->entries[i];
      if (!e->gone && !strcmp(e->db, db) && (!coll || !strcmp(e->coll, coll))) {
         e->gone = true;
         dropped++;
      }
   }
   ns->version += (uint64_t)dropped;
   pthread_mutex_unlock(&ns->lock);
   return dropped;
}

uint64_t
relay_namespaces_version(relay_namespaces_t *ns)
{
   pthread_mutex_lock(&ns->lock);
   uint64_t v = ns->version;
   pthread_mutex_unlock(&ns->lock);
   return v;
}
