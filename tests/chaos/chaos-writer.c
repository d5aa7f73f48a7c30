/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The chaos suite's writer: commits events through liboutbox to entities of a range and
 * tells the verifier exactly what it committed.
 *
 * usage: chaos-writer URI DB COLL PREFIX FIRST COUNT EVENTS [MAX-PER-COMMIT [SEED [DELAY-US]]]
 *
 * Commits EVENTS events in total to entities PREFIX<FIRST> .. PREFIX<FIRST+COUNT-1> (string
 * ids), 1..MAX-PER-COMMIT (default 3) events per commit, to a random entity each time
 * (creating it on its first commit). Every line on stdout is flushed at once:
 *   T <entity> <id>,<id>,...        before a commit is sent (an attempt)
 *   C <entity> <seq> <id>           after it succeeded, one line per event
 * so when the writer is killed mid-commit, the verifier knows which ids may exist. A commit
 * that fails is retried with the same events (same ids), as the library recommends after an
 * ambiguous failure; a non-retryable error ends the writer with status 1.
 * With CHAOS_WRITER_TENANTS=1 in the environment a created entity also gets a business field
 * `tenant`, a one-letter string ("a".."z") chosen by the entity's number, so a collection
 * sharded by {tenant: 1, _id: 1} and split at "m" spreads the entities over two shards.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <outbox/outbox.h>

#define MAX_PER_COMMIT 64

static bool
is(const bson_error_t *error, outbox_error_code_t code)
{
   return error->domain == OUTBOX_ERROR_DOMAIN && error->code == (uint32_t)code;
}

/* Appends, or creates the entity when it does not exist yet (another writer of an
 * overlapping range may create it first: then append again). */
static bool
commit_once(outbox_collection_t *coll, const bson_value_t *id, outbox_event_t **evs, size_t n,
            const bson_t *fields, bson_error_t *error)
{
   for (int round = 0; round < 3; round++) {
      if (outbox_collection_append(coll, id, evs, n, NULL, error)) {
         return true;
      }
      if (!is(error, OUTBOX_ERROR_NOT_FOUND)) {
         return false;
      }
      if (outbox_collection_create(coll, id, fields, evs, n, NULL, error)) {
         return true;
      }
      if (!is(error, OUTBOX_ERROR_ALREADY_EXISTS)) {
         return false;
      }
   }
   return false;
}

static bool
retryable(const bson_error_t *error)
{
   /* Conflicts under load, network trouble (the suite drops connections on purpose; a commit
    * it cut is OUTBOX_ERROR_UNKNOWN_OUTCOME, whose retry with the same events is safe), and
    * the pending limit: writers of 40-event commits outrun the relay for a while (the relay
    * is being restarted or the broker is down), and a service waits for it as this does. */
   return is(error, OUTBOX_ERROR_RETRIES_EXHAUSTED) || is(error, OUTBOX_ERROR_CONFLICT) ||
          is(error, OUTBOX_ERROR_LIMIT_PENDING) || is(error, OUTBOX_ERROR_UNKNOWN_OUTCOME) ||
          error->domain != OUTBOX_ERROR_DOMAIN;
}

static void
print_attempt(const char *entity, outbox_event_t **evs, size_t n)
{
   printf("T %s ", entity);
   for (size_t k = 0; k < n; k++) {
      printf("%s%s", k ? "," : "", outbox_event_get_id(evs[k]));
   }
   printf("\n");
   fflush(stdout);
}

static bool
commit(outbox_collection_t *coll, const char *entity, long number, int n, long serial)
{
   outbox_event_t *evs[MAX_PER_COMMIT];
   bson_value_t id = {.value_type = BSON_TYPE_UTF8};
   const char *tenants = getenv("CHAOS_WRITER_TENANTS");
   char tenant[2] = {(char)('a' + number % 26), '\0'};
   bson_t *fields = NULL;
   bson_error_t error;
   bool ok = false;

   if (tenants && strcmp(tenants, "1") == 0) {
      fields = BCON_NEW("tenant", BCON_UTF8(tenant));
   }

   id.value.v_utf8.str = (char *)entity;
   id.value.v_utf8.len = (uint32_t)strlen(entity);
   for (int k = 0; k < n; k++) {
      bson_t *data =
         BCON_NEW("serial", BCON_INT64(serial), "k", BCON_INT32(k), "entity", BCON_UTF8(entity));

      evs[k] = outbox_event_new("chaos.event", data);
      bson_destroy(data);
   }
   print_attempt(entity, evs, (size_t)n);
   for (int attempt = 0; attempt < 1000; attempt++) {
      ok = commit_once(coll, &id, evs, (size_t)n, fields, &error);
      if (ok || !retryable(&error)) {
         break;
      }
      usleep(10000);
   }
   if (ok) {
      for (int k = 0; k < n; k++) {
         printf("C %s %" PRId64 " %s\n", entity, outbox_event_get_seq(evs[k]),
                outbox_event_get_id(evs[k]));
      }
      fflush(stdout);
   } else {
      fprintf(stderr, "chaos-writer: commit to %s failed: %s (domain %u, code %u)\n", entity,
              error.message, error.domain, error.code);
   }
   for (int k = 0; k < n; k++) {
      outbox_event_destroy(evs[k]);
   }
   if (fields) {
      bson_destroy(fields);
   }
   return ok;
}

int
main(int argc, char **argv)
{
   mongoc_client_pool_t *pool;
   outbox_collection_t *coll;
   mongoc_uri_t *uri;
   bson_error_t error;
   long first, count, events, max_per = 3, delay_us = 0;
   unsigned seed;
   int status = 0;

   if (argc < 8 || argc > 11) {
      fprintf(stderr,
              "usage: %s URI DB COLL PREFIX FIRST COUNT EVENTS [MAX-PER-COMMIT [SEED "
              "[DELAY-US]]]\n",
              argv[0]);
      return 64;
   }
   first = atol(argv[5]);
   count = atol(argv[6]);
   events = atol(argv[7]);
   if (argc > 8) {
      max_per = atol(argv[8]);
   }
   seed = argc > 9 ? (unsigned)atol(argv[9]) : (unsigned)time(NULL) ^ (unsigned)getpid();
   if (argc > 10) {
      delay_us = atol(argv[10]);
   }
   if (count < 1 || events < 0 || max_per < 1 || max_per > MAX_PER_COMMIT) {
      fprintf(stderr, "chaos-writer: bad COUNT, EVENTS or MAX-PER-COMMIT\n");
      return 64;
   }
   srand(seed);
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      fprintf(stderr, "chaos-writer: %s\n", error.message);
      return 64;
   }
   mongoc_uri_set_appname(uri, "chaos-writer");
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   coll = outbox_collection_new(pool, argv[2], argv[3], NULL, &error);
   if (!coll) {
      fprintf(stderr, "chaos-writer: %s\n", error.message);
      status = 1;
   }
   for (long done = 0, serial = 0; coll && done < events; serial++) {
      char entity[256];
      long n = 1 + rand() % max_per;

      if (n > events - done) {
         n = events - done;
      }
      long number = first + rand() % count;

      snprintf(entity, sizeof entity, "%s%ld", argv[4], number);
      if (!commit(coll, entity, number, (int)n, serial)) {
         status = 1;
         break;
      }
      done += n;
      if (delay_us > 0) {
         usleep((useconds_t)delay_us);
      }
   }
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return status;
}
