/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Unit tests: the clear batches handed to the clearer thread (relay/store/clearer.h). No server:
 * only how a job owns its statements.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "store/clearer.h"

/* An array of @n event ids, large enough that libbson keeps it on the heap (a bson_t over
 * 120 bytes is not inline). */
static bson_t *
ids_array(size_t n, int tag)
{
   bson_t *ids = bson_new();
   for (size_t i = 0; i < n; i++) {
      char key[16], id[64];
      bson_snprintf(key, sizeof key, "%zu", i);
      bson_snprintf(id, sizeof id, "%08d-0000-4000-8000-%012zu", tag, i);
      bson_append_utf8(ids, key, -1, id, -1);
   }
   return ids;
}

/* F1 (chaos mongo_clear_dropped): after a failed clear the next batch holds more entities;
 * growing the statement array moved statements whose ids were a bson_t stored inline (a
 * heap bson_t points into itself), and the clearer thread crashed appending them. Every
 * statement must stay readable, with its own ids, however large the job grows. */
Test(clear_job, statements_survive_growth)
{
   relay_clear_job_t *job = relay_clear_job_new(false);
   const size_t n_stmts = 1000, n_ids = 8;
   char entity[4];

   for (size_t i = 0; i < n_stmts; i++) {
      bson_value_t id;
      bson_t *ids = ids_array(n_ids, (int)i);
      id.value_type = BSON_TYPE_INT64;
      id.value.v_int64 = (int64_t)i;
      relay_clear_stmt_t *s = relay_clear_job_begin(job, 0, &id, -1, &entity[i % 4]);
      bson_iter_t it;
      cr_assert(bson_iter_init(&it, ids));
      while (bson_iter_next(&it)) {
         relay_clear_job_add_id(job, s, bson_iter_utf8(&it, NULL));
      }
      bson_destroy(ids); /* the job builds its own */
   }
   cr_assert_eq(job->n, n_stmts);
   cr_assert_eq(job->n_events, n_stmts * n_ids);
   for (size_t i = 0; i < n_stmts; i++) {
      relay_clear_stmt_t *s = &job->stmts[i];
      bson_t *want = ids_array(n_ids, (int)i);
      bson_t doc = BSON_INITIALIZER, arr;
      cr_assert_eq(s->id.value.v_int64, (int64_t)i);
      cr_assert_eq(s->entity, &entity[i % 4]);
      cr_assert(!s->failed);
      cr_assert_eq(bson_count_keys(s->ids), n_ids);
      cr_assert_eq(bson_compare(s->ids, want), 0, "statement %zu lost its ids", i);
      /* What the clearer does with them (clearer.c add_update). */
      cr_assert(BSON_APPEND_ARRAY_BEGIN(&doc, "$in", &arr));
      cr_assert(bson_concat(&arr, s->ids));
      cr_assert(bson_append_array_end(&doc, &arr));
      cr_assert(BSON_APPEND_ARRAY(&doc, "again", s->ids));
      bson_destroy(&doc);
      bson_destroy(want);
   }
   relay_clear_job_free(job);
}

/* The writer's way (no copy of the ids): statements begun empty and filled id by id hold the
 * same arrays, also across growth of the statement array. */
Test(clear_job, begin_and_add_ids)
{
   relay_clear_job_t *job = relay_clear_job_new(false);
   const size_t n_stmts = 300, n_ids = 5;
   char entity[1];

   for (size_t i = 0; i < n_stmts; i++) {
      bson_value_t id = {.value_type = BSON_TYPE_INT64, .value.v_int64 = (int64_t)i};
      bson_t *want = ids_array(n_ids, (int)i);
      bson_iter_t it;
      relay_clear_stmt_t *s = relay_clear_job_begin(job, 1, &id, -1, entity);
      cr_assert(bson_iter_init(&it, want));
      while (bson_iter_next(&it)) {
         relay_clear_job_add_id(job, s, bson_iter_utf8(&it, NULL));
      }
      bson_destroy(want);
   }
   cr_assert_eq(job->n_events, n_stmts * n_ids);
   for (size_t i = 0; i < n_stmts; i++) {
      bson_t *want = ids_array(n_ids, (int)i);
      cr_assert_eq(job->stmts[i].coll, 1);
      cr_assert_eq(job->stmts[i].n_ids, n_ids);
      cr_assert_eq(bson_compare(job->stmts[i].ids, want), 0, "statement %zu", i);
      bson_destroy(want);
   }
   relay_clear_job_free(job);
}

