/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The router's state, shared by the files of shard/. The catalog (databases, sharded
 * collections, chunks) is guarded by `lock`, which is taken alone or inside a shard's server
 * lock (a shard's documentKey hook reads the catalog), never the other way round: nothing
 * holds `lock` while it runs a command on a shard or on the front. The shards and the front
 * are md_server_t's with their own locks; the router talks to them only through commands.
 */
#ifndef MD_ROUTER_PRIVATE_H
#define MD_ROUTER_PRIVATE_H

#include <pthread.h>

#include "net/server.h"

#define MD_MAX_SHARDS 16

typedef struct {
   char *name;
   int primary; /* the shard holding its unsharded collections */
} md_rdb_t;

typedef struct {
   bson_t *min, *max; /* {field: value...}, MinKey/MaxKey at the ends; hashed: NumberLong */
   int shard;
   uint32_t major, minor; /* the chunk version (lastmod) */
} md_chunk_t;

typedef struct {
   char *ns;
   bson_t *key; /* the shard key pattern, e.g. {_id: "hashed"} or {tenant: 1, _id: 1} */
   bool unique;
   uint8_t uuid[16];
   bson_oid_t epoch;
   uint32_t created_t; /* config.collections timestamp */
   md_chunk_t *chunks; /* in key order, covering MinKey..MaxKey */
   size_t n_chunks;
} md_rcoll_t;

typedef struct _md_mstream_t md_mstream_t;
/* A logical session as the router knows it (route-session.c, route-txn.c). */
typedef struct {
   int64_t active;        /* the newest txnNumber, -1 before any */
   bool busy;             /* a command of the session is running */
   bool txn_mode;         /* `active` is a transaction */
   bson_t *reply;         /* the retryable write `active`'s reply, NULL until it succeeded */
   bool started;          /* txn_mode: startTransaction seen for `active` */
   uint32_t participants; /* txn_mode: a bit per shard the transaction has reached */
   bson_t *read_concern;  /* txn_mode: the first statement's readConcern (NULL: none) */
   bson_t *lsid;          /* txn_mode: the client's lsid, sent on to the participants */
   char *db;              /* txn_mode: the first statement's database */
} md_rsession_t;

typedef struct {
   md_server_t *front; /* the listener; its store holds the config database */
   md_server_t *shards[MD_MAX_SHARDS];
   int n_shards;
   pthread_mutex_t lock; /* the catalog below, the merged streams and the temp counter */
   md_rdb_t *dbs;
   size_t n_dbs;
   md_rcoll_t *colls;
   size_t n_colls;
   md_mstream_t *streams; /* merged change streams (merge-stream.c) */
   int64_t next_stream_id;
   uint64_t next_tmp;
   struct _md_hmap_t *sessions; /* lsid -> md_rsession_t (route-session.c) */
   pthread_cond_t session_cond; /* a session's command ended */
   md_ts_t cluster_time;        /* the newest operationTime a shard answered (gossiped to writes) */
   pthread_mutex_t publish_lock; /* one rewrite of the config collections at a time */
   pthread_t noop_thread;
   pthread_cond_t noop_cond;
   bool noop_running;
} md_router_t;

/* ---- router.c ---- */
/* Runs `cmd` on shard `shard` (-1: the front itself), as a client connected to it would;
 * `*reply` is initialised. Returns the reply's ok. */
bool md_router_call(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply);
/* The cluster time mongos answers with: the newest of its shards' clocks and of what it
 * has gossiped (every later write through it gets a later time). */
md_ts_t md_router_cluster_time(md_router_t *r);
/* Builds an error reply {ok: 0, errmsg, code, codeName}. Returns true (the reply is sent). */
bool md_router_error(md_router_t *r, bson_t *reply, int32_t code, const char *fmt, ...)
   BSON_GNUC_PRINTF(4, 5);
/* A copy of `cmd` with its first value replaced by `coll` (NULL: kept), $db by `db` (NULL:
 * kept) and the fields in `drop` (NULL-terminated, may be NULL) left out. */
void md_router_rewrite(const bson_t *cmd, const char *coll, const char *db, const char *const *drop,
                       bson_t *out);

/* ---- merge-spec.c: opening a merged change stream on the shards ---- */
/* A merged token: the shard's token and two hex digits naming the shard. */
#define MTOKEN_LEN (MD_TOKEN_LEN + 2)
/* The _data of a document field {_data: "..."} (`path` such as
 * "cursor.postBatchResumeToken"), or NULL. */
const char *md_token_at(const bson_t *doc, const char *path);
/* The $changeStream spec shard `s` gets for the client's `spec` (*out initialised); `skip`
 * receives a merged resume token. False with an error reply. */
bool md_mstream_shard_spec(md_router_t *r, const bson_t *spec, int s, bson_t *out, char *skip,
                           bson_t *reply);
/* Whether the spec names a resume point (resumeAfter, startAfter, startAtOperationTime). */
bool md_mstream_has_start(const bson_t *spec);
/* A new stream's start (one tick after the cluster time); its first token into `pbrt`. */
md_ts_t md_mstream_start_new(md_router_t *r, char pbrt[MTOKEN_LEN + 1]);
/* The aggregate a shard runs: the client's, with `spec` as its $changeStream. */
void md_mstream_shard_command(const bson_t *cmd, const bson_t *spec, bson_t *out);

/* ---- noop.c: the shards' periodic no-op writer thread ---- */
void md_noop_start(md_router_t *r);
void md_noop_stop(md_router_t *r);

/* ---- catalog.c (callers hold r->lock unless said otherwise) ---- */
/* The database's entry, created (with a primary shard) when `create`; NULL otherwise. */
md_rdb_t *md_catalog_db(md_router_t *r, const char *db, bool create);
md_rcoll_t *md_catalog_coll(md_router_t *r, const char *ns);
/* Writes config.shards/databases/collections/chunks afresh on the front (without r->lock). */
void md_catalog_publish(md_router_t *r);
bool md_cmd_enable_sharding(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_cmd_shard_collection(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_cmd_list_shards(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_cmd_split(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_cmd_move_chunk(md_router_t *r, const bson_t *cmd, bson_t *reply);
void md_catalog_destroy(md_router_t *r);

/* ---- shardkey.c (pure, under r->lock) ---- */
/* The shard key of `doc`: {field: value} for every key field (missing: null; hashed: the
 * NumberLong hash), as 6.0 targets an insert or a replacement. */
void md_sk_from_doc(const md_rcoll_t *c, const bson_t *doc, bson_t *out);
/* The shard key an equality query pins down ({field: v} or {field: {$eq: v}} for every key
 * field); false when some field is not pinned. */
bool md_sk_from_query(const md_rcoll_t *c, const bson_t *query, bson_t *out);
/* Orders two shard keys (or chunk bounds) field by field. */
int md_sk_compare(const bson_t *a, const bson_t *b);
/* The index of the chunk holding `key`. */
size_t md_sk_chunk(const md_rcoll_t *c, const bson_t *key);
/* The shard owning the chunk that holds `key`. */
int md_sk_shard(const md_rcoll_t *c, const bson_t *key);
/* Whether `query` is an exact match on _id (isExactIdQuery). */
bool md_sk_exact_id(const bson_t *query);
/* The shards a query must go to: a bit per shard. */
uint32_t md_sk_targets(const md_rcoll_t *c, const bson_t *query);
/* documentKey hook for the shards (net/server.h doc_key). */
bool md_sk_doc_key(void *ctx, const md_coll_t *coll, const bson_t *doc, bson_t *key);
/* The shard key pattern as MongoDB prints it: { tenant: 1, _id: 1 }. */
char *md_sk_pattern_string(const bson_t *key);

/* ---- route-write.c, route-read.c, merge-stream.c ---- */
bool md_route_insert(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_route_update(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_route_delete(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_route_find_and_modify(md_router_t *r, const bson_t *cmd, bson_t *reply);
/* find, aggregate (not $changeStream), count, distinct: gathered from the shards, run on the
 * front. */
bool md_route_read(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_mstream_open(md_router_t *r, const bson_t *cmd, bson_t *reply);
/* getMore/killCursors of a merged stream; false when `id` is not one (the front's). */
bool md_mstream_get_more(md_router_t *r, const bson_t *cmd, int64_t id, bson_t *reply);
bool md_mstream_kill(md_router_t *r, int64_t id);
/* Whether `id` is a merged stream's cursor. */
bool md_mstream_owns(md_router_t *r, int64_t id);
void md_mstream_destroy_all(md_router_t *r);

/* Every document of db.coll on shard `s` matching `filter` (NULL: all), as a new array of
 * *n documents (md_docs_free). */
bson_t **md_router_fetch(md_router_t *r, int s, const char *db, const char *coll,
                         const bson_t *filter, size_t *n);

/* route-session.c: retryable writes. Takes the session of `cmd` (lsid and txnNumber) for
 * the command and returns false with it in *out (NULL: the command has no session), or
 * true with the answer in *reply: the recorded reply of a retry, or 225/217. */
bool md_rsession_begin(md_router_t *r, const bson_t *cmd, bool txn_mode, md_rsession_t **out,
                       bson_t *reply);
/* Gives the session back, recording `reply` as the answer to a retry when it succeeded. */
void md_rsession_end(md_router_t *r, md_rsession_t *s, const bson_t *reply);
void md_rsessions_destroy(md_router_t *r);
/* killAllSessions: the transactions the router knows of are gone (their shards' too). */
void md_rsessions_kill_all(md_router_t *r);

/* route-txn.c: transactions. Runs a command carrying autocommit (a statement, or
 * commitTransaction/abortTransaction) and answers it; md_router_call sends the transaction's
 * fields to every shard a statement reaches meanwhile. */
bool md_route_txn(md_router_t *r, const char *name, const bson_t *cmd,
                  bool (*dispatch)(md_router_t *, const char *, const bson_t *, bson_t *),
                  bson_t *reply);
/* `cmd` with the running transaction's fields for shard `s` appended into `out` (which is
 * initialised); false (out untouched) when this thread runs no transaction. */
bool md_txn_fields_for(md_router_t *r, int s, const bson_t *cmd, bson_t *out);
/* Whether this thread runs a statement of a transaction. */
bool md_route_in_txn(void);

/* route-ddl.c: commands sent on whole (see there). */
extern const char *const md_by_database[];
bool md_route_on_database(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply);
bool md_route_drop(md_router_t *r, const char *name, const bson_t *cmd, bson_t *reply);
bool md_route_list_databases(md_router_t *r, const bson_t *cmd, bson_t *reply);
bool md_route_get_more(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply);
bool md_route_kill_cursors(md_router_t *r, md_conn_t *conn, const bson_t *cmd, bson_t *reply);

/* write-merge.c: a write's merged result, counts, upserted ids and write errors with the
 * client's indexes. */
typedef struct {
   int64_t n, n_modified;
   bson_t upserted, errors, wce;
   uint32_t n_upserted, n_errors;
   bool has_modified, has_wce;
   bson_t *failed; /* in a transaction: the first shard's command error, answered as is */
} md_merged_t;
void md_merged_init(md_merged_t *m);
/* Adds one shard's reply; `indexes` maps its statement indexes to the client's. False if it
 * reported a write error (or failed as a whole). */
bool md_merged_add(md_merged_t *m, const bson_t *reply, const int64_t *indexes);
/* Appends `doc` to the array `arr` with its "index" replaced by `index`. */
void md_merged_append(bson_t *arr, uint32_t *count, const bson_t *doc, int64_t index);
/* Sends the statements `stmts` (an array; indexes[i] the client's index of each) of the
 * command's `field` to shard `s` and adds the reply. */
bool md_merged_send(md_router_t *r, int s, const bson_t *cmd, const char *field,
                    const bson_t *stmts, const int64_t *indexes, md_merged_t *m);
/* The merged reply; frees what m holds. */
void md_merged_reply(md_merged_t *m, bson_t *reply);

/* Helpers shared by the route files. */
/* Fields a command sent on to a shard leaves out (router.c). */
extern const char *const md_shard_drop[];
/* The primary shard of `db`, whose entry is created (and published) on first use. */
int md_route_primary(md_router_t *r, const char *db);
/* The namespace of a command on a collection: "db.coll" (bson_free), NULL if not a string. */
char *md_route_ns(const bson_t *cmd, const char **db, const char **coll);
/* Runs `cmd` unchanged (but for md_shard_drop) on `shard`; its reply in `reply`. Returns true
 * (the reply is sent). */
bool md_route_forward(md_router_t *r, int shard, const bson_t *cmd, bson_t *reply);

#endif
