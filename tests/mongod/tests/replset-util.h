/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Helpers of the replica-set tests (test-replset*.c) against test-mongod --members 3 (or a
 * real set of three members): every call asserts with criterion on failure.
 */
#ifndef MD_REPLSET_UTIL_H
#define MD_REPLSET_UTIL_H

#include <mongoc/mongoc.h>

#define MD_RS_MEMBERS 3

typedef struct {
   char host[MD_RS_MEMBERS][256];
   int primary; /* index into host, -1 if none */
} md_rs_members_t;

/* A client connected directly to `host` (error API 2); destroy it. */
mongoc_client_t *md_rs_direct(const char *host);
/* A replicaSet=rs0 client (md_test_client, `app_name`) that follows an election quickly:
 * heartbeats every 500 ms, and server selection waits for the new primary instead of trying
 * once. With `timeout_ms` > 0 its connects and socket reads give up after that long. */
mongoc_client_t *md_rs_failover_client(const char *app_name, int timeout_ms);
/* `host`'s hello reply (caller destroys). */
void md_rs_hello(const char *host, bson_t *reply);
/* Whether `field` of `doc` is true. */
bool md_rs_flag(const bson_t *doc, const char *field);
/* The members the seed names and which says it is primary; skips the test without three. */
void md_rs_members(md_rs_members_t *m);
/* Who says it is primary now, among the members not marked down. */
void md_rs_find_primary(md_rs_members_t *m);
/* Marks `host` unreachable (or reachable again) for md_rs_members. */
void md_rs_mark_down(const char *host, bool is_down);
/* Heals the members marked down, resumes every member's replication without lag and
 * sets its clock right (testMemberFault). */
void md_rs_heal_all(void);
/* Runs `cmd` (destroyed here) on admin of `host`. */
bool md_rs_admin(const char *host, bson_t *cmd, bson_t *reply, bson_error_t *error);
/* testMemberFault `mode` for `target`, through the member `via`, asserting success; skips
 * the test on a server without the command (a real set, or test-mongod without
 * --enable-test-commands). */
void md_rs_fault(const char *via, const char *target, const char *mode);
/* md_rs_fault with the command's `ms` argument (lag, clock, or the replication modes). */
void md_rs_fault_ms(const char *via, const char *target, const char *mode, int ms);
/* replSetFreeze `secs` on `host` (0: unfreeze), asserting success. */
void md_rs_freeze(const char *host, int secs);
/* Waits up to 5 s for a primary; returns its index. */
int md_rs_await_primary(md_rs_members_t *m);
/* Waits up to 5 s for a member other than `old` to say it is primary (its hello, not
 * md_rs_members: the old one may be cut off); returns its index. */
int md_rs_await_other_primary(const md_rs_members_t *m, int old);

/* Field `v` of the document `id` of mdtest.`name` as `host` reads it (-1: no such
 * document; 0: no `v`), with read preference secondaryPreferred, and readConcern majority
 * when `majority`. */
int md_rs_read_v(const char *host, const char *name, int id, bool majority);
/* Whether `host`'s hello says it is a writable primary; its electionId (zero if none). */
bool md_rs_hello_primary(const char *host, bson_oid_t *election);

#endif
