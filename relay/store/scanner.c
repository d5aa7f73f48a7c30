/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The scanner thread (see scanner.h). It owns a client pool of its own (liboutbox works on
 * pools), reads the watched set (stream/namespaces.h) and makes a liboutbox handle per
 * namespace for each count; the main thread only starts and stops it.
 */
#include "store/scanner.h"
#include "util/error.h"

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <outbox/outbox.h>

#include "mqtt/render.h"
#include "store/store.h"
#include "util/log.h"

/* Malformed documents already named in the log ("<collection index>:<rendered id>"): each
 * is named once, not at every scan. Rare, so a short list; past its cap none is named. */
#define NAMED_MAX 1024
/* How many malformed documents of a collection a scan reads to name (the same first ones
 * each time: the gauge counts them all, the log names the first ten). */
#define NAME_PER_SCAN 10

struct relay_scanner_t {
   const relay_config_t *cfg;
   char **named; /* the scanner thread's only */
   size_t n_named;
   relay_metrics_t *metrics;
   mongoc_client_pool_t *pool;
   relay_namespaces_t *ns;
   bson_t *opts; /* liboutbox's collection options */
   pthread_t thread;
   pthread_mutex_t lock;
   pthread_cond_t cond; /* signalled to stop */
   bool stop, failing;
};

static bool
first_time(relay_scanner_t *s, char *key)
{
   for (size_t i = 0; i < s->n_named; i++) {
      if (!strcmp(s->named[i], key)) {
         bson_free(key);
         return false;
      }
   }
   if (s->n_named == NAMED_MAX) {
      bson_free(key);
      return false;
   }
   s->named = bson_realloc(s->named, (s->n_named + 1) * sizeof *s->named);
   s->named[s->n_named++] = key;
   return true;
}

/* Names the documents of collection @i whose events or dead letters field is not an array,
 * once each: the scan skips them (liboutbox counts them apart), the relay cannot publish
 * their events, and only whoever wrote them can fix them. */
static void
name_malformed(relay_scanner_t *s, int i, const relay_ns_t *ns)
{
   const relay_config_t *cfg = s->cfg;
   mongoc_client_t *client = mongoc_client_pool_pop(s->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, ns->db, ns->coll);
   char *events0 = bson_strdup_printf("%s.0", cfg->events_field);
   char *dead0 = bson_strdup_printf("%s.0", cfg->dead_letters_field);
   bson_t *filter =
      BCON_NEW("$or", "[", "{", events0, "{", "$exists", BCON_BOOL(true), "}", cfg->events_field,
               "{", "$not", "{", "$type", BCON_UTF8("array"), "}", "}", "}", "{", dead0, "{",
               "$exists", BCON_BOOL(true), "}", cfg->dead_letters_field, "{", "$not", "{", "$type",
               BCON_UTF8("array"), "}", "}", "}", "]");
   bson_t *opts =
      BCON_NEW("projection", "{", "_id", BCON_INT32(1), "}", "limit", BCON_INT64(NAME_PER_SCAN));
   mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(coll, filter, opts, NULL);
   const bson_t *doc;
   bson_iter_t it;

   while (mongoc_cursor_next(cursor, &doc)) {
      size_t len;
      char *id = bson_iter_init_find(&it, doc, "_id") ? relay_render_id(bson_iter_value(&it), &len)
                                                      : bson_strdup("(no _id)");
      if (first_time(s, bson_strdup_printf("%d:%s", i, id))) {
         relay_log(RELAY_LOG_WARNING, "scanner",
                   "document %s/%s: its %s or %s field is not an array: its events are not "
                   "counted and cannot be published (was it written without liboutbox?)",
                   ns->name, id, cfg->events_field, cfg->dead_letters_field);
      }
      bson_free(id);
   }
   mongoc_cursor_destroy(cursor); /* an error here only means no name this time */
   bson_destroy(opts);
   bson_destroy(filter);
   bson_free(events0);
   bson_free(dead0);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(s->pool, client);
}

/* Counts namespace @i into @sum (per pattern: the series' labels). False on a failure. */
static bool
count_one(relay_scanner_t *s, int i, const relay_ns_t *ns, outbox_counts_t *sum)
{
   bson_error_t error;
   outbox_counts_t n;
   outbox_collection_t *coll = outbox_collection_new(s->pool, ns->db, ns->coll, s->opts, &error);
   bool ok = coll && outbox_collection_count_events(coll, &n, &error);
   outbox_collection_destroy(coll);
   if (!ok) {
      relay_log(s->failing ? RELAY_LOG_DEBUG : RELAY_LOG_WARNING, "scanner",
                "counting the pending events of %s failed (trying again in %d ms): %s", ns->name,
                s->cfg->pending_scan_interval_ms, error.message);
      return false;
   }
   sum->pending_events += n.pending_events;
   sum->dead_letters += n.dead_letters;
   sum->malformed_documents += n.malformed_documents;
   if (n.oldest_pending_ms > 0 &&
       (sum->oldest_pending_ms == 0 || n.oldest_pending_ms < sum->oldest_pending_ms)) {
      sum->oldest_pending_ms = n.oldest_pending_ms;
   }
   if (n.malformed_documents > 0) {
      name_malformed(s, i, ns);
   }
   return true;
}

