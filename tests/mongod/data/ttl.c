/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The TTL monitor's pass: under the data set's lock, it deletes the documents whose
 * TTL-indexed date has expired, through the same write path as a delete command (logged, so
 * change streams see them; waiting for transactions that hold them). The thread that runs
 * it every --ttl-interval seconds is the server's (net/ttl-thread.c).
 */
#include "data/ttl.h"

#include <stdlib.h>
#include <sys/time.h>

#include "data/write.h"

static int64_t
wall_ms(void)
{
   struct timeval tv;
   gettimeofday(&tv, NULL);
   return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* The earliest date at `path` (a date, or an array holding dates), or false if none. */
static bool
earliest_date(const bson_t *doc, const char *path, int64_t *out)
{
   bson_value_t v;
   if (!tm_path_get(doc, path, &v)) {
      return false;
   }
   if (v.value_type == BSON_TYPE_DATE_TIME) {
      *out = v.value.v_datetime;
      return true;
   }
   bool found = false;
   bson_iter_t it;
   if (v.value_type == BSON_TYPE_ARRAY &&
       bson_iter_init_from_data(&it, v.value.v_doc.data, v.value.v_doc.data_len)) {
      while (bson_iter_next(&it)) {
         if (BSON_ITER_HOLDS_DATE_TIME(&it) && (!found || bson_iter_date_time(&it) < *out)) {
            *out = bson_iter_date_time(&it);
            found = true;
         }
      }
   }
   return found;
}

static size_t
expire_index(md_dataset_t *ds, md_coll_t *coll, const md_index_t *ix, int64_t now)
{
   bson_iter_t key;
   if (!bson_iter_init(&key, ix->key) || !bson_iter_next(&key)) {
      return 0;
   }
   const char *path = bson_iter_key(&key);
   size_t n = 0;
   md_doc_t *d = coll->head;
   while (d) {
      md_doc_t *next = d->next;
      int64_t when;
      if ((!ix->partial || tm_matcher_match(ix->partial, d->bson, NULL)) &&
          earliest_date(d->bson, path, &when) && when + ix->expire_after * 1000 <= now) {
         bson_error_t error;
         /* A document an open transaction holds waits for a later pass. */
         n += md_write_delete_doc(ds, coll, d, &error);
      }
      d = next;
   }
   return n;
}

size_t
md_ttl_pass(md_dataset_t *ds)
{
   int64_t now = wall_ms();
   size_t n = 0;
   for (md_db_t *db = ds->store->dbs; db; db = db->next) {
      for (md_coll_t *coll = db->colls; coll; coll = coll->next) {
         for (size_t i = 0; i < coll->n_indexes; i++) {
            md_index_t *ix = coll->indexes[i];
            /* mongod only expires through single-field TTL indexes. */
            if (ix->expire_after >= 0 && bson_count_keys(ix->key) == 1) {
               n += expire_index(ds, coll, ix, now);
            }
         }
      }
   }
   return n;
}
