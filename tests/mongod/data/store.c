/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Databases and collections of the in-memory store: creating, finding, dropping and renaming
 * them, inserting, replacing and removing documents with their _id index, and announcing
 * every change to the store's hooks (open transactions keep their snapshot through them).
 * Indexes are in store-index.c, detached copies in store-copy.c. Callers hold the server lock.
 */
#include "data/store.h"

#include <stdlib.h>
#include <string.h>

#include "data/keyenc.h"

md_store_t *
md_store_new(void)
{
   return calloc(1, sizeof(md_store_t));
}

/* Collections outside the store (copies, view contents) change without telling anyone. */
static bool
is_live(const md_coll_t *coll)
{
   return coll->db && coll->db->store && !coll->is_snapshot && !coll->txn_view;
}

void
md_store_notify_doc(md_coll_t *coll, const bson_t *doc)
{
   md_store_t *store = is_live(coll) ? coll->db->store : NULL;
   if (store && store->versions.doc_change) {
      store->versions.doc_change(store->versions.ctx, coll, doc);
   }
   if (store && store->hooks.doc_change) {
      store->hooks.doc_change(store->hooks.ctx, coll, doc);
   }
}

void
md_store_notify_catalog(md_db_t *db, const char *name, md_coll_t *coll)
{
   if (db->store && db->store->hooks.catalog_change && (!coll || is_live(coll))) {
      db->store->hooks.catalog_change(db->store->hooks.ctx, db, name, coll);
   }
   if (db->store && db->store->versions.catalog_change && (!coll || is_live(coll))) {
      db->store->versions.catalog_change(db->store->versions.ctx, db, name, coll);
   }
}

static void
index_destroy(md_index_t *ix)
{
   if (!ix) {
      return;
   }
   free(ix->name);
   bson_destroy(ix->spec);
   bson_destroy(ix->key);
   tm_matcher_destroy(ix->partial);
   md_hmap_destroy(ix->entries);
   free(ix);
}

void
md_coll_free_detached(md_coll_t *coll)
{
   md_doc_t *d = coll->head;
   while (d) {
      md_doc_t *next = d->next;
      bson_destroy(d->bson);
      free(d);
      d = next;
   }
   for (size_t i = 0; i < coll->n_indexes; i++) {
      index_destroy(coll->indexes[i]);
   }
   free(coll->indexes);
   md_hmap_destroy(coll->ids);
   bson_destroy(coll->options);
   tm_matcher_destroy(coll->validator);
   bson_destroy(coll->view_pipeline);
   free(coll->view_on);
   free(coll->name);
   free(coll);
}

static void
db_destroy(md_db_t *db)
{
   md_coll_t *c = db->colls;
   while (c) {
      md_coll_t *next = c->next;
      md_coll_free_detached(c);
      c = next;
   }
   free(db->name);
   free(db);
}

void
md_store_destroy(md_store_t *store)
{
   if (!store) {
      return;
   }
   md_db_t *db = store->dbs;
   while (db) {
      md_db_t *next = db->next;
      db_destroy(db);
      db = next;
   }
   free(store);
}

md_db_t *
md_store_db(md_store_t *store, const char *name, bool create)
{
   md_db_t **link = &store->dbs;
   for (; *link; link = &(*link)->next) {
      if (strcmp((*link)->name, name) == 0) {
         return *link;
      }
   }
   if (!create) {
      return NULL;
   }
   md_db_t *db = calloc(1, sizeof *db);
   db->name = strdup(name);
   db->store = store;
   *link = db; /* appended, so listDatabases keeps creation order */
   return db;
}

