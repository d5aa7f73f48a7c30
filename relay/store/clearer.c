/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Why a clear is safe is explained at the top of writer.c; why the archive is written first,
 * in archive.h. The archive collection, its schema flag and the metrics' archive series are
 * the clearer thread's alone.
 */
#include "store/clearer.h"

#include <pthread.h>
#include <string.h>

#include <mongoc/mongoc.h>
#include <outbox/archive.h>

#include "util/log.h"
#include "store/archive.h"
#include "store/store.h"
#include "util/error.h"
#include "util/util.h"

struct relay_clearer_t {
   const relay_config_t *cfg;
   mongoc_client_t *client;
   mongoc_collection_t **colls;
   mongoc_collection_t *archive; /* NULL without --archive-collection */
   bool archive_ready;           /* its validator and indexes are installed */
   int64_t archive_tried_us;     /* when they were last tried (monotonic) */
   char *member;                 /* this process's instance id, recorded in archive entries */
   relay_metrics_t *metrics;
   pthread_t thread;
   bool started;
   pthread_mutex_t lock;
   pthread_cond_t cond;
   relay_clear_job_t *todo, *done;
   bool busy, stop;
   void (*wake)(void *);
   void *wake_ctx;
};

static bool
add_update(const relay_config_t *cfg, mongoc_bulk_operation_t *bulk, relay_clear_stmt_t *s,
           const bson_t *opts)
{
   bson_t q = BSON_INITIALIZER, u = BSON_INITIALIZER, pull, cond, in;
   bson_error_t error;
   bool ok;

   relay_clear_stmt_filter(s, &q);
   BSON_APPEND_DOCUMENT_BEGIN(&u, "$pull", &pull);
   BSON_APPEND_DOCUMENT_BEGIN(&pull, cfg->events_field, &cond);
   BSON_APPEND_DOCUMENT_BEGIN(&cond, "id", &in);
   BSON_APPEND_ARRAY(&in, "$in", s->ids);
   bson_append_document_end(&cond, &in);
   bson_append_document_end(&pull, &cond);
   bson_append_document_end(&u, &pull);
   ok = mongoc_bulk_operation_update_one_with_opts(bulk, &q, &u, opts, &error);
   if (!ok) {
      relay_log(RELAY_LOG_ERROR, "clear", "cannot build a clear: %s", error.message);
   }
   bson_destroy(&q);
   bson_destroy(&u);
   return ok;
}

/* Marks every statement of a failed bulk write as failed. The reply cannot tell which
 * statements ran: after a command error or a dropped connection mongoc's reply still has a
 * (then empty) writeErrors array, and trusting it treated the whole batch as cleared while
 * its events stayed in their documents for good. A clear is idempotent ($pull by event id),
 * so running the statements that did succeed once more is harmless. */
static void
mark_failed(relay_clear_stmt_t **stmts, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      stmts[i]->failed = true;
   }
}

/* Whether --archive-ttl is in force (an index on publishedAt with that expireAfterSeconds,
 * whatever its name): outbox_relay_archive_ttl_missing. */
static void
check_ttl(relay_clearer_t *c)
{
   bson_error_t error;
   int64_t ttl = 0;
   if (c->cfg->archive_ttl_s <= 0) {
      return;
   }
   if (!outbox_archive_ttl_seconds(c->archive, &ttl, &error)) {
      return; /* unknown: the gauge keeps its value */
   }
   relay_metrics_set(c->metrics, RELAY_G_ARCHIVE_TTL_MISSING,
                     ttl == c->cfg->archive_ttl_s ? 0.0 : 1.0);
}

/* The first time (and after a failure, with a batch at most once a minute): the archive's
 * validator and indexes. A failure does not stop archiving: the entries are still written,
 * unchecked. */
static void
prepare_archive(relay_clearer_t *c)
{
   bson_error_t error;
   int64_t now = bson_get_monotonic_time();
   if (c->archive_ready || (c->archive_tried_us && now - c->archive_tried_us < 60 * 1000000)) {
      return;
   }
   c->archive_tried_us = now;
   c->archive_ready = relay_archive_ensure(c->archive, c->cfg, &error);
   if (!c->archive_ready) {
      relay_log(RELAY_LOG_WARNING, "clear",
                "cannot install the validator and indexes of archive %s (archiving goes on; "
                "retried in a minute): %s",
                c->cfg->archive_collection, error.message);
   }
   check_ttl(c);
}

