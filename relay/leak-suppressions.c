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
 *
 * A suppression matches the function names of the allocation's stack, and ASan's default
 * (fast) unwinder stops at bson_malloc: Debian's libbson and libmongoc keep no frame pointers,
 * so the stack it records is malloc < bson_malloc and nothing would match. These binaries
 * therefore record allocation stacks with the slow unwinder, 10 frames deep
 * (_mongoc_cursor_run_command is the 6th): sanitizer builds only, about a quarter slower per
 * relay (admin-replay 9.0 s against 11.4 s); ASAN_OPTIONS in the environment still win.
 * tests/relay/test-leak-suppressions.c makes the leak on purpose.
 */
#if defined(__SANITIZE_ADDRESS__)
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void);

const char *
__lsan_default_suppressions(void)
{
   return "leak:_mongoc_cursor_run_command\n";
}

const char *
__asan_default_options(void)
{
   return "fast_unwind_on_malloc=0:malloc_context_size=10";
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int relay_leak_suppressions_unused_t;
#endif
