/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The bounded history of changes behind change streams, and the cluster clock. Every change
 * gets its own cluster time (a Timestamp strictly greater than the previous one) and a
 * sequence number; the newest `capacity` entries are kept. Waiters (change-stream getMores)
 * sleep on `cond` with the server lock and are woken by every append: no polling.
 * Not thread-safe by itself: callers hold the server lock.
 */
#ifndef MD_OPLOG_H
#define MD_OPLOG_H

#include <bson/bson.h>
#include <pthread.h>
#include <stdint.h>

typedef enum {
   MD_OP_INSERT,
   MD_OP_UPDATE,
   MD_OP_REPLACE,
   MD_OP_DELETE,
   MD_OP_DROP,
   MD_OP_RENAME,
   MD_OP_DROP_DATABASE,
   MD_OP_NOOP, /* a catalog change's place in the history (versions.h); no change event */
} md_op_t;

typedef struct {
   uint32_t t, i;
} md_ts_t;

/* A document an entry holds: its BSON bytes inside the entry, or len 0 when absent. Read it
 * with md_oplog_doc(). */
typedef struct {
   const uint8_t *data;
   uint32_t len;
} md_oplog_doc_t;

/* One change. Everything it holds (names and documents) sits in one allocation of exactly
 * the size needed, so the byte bound is what the history really costs (separate bson_t
 * buffers grown by doubling cost up to twice their documents, plus 128-byte aligned headers
 * each, and a 1M-event benchmark needed 2.5 GB). The history keeps what change streams
 * need, as MongoDB's oplog does: an update's description, not its document (updateLookup
 * reads the current document; post-images only for collections that record images). */
typedef struct {
   uint64_t seq;
   md_ts_t ts;
   int64_t wall_ms;
   md_op_t op;
   const char *db;
   const char *coll;            /* NULL for dropDatabase */
   md_oplog_doc_t doc_key;      /* {_id: ...} for document changes */
   md_oplog_doc_t full_doc;     /* insert/replace: the new document; update: the post-image,
                                 * only when the collection records images */
   md_oplog_doc_t pre_image;    /* when the collection records pre-images */
   md_oplog_doc_t update_desc;  /* update: {updatedFields, removedFields, truncatedArrays} */
   const char *to_db, *to_coll; /* rename */
   bson_t *lsid;                /* a transaction's writes: its session, number and the write's */
   int64_t txn_number;          /* place in it; all of them share the commit's ts */
   uint32_t txn_index;          /* 0 outside transactions */
   size_t bytes;                /* what the entry holds, for the byte bound */
   uint8_t data[];              /* the names and documents above */
} md_oplog_entry_t;

/* What a new entry holds; NULL for what it does not have. */
typedef struct {
   md_op_t op;
   const char *db, *coll, *to_db, *to_coll;
   const bson_t *doc_key, *full_doc, *pre_image, *update_desc;
} md_oplog_parts_t;

/* A new entry holding copies of @parts, in one allocation. */
md_oplog_entry_t *md_oplog_entry_new(const md_oplog_parts_t *parts);

/* Fills @out with a read-only view of @d (valid as long as its entry) and returns it, or
 * returns NULL when the entry does not hold that document. */
const bson_t *md_oplog_doc(md_oplog_doc_t d, bson_t *out);

typedef struct {
   md_oplog_entry_t **ring;
   size_t capacity;
   size_t max_bytes; /* a second bound, on the memory the entries take */
   size_t bytes;
   uint64_t first_seq, next_seq;
   md_ts_t last;    /* the cluster time: ts of the newest entry or the start time */
   md_ts_t start;   /* the server's start: nothing before it is known (a restarted
                     * server answers old tokens with 286, as after an oplog rollover) */
   bool lost;       /* some entries were evicted */
   md_ts_t lost_ts; /* ts of the newest evicted entry */
   pthread_cond_t cond;
   int waiters; /* threads in md_oplog_wait: appends skip the wake-up when there are none */
   int64_t wall_offset_ms; /* the writing member's clock offset: moves wall times and the
                            * cluster time's seconds (the dispatcher sets it per command) */
} md_oplog_t;

/* Keeps at most `capacity` entries and about `max_bytes` of memory for them. */
void md_oplog_init(md_oplog_t *log, size_t capacity, size_t max_bytes);
void md_oplog_destroy(md_oplog_t *log);

/* Appends an entry: the oplog takes ownership of `e`, assigns seq, ts and wall time, evicts
 * the oldest entry if full, and wakes waiters. */
void md_oplog_append(md_oplog_t *log, md_oplog_entry_t *e);
/* Appends a committed transaction's writes (taking the entries, not the array) under one
 * cluster time, numbered 0..n-1, with the session `lsid` (copied) and `txn_number`. Returns
 * that cluster time (the current one when n is 0). */
md_ts_t md_oplog_append_txn(md_oplog_t *log, md_oplog_entry_t **entries, size_t n,
                            const bson_t *lsid, int64_t txn_number);
void md_oplog_entry_free(md_oplog_entry_t *e);

/* Waits (with `lock`, the server lock, held) for an append or until `deadline_ms` on the
 * monotonic clock. */
void md_oplog_wait(md_oplog_t *log, pthread_mutex_t *lock, int64_t deadline_ms);

/* Wakes every waiter (shutdown, killed cursors). */
void md_oplog_wake(md_oplog_t *log);

/* The entry with sequence number `seq`, or NULL if evicted or not yet written. */
md_oplog_entry_t *md_oplog_at(const md_oplog_t *log, uint64_t seq);
/* The first retained sequence number whose ts is > `ts` (or >= when `inclusive`). */
uint64_t md_oplog_seek(const md_oplog_t *log, md_ts_t ts, bool inclusive);
/* The first retained sequence number after the entry (ts, index): entries of a transaction
 * share ts and are told apart by their index. */
uint64_t md_oplog_seek_after(const md_oplog_t *log, md_ts_t ts, uint32_t index);

int md_ts_cmp(md_ts_t a, md_ts_t b);

/* Resume tokens: "82" %08X t %08X i %08X index %02X kind; strcmp order is stream order.
 * `index` is the write's place in its transaction (as MongoDB's txnOpIndex); an invalidate
 * follows the event that caused it at the same (t, i, index); a high-water mark at index
 * FFFFFFFF comes after every event of its cluster time. */
#define MD_TOKEN_LEN 28
#define MD_TOKEN_EVENT 0x01
#define MD_TOKEN_INVALIDATE 0x02
#define MD_TOKEN_HWM 0xFF
#define MD_TOKEN_INDEX_HWM 0xFFFFFFFFu

void md_token_format(char out[MD_TOKEN_LEN + 1], md_ts_t ts, uint32_t index, unsigned kind);
bool md_token_parse(const char *s, md_ts_t *ts, uint32_t *index, unsigned *kind);

#endif
