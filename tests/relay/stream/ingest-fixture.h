/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The fixture of ingest's unit tests (test-changes.c, test-documents.c, test-sweep.c): a fake
 * reader and store (relay_ingest_ops_t) and a partition owner that owns partition 0 with a
 * checkpoint, no servers. ingest_setup() builds them for each test, ingest_teardown() frees
 * them; the tests drive ingest (`in`) and look at what the fakes saw (`fake`).
 */
#ifndef TEST_INGEST_FIXTURE_H
#define TEST_INGEST_FIXTURE_H

#include <criterion/criterion.h>
#include <mongoc/mongoc.h>

#include "group/group.h"
#include "stream/ingest.h"

typedef struct {
   relay_change_t *head, *tail;
   uint64_t gen;
   int starts;
   bool started_at; /* the last start was at a time (a sweep's start), not after a token */
   int reads;
   uint32_t read_fail_code;
   char *doc_json; /* what a read of entity %d finds (a format) */
   relay_ts_t time;
   const char *sweep_docs[4]; /* the sweep cursor's documents (JSON) */
   int sweep_next;
   bson_t *sweep_doc;
   int sweeps_opened;
   relay_ts_t read_after, sweep_after, wait_after; /* the times the last ones had to cover */
   relay_ts_t read_time; /* the snapshot time a read reports ({0, 0}: none) */
   int waits;
   uint32_t wait_fail_code;
} fake_t;

extern fake_t fake;
extern relay_config_t cfg;
extern relay_table_t t;
extern relay_group_t *g;
extern relay_ingest_t *in;

void ingest_setup(void);
void ingest_teardown(void);

/* Queues a change for ingest (as the reader thread would). */
void push(relay_change_kind_t kind, const char *json, relay_ts_t ts, int code);
/* An insert of entity @id at time @t whose document holds @events and eventSeq @seq. */
void push_insert(int id, uint32_t t_s, const char *events, int seq);
/* What a read of an entity finds (a format with the entity's id). */
void store_doc(const char *json);
/* Partition 0 is being swept again (as after a lost history): the owner makes it fresh. */
void make_fresh(void);
/* Opens the stream after a checkpoint token (a resume: verifying). */
void resume(void);

#define EV1 "{\"id\": \"a1\", \"seq\": 1, \"type\": \"T\", \"data\": {}}"
#define EV2 "{\"id\": \"a2\", \"seq\": 2, \"type\": \"T\", \"data\": {}}"

#endif /* TEST_INGEST_FIXTURE_H */
