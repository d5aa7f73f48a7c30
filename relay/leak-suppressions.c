/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * LeakSanitizer's suppressions for outbox-relay and outbox-admin (sanitizer builds only):
 * leaks that are libmongoc's, each named by exactly one of its functions, with the evidence.
 * LeakSanitizer asks for this list itself at exit; no state.
 *
 * _mongoc_cursor_run_command (libmongoc 1.23.1, src/libmongoc/src/mongoc/mongoc-cursor.c;
 * the same in 1.30): tests/chaos/FINDINGS.md F15. A read that fails with a retryable error
 * (a stepdown's "not primary") has its reply copied into the cursor's reply document by
 * mongoc_cluster_run_opmsg() (bson_copy_to); the retry then selects a server with
 * mongoc_cluster_stream_for_reads(..., reply, ...), and when no primary can be selected yet
 * (an election under way) that initialises the same document again
 * (_mongoc_bson_init_with_transient_txn_error: bson_init) without destroying the copy: the
 * error reply, 512 bytes, is lost. Seen in relays of the chaos `stepdown` scenario (ASan),
 * allocated under relay_lease_store_snapshot()'s aggregate (relay/group/snapshot.c), whose
 * cursor the relay destroys:
 *   bson_malloc < bson_copy_to < libmongoc+0x39f79 (mongoc_cluster_run_opmsg) <
 *   mongoc_cluster_run_command_monitored < _mongoc_cursor_run_command <
 *   _mongoc_cursor_response_refresh < mongoc_cursor_next < relay_lease_store_snapshot
 * Nothing the relay can free: the document is the cursor's, overwritten inside mongoc.
 */
#if defined(__SANITIZE_ADDRESS__)
const char *__lsan_default_suppressions(void);

const char *
__lsan_default_suppressions(void)
{
   return "leak:_mongoc_cursor_run_command\n";
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int relay_leak_suppressions_unused_t;
#endif