/* Archives the @n statements @mine (of collection @coll) before they are cleared; those whose
 * events are not all archived get ->failed and are not cleared. Returns false on a failure. */
static bool
archive_first(relay_clearer_t *c, relay_clear_job_t *job, size_t coll, relay_clear_stmt_t **mine,
              size_t n)
{
   bson_error_t error;
   int64_t inserted = 0, started = bson_get_monotonic_time();
   bool ok;

   prepare_archive(c);
   ok = relay_archive_write(c->archive, c->cfg, c->member, mine, n, &inserted, &error);
   relay_series_observe(relay_metrics_series(c->metrics), RELAY_H_ARCHIVE_WRITE, coll,
                        (double)(bson_get_monotonic_time() - started) / 1e6);
   relay_metrics_add(c->metrics, RELAY_M_ARCHIVED, (uint64_t)inserted);
   if (ok) {
      return true;
   }
   relay_metrics_add(c->metrics, RELAY_M_ARCHIVE_FAILURES, 1);
   /* The main thread logs it with the clears' failures (once per run, see writer.c); the
    * domain and code stay mongoc's, so a refusal (13) pauses publishing as for clears. */
   if (job->n_failed == 0) {
      bson_set_error(&job->error, error.domain, error.code,
                     "archiving to %s failed, so its events stay pending: %s",
                     c->cfg->archive_collection, error.message);
   }
   for (size_t i = 0; i < n; i++) {
      job->n_failed += mine[i]->failed;
   }
   return false;
}

/* The statements of collection @coll not failed yet into @mine; returns how many. */
static size_t
select_coll(relay_clear_job_t *job, size_t coll, relay_clear_stmt_t **mine)
{
   size_t n = 0;
   for (size_t i = 0; i < job->n; i++) {
      if (job->stmts[i].coll == (int)coll && !job->stmts[i].failed) {
         mine[n++] = &job->stmts[i];
      }
   }
   return n;
}

/* The clear of @n statements @mine (those not failed), as one unordered bulk write. */
static void
clear_coll(relay_clearer_t *c, relay_clear_job_t *job, size_t coll, relay_clear_stmt_t **mine,
           size_t n)
{
   /* We build every update ourselves ($pull of ids that passed the event contract, under a
    * field name the config checked): mongoc's validation of each one (a bson_validate()
    * walk and a pipeline test) was a fifth of the clearing thread's instructions. */
   bson_t stmt_opts = BSON_INITIALIZER, opts = BSON_INITIALIZER, reply;
   bson_error_t error;
   mongoc_bulk_operation_t *bulk;
   size_t added = 0;

   BSON_APPEND_BOOL(&stmt_opts, "validate", false);
   BSON_APPEND_BOOL(&opts, "ordered", false);
   bulk = mongoc_collection_create_bulk_operation_with_opts(c->colls[coll], &opts);
   for (size_t i = 0; i < n; i++) {
      if (mine[i]->failed) {
         continue; /* not archived */
      }
      if (add_update(c->cfg, bulk, mine[i], &stmt_opts)) {
         mine[added++] = mine[i];
      } else {
         mine[i]->failed = true;
      }
   }
   if (added > 0 && !mongoc_bulk_operation_execute(bulk, &reply, &error)) {
      /* The main thread logs it (once per run of failures, see writer.c). */
      if (job->n_failed == 0) {
         job->error = error;
      }
      job->n_failed += added;
      mark_failed(mine, added);
   }
   if (added > 0) {
      bson_destroy(&reply);
   }
   mongoc_bulk_operation_destroy(bulk);
   bson_destroy(&opts);
   bson_destroy(&stmt_opts);
}

/* True when every failed statement of @mine failed because the archive can never take one
 * of its events (s->refused: another entity's event holds its id, or its entry is too
 * large): those events are dead-lettered by the writer, so the archive is not failing. A
 * statement that also holds a retryable failure is retried; if it fails again it has no
 * refused event left, and counts then. */
static bool
only_refusals(relay_clear_stmt_t **mine, size_t n)
{
   for (size_t i = 0; i < n; i++) {
      if (mine[i]->failed && !mine[i]->refused) {
         return false;
      }
   }
   return true;
}

