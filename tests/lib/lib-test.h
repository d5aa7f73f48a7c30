/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers for liboutbox's integration tests: a pool on OUTBOX_TEST_MONGODB_URI (the test
 * server started by with-servers, or a real replica set), unique collection names, and raw
 * access to documents that bypasses the library.
 */
#ifndef OUTBOX_LIB_TEST_H
#define OUTBOX_LIB_TEST_H

#include <outbox/outbox.h>

/* The tests' database: "outbox_lib_tests" after the run's prefix (OUTBOX_TEST_DB_PREFIX,
 * set by scripts/test --against; empty otherwise). */
const char *lt_db(void);
#define LT_DB lt_db()

/* One test's world: its own pool and a collection no other test uses. */
typedef struct {
   mongoc_client_pool_t *pool;
   char coll_name[64];
   outbox_collection_t *coll; /* made with lt_open(); NULL before */
} lt_t;

/* Initializes mongoc and a pool on OUTBOX_TEST_MONGODB_URI (aborts the test if unset), and
 * picks a unique collection name starting with `prefix`. `apm` (may be NULL) is installed on
 * the pool with `apm_ctx`. */
void lt_init(lt_t *t, const char *prefix, mongoc_apm_callbacks_t *apm, void *apm_ctx);

/* lt_init() with the URI first changed by `adjust` (may be NULL): a test that needs other
 * heartbeats or a write concern in the URI gets its pool from here rather than making its
 * own. */
void lt_init_uri(lt_t *t, const char *prefix, void (*adjust)(mongoc_uri_t *uri),
                 mongoc_apm_callbacks_t *apm, void *apm_ctx);

/* Skips the running test (cr_skip_test) unless the deployment meets `need` (the words of
 * tests/fixtures/deployment.h: "test commands", "replset", "sharded", "members>=3", ...),
 * first writing "skip SUITE::TEST: reason" to stderr as the Python runners do. Call it after
 * lt_init(). */
void lt_requires(lt_t *t, const char *need);

/* Whether the deployment meets `need` (deployment.h's words), for a test that adapts. */
bool lt_meets(lt_t *t, const char *need);

/* Skips the running test saying `why` in one line ("skip SUITE::TEST: why" on stderr, then
 * cr_skip_test), for needs deployment.h does not know (credentials, certificates). */
void lt_skip(const char *why);

/* Makes t->coll with `opts` (may be NULL); asserts success. */
void lt_open(lt_t *t, const bson_t *opts);

/* Drops the collection and frees everything. */
void lt_cleanup(lt_t *t);

/* The stored document with _id `id`, read without the library; NULL if there is none.
 * Caller destroys. */
bson_t *lt_raw_get(lt_t *t, const bson_value_t *id);

/* Runs update_one(filter, update) without the library; asserts success. Used to play the
 * relay (which removes published events) or a foreign writer. */
void lt_raw_update(lt_t *t, const bson_t *filter, const bson_t *update);

/* Inserts `doc` without the library; asserts success. */
void lt_raw_insert(lt_t *t, const bson_t *doc);

/* Removes all pending events of `id` like the relay does after publishing ($pull by seq). */
void lt_publish_all(lt_t *t, const bson_value_t *id);

/* Asserts that the stored document equals `before` byte for byte (or both are absent). */
void lt_assert_unchanged(lt_t *t, const bson_value_t *id, const bson_t *before);

/* Reads an int64 at `path` (dotted) of `doc`; asserts it exists and is an Int64. */
int64_t lt_int64(const bson_t *doc, const char *path);

/* Number of elements of the array at `key`; 0 if absent. */
int lt_array_len(const bson_t *doc, const char *key);

/* A second handle on t's collection with `opts` (may be NULL), with a cache of its own;
 * asserts success. Caller destroys. */
outbox_collection_t *lt_second_handle(lt_t *t, const bson_t *opts);

/* Fills evs[0..n-1] with new events of `type` without data. */
void lt_events_new(outbox_event_t **evs, int n, const char *type);

/* Destroys evs[0..n-1]. */
void lt_events_destroy(outbox_event_t **evs, int n);

/* A string id value pointing at `s` (static storage). */
bson_value_t lt_str_id(const char *s);

/* An int64 id value. */
bson_value_t lt_int_id(int64_t n);

/* The wall clock in ms since the Unix epoch (UTC), as stored in events' time. */
int64_t lt_now_ms(void);

#endif /* OUTBOX_LIB_TEST_H */