md_coll_t *
md_coll_new_detached(md_db_t *db, const char *name)
{
   md_coll_t *coll = calloc(1, sizeof *coll);
   coll->name = strdup(name);
   coll->db = db;
   coll->ids = md_hmap_new();
   coll->options = bson_new();
   for (int i = 0; i < 16; i++) {
      coll->uuid[i] = (uint8_t)(rand() & 0xff);
   }
   coll->uuid[6] = (uint8_t)((coll->uuid[6] & 0x0f) | 0x40);
   coll->uuid[8] = (uint8_t)((coll->uuid[8] & 0x3f) | 0x80);
   bson_t *spec =
      BCON_NEW("v", BCON_INT32(2), "key", "{", "_id", BCON_INT32(1), "}", "name", "_id_");
   md_index_t *ix = calloc(1, sizeof *ix);
   ix->name = strdup("_id_");
   ix->spec = spec;
   ix->key = BCON_NEW("_id", BCON_INT32(1));
   ix->unique = true;
   ix->expire_after = -1;
   coll->indexes = malloc(sizeof *coll->indexes);
   coll->indexes[0] = ix;
   coll->n_indexes = 1;
   return coll;
}

md_coll_t *
md_store_coll(md_store_t *store, const char *dbname, const char *name, bool create, bool *created)
{
   if (created) {
      *created = false;
   }
   md_db_t *db = md_store_db(store, dbname, create);
   if (!db) {
      return NULL;
   }
   md_coll_t **link = &db->colls;
   for (; *link; link = &(*link)->next) {
      if (strcmp((*link)->name, name) == 0) {
         return *link;
      }
   }
   if (!create) {
      return NULL;
   }
   md_store_notify_catalog(db, name, NULL);
   *link = md_coll_new_detached(db, name);
   if (created) {
      *created = true;
   }
   return *link;
}

static void
unlink_coll(md_coll_t *coll)
{
   for (md_coll_t **link = &coll->db->colls; *link; link = &(*link)->next) {
      if (*link == coll) {
         *link = coll->next;
         coll->next = NULL;
         return;
      }
   }
}

void
md_store_drop_coll(md_store_t *store, md_coll_t *coll)
{
   (void)store;
   md_store_notify_catalog(coll->db, coll->name, coll);
   unlink_coll(coll);
   md_coll_free_detached(coll);
}

void
md_store_drop_db(md_store_t *store, md_db_t *db)
{
   for (md_coll_t *c = db->colls; c; c = c->next) {
      md_store_notify_catalog(db, c->name, c);
   }
   for (md_db_t **link = &store->dbs; *link; link = &(*link)->next) {
      if (*link == db) {
         *link = db->next;
         db_destroy(db);
         return;
      }
   }
}

void
md_store_rename(md_store_t *store, md_coll_t *coll, const char *to_db, const char *to_name)
{
   md_store_notify_catalog(coll->db, coll->name, coll);
   md_db_t *db = md_store_db(store, to_db, true);
   md_store_notify_catalog(db, to_name, NULL);
   unlink_coll(coll);
   free(coll->name);
   coll->name = strdup(to_name);
   coll->db = db;
   md_coll_t **link = &db->colls;
   while (*link) {
      link = &(*link)->next;
   }
   *link = coll;
}

/* ---- keys ------------------------------------------------------------------------------- */

static bool
id_key(const bson_t *doc, bson_string_t *out)
{
   return md_keyenc_field(out, doc, "_id");
}

md_doc_t *
md_coll_find_id(const md_coll_t *coll, const bson_value_t *id)
{
   bson_string_t *k = bson_string_new(NULL);
   md_keyenc_append(k, id);
   md_doc_t *d = md_hmap_get(coll->ids, k->str, k->len);
   bson_string_free(k, true);
   return d;
}

/* Encodes the index key of `doc` into `out`; false if the document is not in the index
 * (sparse with no field, or not matching the partial filter). */
static bool
index_key(const md_index_t *ix, const bson_t *doc, bson_string_t *out, bson_t *key_value)
{
   bson_iter_t it;
   bool any = false;
   if (ix->partial && !tm_matcher_match(ix->partial, doc, NULL)) {
      return false;
   }
   bson_iter_init(&it, ix->key);
   while (bson_iter_next(&it)) {
      bson_value_t v;
      bool found = tm_path_get(doc, bson_iter_key(&it), &v);
      any = any || found;
      md_keyenc_append(out, found ? &v : NULL);
      if (key_value) {
         if (found) {
            bson_append_value(key_value, bson_iter_key(&it), -1, &v);
         } else {
            bson_append_null(key_value, bson_iter_key(&it), -1);
         }
      }
   }
   return any || !ix->sparse;
}