/* Per collection: the archive write (with an archive), then one unordered bulk clear. */
static void
run_job(relay_clearer_t *c, relay_clear_job_t *job)
{
   relay_clear_stmt_t **mine = bson_malloc(job->n * sizeof *mine);
   bool archive_failed = false;

   for (size_t coll = 0; coll < c->cfg->n_collections; coll++) {
      size_t n = select_coll(job, coll, mine);
      if (n == 0) {
         continue;
      }
      /* outbox_relay_archive_failing (and /healthz) tells of writes that keep failing,
       * not of an event dead-lettered for good (issue 33, fuzz finding F4: it stayed 1
       * until another batch was archived). */
      if (c->archive && job->archive && !archive_first(c, job, coll, mine, n) &&
          !only_refusals(mine, n)) {
         archive_failed = true;
      }
      clear_coll(c, job, coll, mine, n);
   }
   if (c->archive && job->archive) {
      relay_metrics_set(c->metrics, RELAY_G_ARCHIVE_FAILING, archive_failed ? 1.0 : 0.0);
   }
   bson_free(mine);
}

static void *
run(void *arg)
{
   relay_clearer_t *c = arg;

   pthread_mutex_lock(&c->lock);
   while (!c->stop) {
      relay_clear_job_t *job = c->todo;
      if (!job) {
         pthread_cond_wait(&c->cond, &c->lock);
         continue;
      }
      c->todo = NULL;
      pthread_mutex_unlock(&c->lock);
      run_job(c, job);
      pthread_mutex_lock(&c->lock);
      c->done = job;
      pthread_mutex_unlock(&c->lock);
      c->wake(c->wake_ctx);
      pthread_mutex_lock(&c->lock);
   }
   pthread_mutex_unlock(&c->lock);
   return NULL;
}

relay_clearer_t *
relay_clearer_new(const relay_config_t *cfg, relay_metrics_t *metrics, const char *member,
                  void (*wake)(void *), void *wake_ctx, bson_error_t *error)
{
   relay_clearer_t *c;
   mongoc_client_t *client = relay_store_client_new(cfg, "outbox-relay-clear", error);

   if (!client) {
      return NULL;
   }
   c = bson_malloc0(sizeof *c);
   c->cfg = cfg;
   c->client = client;
   c->colls = bson_malloc0(cfg->n_collections * sizeof *c->colls);
   for (size_t i = 0; i < cfg->n_collections; i++) {
      c->colls[i] = mongoc_client_get_collection(client, cfg->database, cfg->collections[i]);
   }
   if (cfg->archive_collection) {
      c->archive = mongoc_client_get_collection(client, cfg->database, cfg->archive_collection);
   }
   c->metrics = metrics;
   c->member = bson_strdup(member);
   c->wake = wake;
   c->wake_ctx = wake_ctx;
   pthread_mutex_init(&c->lock, NULL);
   pthread_cond_init(&c->cond, NULL);
   if (pthread_create(&c->thread, NULL, run, c) != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_THREAD,
                     "cannot start the clearing thread");
      relay_clearer_destroy(c);
      return NULL;
   }
   c->started = true;
   return c;
}

bool
relay_clearer_busy(relay_clearer_t *c)
{
   return c->busy;
}

void
relay_clearer_submit(relay_clearer_t *c, relay_clear_job_t *job)
{
   BSON_ASSERT(!c->busy);
   pthread_mutex_lock(&c->lock);
   c->todo = job;
   c->busy = true;
   pthread_cond_signal(&c->cond);
   pthread_mutex_unlock(&c->lock);
}

relay_clear_job_t *
relay_clearer_take(relay_clearer_t *c)
{
   relay_clear_job_t *job;
   pthread_mutex_lock(&c->lock);
   job = c->done;
   c->done = NULL;
   pthread_mutex_unlock(&c->lock);
   if (job) {
      c->busy = false;
   }
   return job;
}

void
relay_clearer_destroy(relay_clearer_t *c)
{
   if (!c) {
      return;
   }
   if (c->started) {
      relay_thread_stop(&c->lock, &c->cond, &c->stop, c->thread);
   }
   relay_clear_job_free(c->todo);
   relay_clear_job_free(c->done);
   for (size_t i = 0; c->colls && i < c->cfg->n_collections; i++) {
      mongoc_collection_destroy(c->colls[i]);
   }
   bson_free(c->colls);
   mongoc_collection_destroy(c->archive);
   mongoc_client_destroy(c->client);
   pthread_cond_destroy(&c->cond);
   pthread_mutex_destroy(&c->lock);
   bson_free(c->member);
   bson_free(c);
}
