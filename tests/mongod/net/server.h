/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The server: a listener per replica-set member and one thread per connection. All data
 * (store, oplog, cursors, fail points, the members' roles and positions) is guarded by one
 * lock, `lock`; a getMore waiting for change events sleeps on
 * the oplog's condition variable, releasing it. Blocking network I/O happens without the
 * lock, so a slow or stuck client never holds up the others.
 */
#ifndef MD_SERVER_H
#define MD_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "auth/auth.h"
#include "commands/failpoint.h"
#include "data/dataset.h"
#include "txn/sessions.h"
#include "net/tls.h"
#include "topology/topology.h"

typedef struct {
   const char *bind;        /* address to listen on */
   int port;                /* 0: any free port (for every member) */
   int members;             /* replica set members, each on its own port (port + i) */
   int election_timeout_ms; /* without a primary this long, the set elects one */
   bool test_commands;      /* --enable-test-commands: testMemberFault */
   int replication_lag_ms;  /* each secondary applies a write this long after it */
   const char *port_file;   /* written once the server accepts connections */
   size_t oplog_size;       /* change history bound, in entries */
   size_t oplog_bytes;      /* and in bytes of documents held (0: no byte bound) */
   int max_connections;
   int ttl_interval; /* seconds between TTL passes; 0: never */
   int txn_lifetime; /* seconds before an open transaction is aborted (mongod: 60) */
   bool verbose;
   bool auth;                 /* --auth: commands need an authenticated, authorized user */
   const char *tls_cert_file; /* TLS on the listener when set */
   const char *tls_ca_file;   /* verify client certificates against these CAs */
   bool tls_allow_no_cert;    /* with a CA: clients without a certificate are accepted */
   bool mongos;               /* --mongos: the listener is a router (shard/router.h) */
   bool standalone;           /* --standalone: no replica set (hello, $clusterTime, streams) */
   int shards;                /* --shards N behind it */
   int mongos_count;          /* --mongos-count N: routers over the same shards (front members) */
   int periodic_noop_ms;      /* each shard's idle clock tick (periodicNoopIntervalSecs) */
} md_server_opts_t;

typedef struct _md_conn_t md_conn_t;

typedef struct {
   md_server_opts_t opts;
   md_dataset_t data; /* its lock guards everything below except the connection list */
   md_failpoints_t failpoints;
   md_sessions_t sessions;
   md_users_t users;
   pthread_t ttl_thread;
   pthread_cond_t ttl_cond; /* wakes the TTL monitor for shutdown */
   bool ttl_running;

   md_topology_t topo;  /* the members (each with its listener), who is primary */
   md_txn_t **branches; /* per member: an isolated primary's writes (commands/cmd-isolation.c) */
   int32_t rbid;        /* rollback id: 1, raised by every rollback (serverStatus repl.rbid) */
   bson_t *rolled_back; /* the writes rollbacks undid, as an array (testRollbackLog) */
   uint32_t n_rolled_back;
   pthread_t election_thread;
   pthread_cond_t election_cond; /* wakes the election thread: a change, or shutdown */
   bool election_running;
   int accept_wake_fd;         /* eventfd: the accept thread re-reads the members' reach */
   uint64_t listen_gen_wanted; /* reach changes asked for, and those the accept thread has */
   uint64_t listen_gen_done;   /* applied to the listeners (a fault returns after both) */
   pthread_cond_t reach_cond;  /* connections of a hung member wait here for its heal */
   int64_t started_ms;         /* md_now_ms() at start, for serverStatus uptime */
   md_tls_t *tls;              /* NULL: plain TCP */
   atomic_bool stopping;

   /* --mongos (shard/router.c): commands go to `route` instead of the dispatcher. NULL:
    * unused. */
   bool (*route)(md_conn_t *conn, const bson_t *cmd, bson_t *reply);
   void *router;

   pthread_mutex_t conns_lock; /* guards the list and the count */
   pthread_cond_t conns_cond;
   md_conn_t *conns;
   int n_conns;
   int32_t next_conn_id;
} md_server_t;

struct _md_conn_t {
   md_server_t *srv;
   int fd;
   int32_t id;
   int member;         /* the member whose port the client connected to */
   int wake_fd;        /* eventfd: a topology change ends an awaitable hello's wait */
   bool hello_ok;      /* the client said hello or helloOk: mongod's "primary" wording */
   md_tls_conn_t *tls; /* NULL: plain TCP */
   md_auth_conn_t auth;
   char *app_name; /* from the handshake's client.application.name */
   char peer[64];
   md_conn_t *prev, *next;
};

md_server_t *md_server_new(const md_server_opts_t *opts);
/* Binds and listens (setting up TLS first when configured); writes the port file. */
bool md_server_listen(md_server_t *srv);
/* Accepts connections until md_server_stop; then waits for every connection to end. */
void md_server_run(md_server_t *srv);
/* Makes member `m` reachable or not (call with the server lock held): refused connections
 * are closed and its listener closed until healed (the accept thread rebinds it); a hung
 * member's connections stop answering until healed. */
void md_server_set_reach(md_server_t *srv, int m, md_reach_t reach);
/* Waits while the connection's member hangs (call with the server lock held); false when
 * the server stops meanwhile. */
bool md_server_await_reach(md_conn_t *conn);
/* Re-reads the members' reach in the accept thread: closes a refusing member's listener,
 * rebinds a healed one's (net/listen.c). */
void md_server_sync_listeners(md_server_t *srv);

/* Async-signal-safe request to stop. */
void md_server_stop(md_server_t *srv);
void md_server_destroy(md_server_t *srv);
/* Starts/stops the TTL monitor thread (net/ttl-thread.c; --ttl-interval 0: no thread). */
void md_ttl_start(md_server_t *srv);
void md_ttl_stop(md_server_t *srv);

void md_log(const md_server_t *srv, const char *fmt, ...) BSON_GNUC_PRINTF(2, 3);

#endif