static char *
value_json(const bson_t *kv)
{
   /* MongoDB prints `{ f: v }`; relaxed extended JSON with unquoted keys comes close. */
   bson_string_t *s = bson_string_new("{ ");
   bson_iter_t it;
   bool first = true;
   bson_iter_init(&it, kv);
   while (bson_iter_next(&it)) {
      bson_t one = BSON_INITIALIZER;
      bson_append_value(&one, "", 0, bson_iter_value(&it));
      size_t vlen = 0;
      char *json = bson_as_relaxed_extended_json(&one, &vlen);
      const char *colon = json ? strstr(json, " : ") : NULL;
      /* json is `{ "" : VALUE }`; keep VALUE (libbson returns NULL for some values). */
      if (colon && vlen >= (size_t)(colon + 3 - json) + 2) {
         bson_string_append_printf(s, "%s%s: %.*s", first ? "" : ", ", bson_iter_key(&it),
                                   (int)(vlen - (size_t)(colon + 3 - json) - 2), colon + 3);
      } else {
         bson_string_append_printf(s, "%s%s: ?", first ? "" : ", ", bson_iter_key(&it));
      }
      bson_free(json);
      bson_destroy(&one);
      first = false;
   }
   bson_string_append(s, " }");
   return bson_string_free(s, false);
}

static bool
dup_error(const md_coll_t *coll, const md_index_t *ix, const bson_t *doc, bson_t *details,
          bson_error_t *error)
{
   bson_t kv = BSON_INITIALIZER;
   bson_string_t *ignored = bson_string_new(NULL);
   index_key(ix, doc, ignored, &kv);
   bson_string_free(ignored, true);
   char *json = value_json(&kv);
   tm_error_set(error, 11000, "E11000 duplicate key error collection: %s.%s index: %s dup key: %s",
                coll->db->name, coll->name, ix->name, json);
   bson_free(json);
   if (details) {
      BSON_APPEND_DOCUMENT(details, "keyPattern", ix->key);
      BSON_APPEND_DOCUMENT(details, "keyValue", &kv);
   }
   bson_destroy(&kv);
   return false;
}

/* Checks the unique indexes other than _id_ for `doc`, ignoring entries that belong to
 * `self` (the document being replaced). */
static bool
check_unique(const md_coll_t *coll, const bson_t *doc, const md_doc_t *self, bson_t *details,
             bson_error_t *error)
{
   for (size_t i = 1; i < coll->n_indexes; i++) {
      md_index_t *ix = coll->indexes[i];
      if (!ix->entries) {
         continue;
      }
      bson_string_t *k = bson_string_new(NULL);
      bool indexed = index_key(ix, doc, k, NULL);
      md_doc_t *other = indexed ? md_hmap_get(ix->entries, k->str, k->len) : NULL;
      bson_string_free(k, true);
      if (other && other != self) {
         return dup_error(coll, ix, doc, details, error);
      }
   }
   return true;
}

md_doc_t *
md_coll_unique_holder(const md_coll_t *coll, size_t index_no, const bson_t *doc)
{
   md_index_t *ix = coll->indexes[index_no];
   if (!ix->entries) {
      return NULL;
   }
   bson_string_t *k = bson_string_new(NULL);
   md_doc_t *holder = index_key(ix, doc, k, NULL) ? md_hmap_get(ix->entries, k->str, k->len) : NULL;
   bson_string_free(k, true);
   return holder;
}

static void
index_entries(md_coll_t *coll, md_doc_t *d, const bson_t *doc, bool add)
{
   for (size_t i = 1; i < coll->n_indexes; i++) {
      md_index_t *ix = coll->indexes[i];
      if (!ix->entries) {
         continue;
      }
      bson_string_t *k = bson_string_new(NULL);
      if (index_key(ix, doc, k, NULL)) {
         if (add) {
            md_hmap_put(ix->entries, k->str, k->len, d);
         } else if (md_hmap_get(ix->entries, k->str, k->len) == d) {
            md_hmap_remove(ix->entries, k->str, k->len);
         }
      }
      bson_string_free(k, true);
   }
}