Test(clear_job, free_is_null_safe_and_empty_job_is_fine)
{
   relay_clear_job_t *job = relay_clear_job_new(false);
   cr_assert_eq(job->n, 0);
   relay_clear_job_free(job);
   relay_clear_job_free(NULL);
}

/* With an archive the job carries each event as stored, in the order of its ids, and the
 * partition (store/archive.c builds the entries from them); without one it copies nothing. */
Test(clear_job, archive_jobs_carry_the_events)
{
   for (int archive = 0; archive < 2; archive++) {
      relay_clear_job_t *job = relay_clear_job_new(archive);
      bson_value_t id = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 7};
      relay_clear_stmt_t *s = relay_clear_job_begin(job, 0, &id, 5, NULL);
      relay_event_t evs[3];
      for (int i = 0; i < 3; i++) {
         char eid[40];
         bson_snprintf(eid, sizeof eid, "00000000-0000-4000-8000-00000000000%d", i);
         bson_t *doc = BCON_NEW("id", BCON_UTF8(eid), "seq", BCON_INT64(i + 1), "type", "t", "time",
                                BCON_DATE_TIME(1), "data", "{", "}");
         bson_value_t v = {.value_type = BSON_TYPE_DOCUMENT};
         v.value.v_doc.data = (uint8_t *)bson_get_data(doc);
         v.value.v_doc.data_len = doc->len;
         cr_assert(relay_event_parse(&v, &evs[i]), "%s", evs[i].reason);
         bson_destroy(doc);
         relay_clear_job_add_event(job, s, &evs[i]);
      }
      cr_assert_eq(s->part, 5);
      cr_assert_eq(s->n_ids, 3);
      cr_assert_eq(job->n_events, 3);
      if (!archive) {
         cr_assert_null(s->events);
      } else {
         bson_iter_t it, ev;
         int n = 0;
         cr_assert(bson_iter_init(&it, s->events));
         while (bson_iter_next(&it)) {
            cr_assert(BSON_ITER_HOLDS_DOCUMENT(&it));
            cr_assert(bson_iter_recurse(&it, &ev) && bson_iter_find(&ev, "seq"));
            cr_assert_eq(bson_iter_int64(&ev), ++n);
         }
         cr_assert_eq(n, 3);
      }
      for (int i = 0; i < 3; i++) {
         relay_event_cleanup(&evs[i]);
      }
      relay_clear_job_free(job);
   }
}

/* mongos 6.0 takes an updateOne on a sharded collection only with the full shard key or an
 * exact _id: the clear names its document by {_id: <id>} and nothing else, whatever the id's
 * type (relay/README.md, "Sharded clusters"). */
Test(clear_job, the_clear_names_its_document_by_exact_id)
{
   relay_clear_job_t *job = relay_clear_job_new(false);
   bson_t *doc_id = BCON_NEW("tenant", "t1", "n", BCON_INT32(7));
   bson_value_t ids[2] = {{.value_type = BSON_TYPE_INT64, .value.v_int64 = 42}};
   char entity[1];

   ids[1].value_type = BSON_TYPE_DOCUMENT;
   ids[1].value.v_doc.data = (uint8_t *)bson_get_data(doc_id);
   ids[1].value.v_doc.data_len = doc_id->len;
   for (int i = 0; i < 2; i++) {
      relay_clear_stmt_t *s = relay_clear_job_begin(job, 0, &ids[i], -1, entity);
      bson_t filter = BSON_INITIALIZER, *want = bson_new();
      bson_append_value(want, "_id", 3, &ids[i]);
      relay_clear_stmt_filter(s, &filter);
      cr_assert_eq(bson_compare(&filter, want), 0, "id %d", i);
      bson_destroy(want);
      bson_destroy(&filter);
   }
   relay_clear_job_free(job);
   bson_destroy(doc_id);
}
