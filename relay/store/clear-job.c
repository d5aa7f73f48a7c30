/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Building clear jobs (clear-job.h): the writer's side, main thread. Nothing here is shared.
 */
#include "store/clear-job.h"

#include <string.h>

relay_clear_job_t *
relay_clear_job_new(bool archive)
{
   relay_clear_job_t *job = bson_malloc0(sizeof(relay_clear_job_t));
   job->archive = archive;
   return job;
}

relay_clear_stmt_t *
relay_clear_job_begin(relay_clear_job_t *job, int coll, const bson_value_t *id, int part,
                      void *entity)
{
   relay_clear_stmt_t *s;
   if (job->n == job->cap) {
      job->cap = job->cap ? job->cap * 2 : 64;
      job->stmts = bson_realloc(job->stmts, job->cap * sizeof *job->stmts);
   }
   s = &job->stmts[job->n++];
   memset(s, 0, sizeof *s);
   s->coll = coll;
   bson_value_copy(id, &s->id);
   s->ids = bson_new();
   s->part = part;
   s->events = job->archive ? bson_new() : NULL;
   s->entity = entity;
   return s;
}

void
relay_clear_job_add_id(relay_clear_job_t *job, relay_clear_stmt_t *s, const char *event_id)
{
   char key[16];
   const char *k;
   bson_uint32_to_string(s->n_ids++, &k, key, sizeof key);
   bson_append_utf8(s->ids, k, -1, event_id, -1);
   job->n_events++;
}

void
relay_clear_job_add_event(relay_clear_job_t *job, relay_clear_stmt_t *s, const relay_event_t *ev)
{
   if (s->events) {
      char key[16];
      const char *k;
      bson_uint32_to_string(s->n_ids, &k, key, sizeof key);
      bson_append_value(s->events, k, -1, &ev->raw);
   }
   relay_clear_job_add_id(job, s, ev->id);
}

const char relay_clear_refused_by_validator[] =
   "the archive's validator refuses the event (121) while it takes other events";

void
relay_clear_job_free(relay_clear_job_t *job)
{
   if (!job) {
      return;
   }
   for (size_t i = 0; i < job->n; i++) {
      bson_value_destroy(&job->stmts[i].id);
      bson_destroy(job->stmts[i].ids);
      bson_destroy(job->stmts[i].events);
      bson_free(job->stmts[i].refused);
   }
   bson_free(job->stmts);
   bson_free(job);
}

void
relay_clear_stmt_filter(const relay_clear_stmt_t *s, bson_t *filter)
{
   bson_append_value(filter, "_id", 3, &s->id);
}
