/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Why a clear is safe is explained at the top of writer.c; why the archive is written first,
 * in archive.h. The archive's schema flag is the clearer thread's alone. A batch is split
 * into one group per namespace; the groups run on the clear lanes (clear-lanes.h: the
 * clearer thread and CLEAR_LANES - 1 more), each group's statements touched by its lane
 * only, the job's error and failure count under job_lock.
 */
#include "store/clearer.h"

#include <pthread.h>
#include <string.h>

#include <mongoc/mongoc.h>
#include <outbox/archive.h>

#include "util/log.h"
#include "store/archive.h"
#include "store/clear-lanes.h"
#include "store/store.h"
#include "util/error.h"
#include "util/util.h"

/* Bulk writes of one batch in flight at once (to as many namespaces). */
#define CLEAR_LANES 4

/* One namespace's statements of the batch under way. */
typedef struct {
   size_t coll;
   relay_clear_stmt_t **mine;
   size_t n;
   bool archive_failed;
} group_t;

struct relay_clearer_t {
   const relay_config_t *cfg;
   relay_namespaces_t *ns;
   relay_clear_lane_t lane0; /* the clearer thread's client, handles and archive */
   relay_clear_lanes_t *lanes;
   bool archive_ready;       /* its validator and indexes are installed */
   int64_t archive_tried_us; /* when they were last tried (monotonic) */
   /* The batch under way (run_job()): its groups, and the lock of job->error/n_failed. */
   relay_clear_job_t *job;
   group_t *groups;
   pthread_mutex_t job_lock;
   char *member; /* this process's instance id, recorded in archive entries */
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
   if (!outbox_archive_ttl_seconds(c->lane0.archive, &ttl, &error)) {
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
   c->archive_ready = relay_archive_ensure(c->lane0.archive, c->cfg, &error);
   if (!c->archive_ready) {
      relay_log(RELAY_LOG_WARNING, "clear",
                "cannot install the validator and indexes of archive %s (archiving goes on; "
                "retried in a minute): %s",
                c->cfg->archive_collection, error.message);
   }
   check_ttl(c);
}

/* Archives the @n statements @mine (of namespace @coll) before they are cleared; those whose
 * events are not all archived get ->failed and are not cleared. Returns false on a failure. */
static bool
archive_first(relay_clearer_t *c, relay_clear_lane_t *lane, relay_clear_job_t *job, size_t coll,
              relay_clear_stmt_t **mine, size_t n)
{
   bson_error_t error;
   int64_t inserted = 0, started = bson_get_monotonic_time();
   bool ok;
   relay_ns_t ns = {"?", "?", "?", 0, false};

   relay_namespaces_get(c->ns, (int)coll, &ns);
   ok = relay_archive_write(lane->archive, c->cfg, c->member, ns.name, mine, n, &inserted, &error);
   relay_series_observe(relay_metrics_series(c->metrics), RELAY_H_ARCHIVE_WRITE, (size_t)ns.label,
                        (double)(bson_get_monotonic_time() - started) / 1e6);
   relay_metrics_add(c->metrics, RELAY_M_ARCHIVED, (uint64_t)inserted);
   if (ok) {
      return true;
   }
   relay_metrics_add(c->metrics, RELAY_M_ARCHIVE_FAILURES, 1);
   /* The main thread logs it with the clears' failures (once per run, see writer.c); the
    * domain and code stay mongoc's, so a refusal (13) pauses publishing as for clears. */
   pthread_mutex_lock(&c->job_lock);
   if (job->n_failed == 0) {
      bson_set_error(&job->error, error.domain, error.code,
                     "archiving to %s failed, so its events stay pending: %s",
                     c->cfg->archive_collection, error.message);
   }
   for (size_t i = 0; i < n; i++) {
      job->n_failed += mine[i]->failed;
   }
   pthread_mutex_unlock(&c->job_lock);
   return false;
}

static int
by_coll(const void *a, const void *b)
{
   const relay_clear_stmt_t *x = *(relay_clear_stmt_t *const *)a,
                            *y = *(relay_clear_stmt_t *const *)b;
   return x->coll < y->coll ? -1 : x->coll > y->coll;
}

/* The statements not failed yet into @all, ordered by namespace (one sort per batch, not a
 * pass per namespace: the cost stays per event with a thousand namespaces); returns how
 * many. */
static size_t
select_all(relay_clear_job_t *job, relay_clear_stmt_t **all)
{
   size_t n = 0;
   for (size_t i = 0; i < job->n; i++) {
      if (!job->stmts[i].failed) {
         all[n++] = &job->stmts[i];
      }
   }
   qsort(all, n, sizeof *all, by_coll);
   return n;
}

/* The clear of @n statements @mine (those not failed), as one unordered bulk write. */
static void
clear_coll(relay_clearer_t *c, relay_clear_lane_t *lane, relay_clear_job_t *job, size_t coll,
           relay_clear_stmt_t **mine, size_t n)
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
   bulk = mongoc_collection_create_bulk_operation_with_opts(
      relay_ns_handle(&lane->colls, c->ns, lane->client, (int)coll), &opts);
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
      pthread_mutex_lock(&c->job_lock);
      if (job->n_failed == 0) {
         job->error = error;
      }
      job->n_failed += added;
      pthread_mutex_unlock(&c->job_lock);
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

/* One namespace's group, on whichever lane took it: the archive write (with an archive),
 * then one unordered bulk clear. outbox_relay_archive_failing (and /healthz) tells of
 * writes that keep failing, not of an event dead-lettered for good (issue 33, fuzz finding
 * F4: it stayed 1 until another batch was archived). */
static void
run_group(void *ctx, relay_clear_lane_t *lane, size_t g)
{
   relay_clearer_t *c = ctx;
   group_t *gr = &c->groups[g];
   if (lane->archive && c->job->archive &&
       !archive_first(c, lane, c->job, gr->coll, gr->mine, gr->n) &&
       !only_refusals(gr->mine, gr->n)) {
      gr->archive_failed = true;
   }
   clear_coll(c, lane, c->job, gr->coll, gr->mine, gr->n);
}

static void
run_job(relay_clearer_t *c, relay_clear_job_t *job)
{
   relay_clear_stmt_t **all = bson_malloc((job->n + 1) * sizeof *all);
   bool archive_failed = false;
   size_t total = select_all(job, all), n_groups = 0;

   c->groups = bson_malloc((total + 1) * sizeof *c->groups);
   for (size_t first = 0, n; first < total; first += n) {
      size_t coll = (size_t)all[first]->coll;
      for (n = 1; first + n < total && all[first + n]->coll == (int)coll; n++) {
      }
      c->groups[n_groups++] = (group_t){.coll = coll, .mine = all + first, .n = n};
   }
   c->job = job;
   if (c->lane0.archive && job->archive) {
      prepare_archive(c);
   }
   relay_clear_lanes_run(c->lanes, &c->lane0, n_groups);
   for (size_t g = 0; g < n_groups; g++) {
      archive_failed = archive_failed || c->groups[g].archive_failed;
   }
   if (c->lane0.archive && job->archive) {
      relay_metrics_set(c->metrics, RELAY_G_ARCHIVE_FAILING, archive_failed ? 1.0 : 0.0);
   }
   c->job = NULL;
   bson_free(c->groups);
   c->groups = NULL;
   bson_free(all);
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
relay_clearer_new(const relay_config_t *cfg, relay_namespaces_t *ns, relay_metrics_t *metrics,
                  const char *member, void (*wake)(void *), void *wake_ctx, bson_error_t *error)
{
   relay_clearer_t *c;
   mongoc_client_t *client = relay_store_client_new(cfg, "outbox-relay-clear", error);

   if (!client) {
      return NULL;
   }
   c = bson_malloc0(sizeof *c);
   c->cfg = cfg;
   c->lane0.client = client;
   c->ns = ns;
   if (cfg->archive_collection) {
      c->lane0.archive =
         mongoc_client_get_collection(client, cfg->state_database, cfg->archive_collection);
   }
   c->metrics = metrics;
   c->member = bson_strdup(member);
   c->wake = wake;
   c->wake_ctx = wake_ctx;
   pthread_mutex_init(&c->lock, NULL);
   pthread_cond_init(&c->cond, NULL);
   pthread_mutex_init(&c->job_lock, NULL);
   c->lanes = relay_clear_lanes_new(cfg, CLEAR_LANES - 1, run_group, c);
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
   relay_clear_lanes_destroy(c->lanes);
   relay_clear_lane_cleanup(&c->lane0);
   pthread_mutex_destroy(&c->job_lock);
   pthread_cond_destroy(&c->cond);
   pthread_mutex_destroy(&c->lock);
   bson_free(c->member);
   bson_free(c);
}