/* Waits @ms (0: not at all); true when told to stop meanwhile (or before). */
static bool
pace(relay_scanner_t *s, int64_t ms)
{
   struct timespec until;
   pthread_mutex_lock(&s->lock);
   clock_gettime(CLOCK_MONOTONIC, &until);
   int64_t ns = (int64_t)until.tv_nsec + ms * 1000000;
   until.tv_sec += (time_t)(ns / 1000000000);
   until.tv_nsec = (long)(ns % 1000000000);
   while (ms > 0 && !s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0) {
   }
   bool stop = s->stop;
   pthread_mutex_unlock(&s->lock);
   return stop;
}

/* One scan of every watched namespace (one at a time: memory is one count), summed per
 * pattern, the metrics' label; logs the first failure of a run of failures. */
static void
scan(relay_scanner_t *s)
{
   relay_series_t *series = relay_metrics_series(s->metrics);
   int64_t start = bson_get_monotonic_time();
   size_t n_labels = relay_nsset_count(relay_namespaces_patterns(s->ns));
   outbox_counts_t *sums = bson_malloc0((n_labels + 1) * sizeof *sums);
   bool ok = true;
   relay_ns_t ns;

   int count = relay_namespaces_count(s->ns);
   /* Paced: with many namespaces a scan is spread over the interval (at most 50 ms between
    * two counts), so a thousand tenants' counts do not compete with the relay's own reads
    * and clears at once. */
   int64_t pause_ms = count > 1 ? s->cfg->pending_scan_interval_ms / count : 0;
   pause_ms = pause_ms > 50 ? 50 : pause_ms;
   for (int i = 0; ok && relay_namespaces_get(s->ns, i, &ns); i++) {
      if (!ns.gone && (size_t)ns.label < n_labels) {
         ok = count_one(s, i, &ns, &sums[ns.label]);
      }
      ok = ok && !pace(s, i + 1 < count ? pause_ms : 0);
   }
   for (size_t l = 0; ok && l < n_labels; l++) {
      relay_series_set(series, RELAY_S_PENDING_EVENTS, l, (double)sums[l].pending_events);
      relay_series_set(series, RELAY_S_DEAD_LETTERS, l, (double)sums[l].dead_letters);
      relay_series_set_oldest(series, l, sums[l].oldest_pending_ms);
      relay_series_set(series, RELAY_S_MALFORMED_DOCUMENTS, l, (double)sums[l].malformed_documents);
   }
   bson_free(sums);
   s->failing = !ok;
   if (ok) {
      relay_metrics_set(s->metrics, RELAY_G_PENDING_SCAN_S,
                        (double)(bson_get_monotonic_time() - start) / 1e6);
   }
}

static void *
run(void *arg)
{
   relay_scanner_t *s = arg;
   pthread_mutex_lock(&s->lock);
   while (!s->stop) {
      struct timespec until;
      pthread_mutex_unlock(&s->lock);
      scan(s);
      pthread_mutex_lock(&s->lock);
      clock_gettime(CLOCK_MONOTONIC, &until);
      int64_t ns = (int64_t)until.tv_nsec + (int64_t)s->cfg->pending_scan_interval_ms * 1000000;
      until.tv_sec += (time_t)(ns / 1000000000);
      until.tv_nsec = (long)(ns % 1000000000);
      while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &until) == 0) {
      }
   }
   pthread_mutex_unlock(&s->lock);
   return NULL;
}

relay_scanner_t *
relay_scanner_new(const relay_config_t *cfg, relay_namespaces_t *ns, relay_metrics_t *metrics,
                  bson_error_t *error)
{
   relay_scanner_t *s = bson_malloc0(sizeof *s);
   pthread_condattr_t attr;

   s->cfg = cfg;
   s->ns = ns;
   s->opts =
      BCON_NEW("versionField", BCON_UTF8(cfg->version_field), "eventSeqField",
               BCON_UTF8(cfg->event_seq_field), "eventsField", BCON_UTF8(cfg->events_field),
               "deadLettersField", BCON_UTF8(cfg->dead_letters_field), "cacheSize", BCON_INT32(0));
   s->metrics = metrics;
   pthread_mutex_init(&s->lock, NULL);
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&s->cond, &attr);
   pthread_condattr_destroy(&attr);
   s->pool = relay_store_pool_new(cfg, "outbox-relay-scanner", RELAY_CONCERNS_DATA, error);
   if (s->pool) {
      mongoc_client_pool_max_size(s->pool, 1);
   }
   bool ok = s->pool != NULL;
   if (ok && pthread_create(&s->thread, NULL, run, s) != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_THREAD,
                     "cannot start the scanner thread");
      ok = false;
   }
   if (!ok) {
      s->stop = true; /* no thread to join */
      relay_scanner_destroy(s);
      return NULL;
   }
   return s;
}

void
relay_scanner_destroy(relay_scanner_t *s)
{
   if (!s) {
      return;
   }
   pthread_mutex_lock(&s->lock);
   bool joined = s->stop; /* set before: the thread never started */
   s->stop = true;
   pthread_cond_signal(&s->cond);
   pthread_mutex_unlock(&s->lock);
   if (!joined) {
      pthread_join(s->thread, NULL);
   }
   bson_destroy(s->opts);
   for (size_t i = 0; i < s->n_named; i++) {
      bson_free(s->named[i]);
   }
   bson_free(s->named);
   mongoc_client_pool_destroy(s->pool);
   pthread_cond_destroy(&s->cond);
   pthread_mutex_destroy(&s->lock);
   bson_free(s);
}
