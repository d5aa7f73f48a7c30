/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Index creation, removal, lookup for hints and membership (what a hinted index holds). Only unique
 * indexes have entries (their purpose here is enforcement); queries scan, which is fast enough for
 * a test server.
 */
#include <stdlib.h>
#include <string.h>

#include "data/keyenc.h"
#include "data/store.h"

static bool
same_key(const bson_t *a, const bson_t *b)
{
   bson_value_t va = {.value_type = BSON_TYPE_DOCUMENT};
   bson_value_t vb = {.value_type = BSON_TYPE_DOCUMENT};
   va.value.v_doc.data = (uint8_t *)bson_get_data(a);
   va.value.v_doc.data_len = a->len;
   vb.value.v_doc.data = (uint8_t *)bson_get_data(b);
   vb.value.v_doc.data_len = b->len;
   bson_string_t *ka = bson_string_new(NULL), *kb = bson_string_new(NULL);
   md_keyenc_append(ka, &va);
   md_keyenc_append(kb, &vb);
   bool same = ka->len == kb->len && memcmp(ka->str, kb->str, ka->len) == 0;
   bson_string_free(ka, true);
   bson_string_free(kb, true);
   return same;
}

md_index_t *
md_coll_find_index(const md_coll_t *coll, const bson_value_t *hint)
{
   for (size_t i = 0; i < coll->n_indexes; i++) {
      md_index_t *ix = coll->indexes[i];
      if (hint->value_type == BSON_TYPE_UTF8 && strcmp(ix->name, hint->value.v_utf8.str) == 0) {
         return ix;
      }
      if (hint->value_type == BSON_TYPE_DOCUMENT) {
         bson_t h;
         if (bson_init_static(&h, hint->value.v_doc.data, hint->value.v_doc.data_len) &&
             same_key(&h, ix->key)) {
            return ix;
         }
      }
   }
   return NULL;
}

bool
md_index_contains(const md_index_t *ix, const bson_t *doc)
{
   bson_iter_t it;
   bson_value_t v;
   if (ix->partial && !tm_matcher_match(ix->partial, doc, NULL)) {
      return false;
   }
   if (!ix->sparse) {
      return true;
   }
   bson_iter_init(&it, ix->key);
   while (bson_iter_next(&it)) {
      if (tm_path_get(doc, bson_iter_key(&it), &v)) {
         return true;
      }
   }
   return false;
}

static const char *const known_options[] = {"v",
                                            "key",
                                            "name",
                                            "unique",
                                            "sparse",
                                            "partialFilterExpression",
                                            "expireAfterSeconds",
                                            "background",
                                            "hidden",
                                            "weights",
                                            "default_language",
                                            "language_override",
                                            "textIndexVersion",
                                            "2dsphereIndexVersion",
                                            "bits",
                                            "min",
                                            "max",
                                            "ns",
                                            NULL};

static bool
check_spec(const bson_t *spec, bson_error_t *error)
{
   bson_iter_t it;
   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      bool known = false;
      for (int i = 0; known_options[i]; i++) {
         known = known || strcmp(k, known_options[i]) == 0;
      }
      if (!known) {
         return tm_error_set(error, 197, "The field '%s' is not valid for an index specification",
                             k);
      }
   }
   if (!bson_iter_init_find(&it, spec, "key") || !BSON_ITER_HOLDS_DOCUMENT(&it)) {
      return tm_error_set(error, 9,
                          "The 'key' field is a required property of an index "
                          "specification");
   }
   return true;
}

static md_index_t *
index_from_spec(const bson_t *spec, bson_error_t *error)
{
   bson_iter_t it;
   md_index_t *ix = calloc(1, sizeof *ix);
   ix->expire_after = -1;
   ix->spec = bson_new();
   BSON_APPEND_INT32(ix->spec, "v", 2);
   bson_iter_init_find(&it, spec, "key");
   uint32_t len;
   const uint8_t *data;
   bson_iter_document(&it, &len, &data);
   ix->key = bson_new_from_data(data, len);
   BSON_APPEND_DOCUMENT(ix->spec, "key", ix->key);
   if (bson_iter_init_find(&it, spec, "name") && BSON_ITER_HOLDS_UTF8(&it)) {
      ix->name = strdup(bson_iter_utf8(&it, NULL));
   } else {
      bson_string_t *n = bson_string_new(NULL);
      bson_iter_t k;
      bson_iter_init(&k, ix->key);
      while (bson_iter_next(&k)) {
         bson_string_append_printf(n, "%s%s_%d", n->len ? "_" : "", bson_iter_key(&k),
                                   (int)bson_iter_as_int64(&k));
      }
      ix->name = bson_string_free(n, false);
   }
   BSON_APPEND_UTF8(ix->spec, "name", ix->name);
   bson_iter_init(&it, spec);
   while (bson_iter_next(&it)) {
      const char *k = bson_iter_key(&it);
      if (strcmp(k, "key") == 0 || strcmp(k, "name") == 0 || strcmp(k, "v") == 0 ||
          strcmp(k, "ns") == 0) {
         continue;
      }
      bson_append_value(ix->spec, k, -1, bson_iter_value(&it));
      if (strcmp(k, "unique") == 0) {
         ix->unique = bson_iter_as_bool(&it);
      } else if (strcmp(k, "sparse") == 0) {
         ix->sparse = bson_iter_as_bool(&it);
      } else if (strcmp(k, "expireAfterSeconds") == 0) {
         ix->expire_after = bson_iter_as_int64(&it);
      } else if (strcmp(k, "partialFilterExpression") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_t pf;
         bson_iter_document(&it, &len, &data);
         bson_init_static(&pf, data, len);
         ix->partial = tm_matcher_new(&pf, error);
         if (!ix->partial) {
            bson_destroy(ix->spec);
            bson_destroy(ix->key);
            free(ix->name);
            free(ix);
            return NULL;
         }
      }
   }
   if (ix->unique) {
      ix->entries = md_hmap_new();
   }
   return ix;
}