/* Appends `d` in natural order. */
static md_doc_t *
link_doc(md_coll_t *coll, md_doc_t *d)
{
   d->prev = coll->tail;
   if (coll->tail) {
      coll->tail->next = d;
   } else {
      coll->head = d;
   }
   coll->tail = d;
   coll->count++;
   return d;
}

void
md_coll_append_unindexed(md_coll_t *coll, bson_t *doc)
{
   md_doc_t *d = calloc(1, sizeof *d);
   d->bson = doc;
   link_doc(coll, d);
}

bool
md_coll_insert(md_coll_t *coll, bson_t *doc, md_doc_t **out, bson_t *details, bson_error_t *error)
{
   bson_string_t *k = bson_string_new(NULL);
   bool ok = id_key(doc, k);
   if (!ok) {
      tm_error_set(error, 2, "document to insert has no _id");
   } else if (md_hmap_get(coll->ids, k->str, k->len)) {
      ok = dup_error(coll, coll->indexes[0], doc, details, error);
   } else {
      ok = check_unique(coll, doc, NULL, details, error);
   }
   if (ok) {
      md_store_notify_doc(coll, doc);
      md_doc_t *d = calloc(1, sizeof *d);
      d->bson = doc;
      link_doc(coll, d);
      md_hmap_put(coll->ids, k->str, k->len, d);
      index_entries(coll, d, doc, true);
      if (out) {
         *out = d;
      }
   }
   bson_string_free(k, true);
   return ok;
}

bool
md_coll_replace(md_coll_t *coll, md_doc_t *d, bson_t *bson, bson_t *details, bson_error_t *error)
{
   if (!check_unique(coll, bson, d, details, error)) {
      return false;
   }
   md_store_notify_doc(coll, d->bson);
   index_entries(coll, d, d->bson, false);
   bson_destroy(d->bson);
   d->bson = bson;
   index_entries(coll, d, d->bson, true);
   return true;
}

void
md_coll_remove(md_coll_t *coll, md_doc_t *d)
{
   md_store_notify_doc(coll, d->bson);
   bson_string_t *k = bson_string_new(NULL);
   if (id_key(d->bson, k)) {
      md_hmap_remove(coll->ids, k->str, k->len);
   }
   bson_string_free(k, true);
   index_entries(coll, d, d->bson, false);
   if (d->prev) {
      d->prev->next = d->next;
   } else {
      coll->head = d->next;
   }
   if (d->next) {
      d->next->prev = d->prev;
   } else {
      coll->tail = d->prev;
   }
   coll->count--;
   bson_destroy(d->bson);
   free(d);
}

void
md_coll_apply_changes(md_coll_t *coll, md_change_t *changes, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      md_store_notify_doc(coll, changes[i].live ? changes[i].live->bson : changes[i].next);
   }
   /* Old keys out first, then the new versions in: a key may pass from one document to
    * another within the batch. */
   for (size_t i = 0; i < n; i++) {
      if (changes[i].live) {
         index_entries(coll, changes[i].live, changes[i].live->bson, false);
      }
   }
   for (size_t i = 0; i < n; i++) {
      md_change_t *ch = &changes[i];
      if (!ch->next) {
         md_coll_remove(coll, ch->live);
      } else if (ch->live) {
         bson_destroy(ch->live->bson);
         ch->live->bson = ch->next;
      } else {
         bson_string_t *k = bson_string_new(NULL);
         id_key(ch->next, k);
         ch->live = calloc(1, sizeof *ch->live);
         ch->live->bson = ch->next;
         link_doc(coll, ch->live);
         md_hmap_put(coll->ids, k->str, k->len, ch->live);
         bson_string_free(k, true);
      }
   }
   for (size_t i = 0; i < n; i++) {
      if (changes[i].next) {
         index_entries(coll, changes[i].live, changes[i].next, true);
      }
      changes[i].next = NULL;
   }
}