static void
free_index(md_index_t *ix)
{
   free(ix->name);
   bson_destroy(ix->spec);
   bson_destroy(ix->key);
   tm_matcher_destroy(ix->partial);
   md_hmap_destroy(ix->entries);
   free(ix);
}

/* Fills a new unique index from the existing documents; fails on the first duplicate. */
static bool
build_entries(md_coll_t *coll, md_index_t *ix, bson_error_t *error)
{
   for (md_doc_t *d = coll->head; d; d = d->next) {
      bson_string_t *k = bson_string_new(NULL);
      bson_t kv = BSON_INITIALIZER;
      bool indexed = true;
      bson_iter_t it;
      bson_iter_init(&it, ix->key);
      if (ix->partial && !tm_matcher_match(ix->partial, d->bson, NULL)) {
         indexed = false;
      }
      bool any = false;
      while (indexed && bson_iter_next(&it)) {
         bson_value_t v;
         bool found = tm_path_get(d->bson, bson_iter_key(&it), &v);
         any = any || found;
         md_keyenc_append(k, found ? &v : NULL);
      }
      indexed = indexed && (any || !ix->sparse);
      bool dup = indexed && md_hmap_get(ix->entries, k->str, k->len);
      if (indexed && !dup) {
         md_hmap_put(ix->entries, k->str, k->len, d);
      }
      bson_string_free(k, true);
      bson_destroy(&kv);
      if (dup) {
         return tm_error_set(error, 11000, "E11000 duplicate key error collection: %s.%s index: %s",
                             coll->db->name, coll->name, ix->name);
      }
   }
   return true;
}

bool
md_coll_create_index(md_coll_t *coll, const bson_t *spec, bool *existed, bson_error_t *error)
{
   *existed = false;
   if (!check_spec(spec, error)) {
      return false;
   }
   md_index_t *ix = index_from_spec(spec, error);
   if (!ix) {
      return false;
   }
   for (size_t i = 0; i < coll->n_indexes; i++) {
      md_index_t *o = coll->indexes[i];
      bool name_eq = strcmp(o->name, ix->name) == 0;
      bool key_eq = same_key(o->key, ix->key);
      if (name_eq && key_eq) {
         *existed = true;
         free_index(ix);
         return true;
      }
      if (name_eq || (key_eq && o->unique == ix->unique && !o->partial && !ix->partial)) {
         int code = name_eq ? 86 : 85;
         tm_error_set(error, code,
                      "An existing index has the same %s as the requested index. "
                      "Requested index: %s, existing index: %s",
                      name_eq ? "name" : "key pattern", ix->name, o->name);
         free_index(ix);
         return false;
      }
   }
   if (ix->entries && !build_entries(coll, ix, error)) {
      free_index(ix);
      return false;
   }
   md_store_notify_catalog(coll->db, coll->name, coll);
   coll->indexes = realloc(coll->indexes, (coll->n_indexes + 1) * sizeof *coll->indexes);
   coll->indexes[coll->n_indexes++] = ix;
   return true;
}

bool
md_coll_drop_index(md_coll_t *coll, const char *name, bson_error_t *error)
{
   if (strcmp(name, "_id_") == 0) {
      return tm_error_set(error, 72, "cannot drop _id index");
   }
   for (size_t i = 1; i < coll->n_indexes; i++) {
      if (strcmp(coll->indexes[i]->name, name) == 0) {
         md_store_notify_catalog(coll->db, coll->name, coll);
         free_index(coll->indexes[i]);
         memmove(&coll->indexes[i], &coll->indexes[i + 1],
                 (coll->n_indexes - i - 1) * sizeof *coll->indexes);
         coll->n_indexes--;
         return true;
      }
   }
   return tm_error_set(error, 27, "index not found with name [%s]", name);
}
