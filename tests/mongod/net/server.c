/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The listener and its connections: binding (plain or TLS), one thread per connection that
 * reads a message, runs its command under the server lock and writes the reply without it,
 * the awaitable hello's wait and its exhaust stream, the TTL thread's start, and shutdown.
 * The connection list has its own lock (conns_lock); everything else is the server lock's.
 */
#include "net/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "commands/commands.h"
#include "data/ttl.h"
#include "net/wire.h"
#include "net/election.h"
#include "topology/replication.h"

void
md_log(const md_server_t *srv, const char *fmt, ...)
{
   if (!srv->opts.verbose) {
      return;
   }
   va_list ap;
   va_start(ap, fmt);
   fputs("test-mongod: ", stderr);
   vfprintf(stderr, fmt, ap);
   fputc('\n', stderr);
   va_end(ap);
}

/* The store's versions hook: the previous version of a document about to change. */
static void
record_version(void *ctx, md_coll_t *coll, const bson_t *doc)
{
   md_server_t *srv = ctx;
   md_versions_record(&srv->data.versions, coll, doc);
}

/* The store's versions hook for the catalog: what a collection was before it changes. */
static void
record_catalog(void *ctx, md_db_t *db, const char *name, md_coll_t *coll)
{
   md_server_t *srv = ctx;
   md_versions_catalog_record(&srv->data.versions, db, name, coll);
}

/* The oldest position a member reads at: its commit point as it knows it, no newer than
 * its applied position (brought up to date; an isolated member's stays at the cut). */
static uint64_t
oldest_position(void *ctx)
{
   md_server_t *srv = ctx;
   md_repl_advance(&srv->topo, &srv->data.oplog, md_wall_ms(), NULL);
   uint64_t oldest = srv->data.oplog.next_seq;
   for (int i = 0; i < srv->topo.n; i++) {
      uint64_t seq = md_repl_member_commit(&srv->topo, i);
      oldest = seq < oldest ? seq : oldest;
   }
   return oldest;
}

md_server_t *
md_server_new(const md_server_opts_t *opts)
{
   md_server_t *srv = calloc(1, sizeof *srv);
   srv->opts = *opts;
   pthread_mutex_init(&srv->data.lock, NULL);
   pthread_mutex_init(&srv->conns_lock, NULL);
   pthread_cond_init(&srv->conns_cond, NULL);
   pthread_cond_init(&srv->ttl_cond, NULL);
   srv->data.store = md_store_new();
   md_oplog_init(&srv->data.oplog, opts->oplog_size, opts->oplog_bytes);
   md_cursors_init(&srv->data.cursors);
   md_sessions_init(&srv->sessions);
   md_txns_init(&srv->data.txns, srv->data.store, &srv->data.cursors,
                (int64_t)(opts->txn_lifetime > 0 ? opts->txn_lifetime : 60) * 1000);
   md_users_init(&srv->users, opts->auth);
   md_topology_init(&srv->topo, opts->members, opts->election_timeout_ms);
   srv->topo.replication_lag_ms = opts->replication_lag_ms;
   srv->branches = calloc((size_t)srv->topo.n, sizeof *srv->branches);
   srv->rbid = 1;
   srv->rolled_back = bson_new();
   md_versions_init(&srv->data.versions, &srv->data.oplog);
   srv->data.versions.enabled = srv->topo.n > 1;
   srv->data.versions.oldest = oldest_position;
   srv->data.versions.oldest_ctx = srv;
   srv->data.store->versions.doc_change = record_version;
   srv->data.store->versions.catalog_change = record_catalog;
   srv->data.store->versions.ctx = srv;
   pthread_cond_init(&srv->election_cond, NULL);
   pthread_cond_init(&srv->reach_cond, NULL);
   srv->accept_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
   srv->next_conn_id = 1;
   srv->started_ms = md_now_ms();
   atomic_init(&srv->stopping, false);
   return srv;
}

void
md_server_destroy(md_server_t *srv)
{
   if (!srv) {
      return;
   }
   for (int i = 0; i < srv->topo.n; i++) {
      if (srv->topo.members[i].listen_fd >= 0) {
         close(srv->topo.members[i].listen_fd);
      }
   }
   for (int i = 0; i < srv->topo.n; i++) {
      md_txn_free(&srv->data.txns, srv->branches[i]);
   }
   free(srv->branches);
   bson_destroy(srv->rolled_back);
   md_topology_destroy(&srv->topo);
   md_versions_destroy(&srv->data.versions);
   pthread_cond_destroy(&srv->election_cond);
   pthread_cond_destroy(&srv->reach_cond);
   close(srv->accept_wake_fd);
   md_sessions_destroy(&srv->sessions, &srv->data.txns);
   md_txns_destroy(&srv->data.txns);
   md_cursors_destroy(&srv->data.cursors);
   md_users_destroy(&srv->users);
   md_tls_destroy(srv->tls);
   md_oplog_destroy(&srv->data.oplog);
   md_store_destroy(srv->data.store);
   md_failpoints_destroy(&srv->failpoints);
   pthread_cond_destroy(&srv->conns_cond);
   pthread_cond_destroy(&srv->ttl_cond);
   pthread_mutex_destroy(&srv->conns_lock);
   pthread_mutex_destroy(&srv->data.lock);
   free(srv);
}

void
md_server_stop(md_server_t *srv)
{
   atomic_store(&srv->stopping, true);
   uint64_t one = 1;
   if (write(srv->accept_wake_fd, &one, sizeof one) < 0) {
      /* Full counter: the accept thread is being woken anyway. */
   }
}

static bool
write_full(md_conn_t *conn, const uint8_t *buf, size_t len)
{
   int fd = conn->fd;
   if (conn->tls) {
      return md_tls_send_all(conn->tls, buf, len);
   }
   while (len > 0) {
      ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) {
         continue;
      }
      if (n <= 0) {
         return false;
      }
      buf += n;
      len -= (size_t)n;
   }
   return true;
}

static atomic_int reply_ids;

typedef enum { CLIENT_IDLE, CLIENT_SENT, CLIENT_GONE } client_state_t;

/* Forgets topology changes announced so far (the hello about to run reports them). */
static void
drain_wake(md_conn_t *conn)
{
   uint64_t n;
   while (read(conn->wake_fd, &n, sizeof n) > 0) {
   }
}

/* Waits up to `ms` for the client to close or send, without any lock: the awaitable hello's
 * wait. Server shutdown shuts the socket down, which ends the wait as GONE. */
static client_state_t
await_client(md_conn_t *conn, int64_t ms)
{
   int64_t deadline = md_now_ms() + ms;
   for (;;) {
      int64_t left = deadline - md_now_ms();
      struct pollfd p[2] = {{.fd = conn->fd, .events = POLLIN},
                            {.fd = conn->wake_fd, .events = POLLIN}};
      int n = left > 0 ? poll(p, 2, left > INT32_MAX ? INT32_MAX : (int)left) : 0;
      if (atomic_load(&conn->srv->stopping)) {
         return CLIENT_GONE;
      }
      if (n < 0 && errno == EINTR) {
         continue;
      }
      if (n <= 0) {
         return n == 0 ? CLIENT_IDLE : CLIENT_GONE;
      }
      if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
         drain_wake(conn); /* the topology changed: answer now */
         return CLIENT_IDLE;
      }
      char c;
      ssize_t got = recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
      return got > 0 ? CLIENT_SENT : CLIENT_GONE;
   }
}

static bool
send_reply(md_conn_t *conn, int32_t op_code, int32_t *reply_id, int32_t response_to,
           const bson_t *reply, bool more_to_come)
{
   size_t out_len;
   *reply_id = atomic_fetch_add(&reply_ids, 1) + 1;
   uint8_t *out = md_wire_build_reply(op_code, *reply_id, response_to, reply, &out_len);
   if (more_to_come) {
      md_wire_set_more_to_come(out);
   }
   bool ok = write_full(conn, out, out_len);
   bson_free(out);
   return ok;
}

/* A hung member (testMemberFault) neither runs nor answers anything until healed, as a
 * stopped process; a refusing one closes the connection. */
static bool
reachable(md_conn_t *conn)
{
   pthread_mutex_lock(&conn->srv->data.lock);
   bool ok = md_server_await_reach(conn);
   pthread_mutex_unlock(&conn->srv->data.lock);
   return ok;
}

/* Runs a parsed command and answers it. An awaitable hello first waits (md_hello_await_ms);
 * with exhaustAllowed it becomes a stream, as mongod serves it: every reply carries
 * moreToCome and answers the previous reply, and another follows each maxAwaitTimeMS until
 * the client closes the connection. Returns false when the connection must be closed. */
static bool
serve(md_conn_t *conn, md_request_t *req)
{
   int64_t max_await = 0;
   drain_wake(conn);
   int64_t wait = md_hello_await_ms(conn, &req->cmd, &max_await);
   bool stream = wait >= 0 && req->exhaust_allowed && req->op_code == MD_OP_MSG;
   int32_t response_to = req->request_id, reply_id;
   for (;;) {
      client_state_t state = wait > 0 ? await_client(conn, wait) : CLIENT_IDLE;
      if (state == CLIENT_GONE) {
         return false;
      }
      bson_t reply;
      bson_iter_t ok_it;
      if (!reachable(conn)) {
         return false;
      }
      if (!md_command_run(conn, &req->cmd, &reply) || !reachable(conn)) {
         bson_destroy(&reply);
         return false;
      }
      bool more = stream && state == CLIENT_IDLE && bson_iter_init_find(&ok_it, &reply, "ok") &&
                  bson_iter_as_bool(&ok_it);
      bool sent =
         req->more_to_come || send_reply(conn, req->op_code, &reply_id, response_to, &reply, more);
      bson_destroy(&reply);
      if (!sent || !more) {
         return sent;
      }
      response_to = reply_id;
      wait = max_await;
   }
}

/* Handles one message; returns false when the connection must be closed. */
static bool
handle_message(md_conn_t *conn, const uint8_t *msg, size_t len)
{
   md_request_t req;
   bson_error_t error = {0};
   bson_t reply;
   int32_t reply_id;
   md_wire_result_t res = md_wire_parse(msg, len, &req, &error);
   if (res == MD_WIRE_ERROR_CLOSE) {
      md_log(conn->srv, "conn%d: closing: %s", (int)conn->id, error.message);
      return false;
   }
   if (res == MD_WIRE_OK) {
      bool keep = serve(conn, &req);
      md_request_destroy(&req);
      return keep;
   }
   md_log(conn->srv, "conn%d: bad message: %s", (int)conn->id, error.message);
   md_error_reply(conn->srv, &error, NULL, &reply);
   bool keep = send_reply(conn, req.op_code, &reply_id, req.request_id, &reply, false) &&
               !md_wire_error_is_fatal((int32_t)error.code);
   bson_destroy(&reply);
   return keep;
}

/* Incoming bytes. One recv usually brings a whole message (or several), so reading into a
 * buffer saves a system call per message compared with reading header and body apart. */
typedef struct {
   uint8_t *buf;
   size_t cap, len, off;
} rbuf_t;

#define RBUF_SIZE (64 * 1024)

/* Makes at least `need` unread bytes available; false on EOF or error. */
static bool
rbuf_fill(md_conn_t *conn, rbuf_t *rb, size_t need)
{
   if (rb->len - rb->off >= need) {
      return true;
   }
   if (rb->off + need > rb->cap) {
      memmove(rb->buf, rb->buf + rb->off, rb->len - rb->off);
      rb->len -= rb->off;
      rb->off = 0;
      if (need > rb->cap) {
         rb->cap = need;
         rb->buf = realloc(rb->buf, rb->cap);
      }
   }
   while (rb->len - rb->off < need) {
      ssize_t n = conn->tls ? md_tls_recv(conn->tls, rb->buf + rb->len, rb->cap - rb->len)
                            : recv(conn->fd, rb->buf + rb->len, rb->cap - rb->len, 0);
      if (n < 0 && errno == EINTR) {
         continue;
      }
      if (n <= 0) {
         return false;
      }
      rb->len += (size_t)n;
   }
   return true;
}

static void
rbuf_consume(rbuf_t *rb, size_t n)
{
   rb->off += n;
   if (rb->off == rb->len) {
      rb->off = rb->len = 0;
      if (rb->cap > 16 * RBUF_SIZE) {
         /* Never keep a huge message's buffer for the life of the connection. */
         rb->cap = RBUF_SIZE;
         rb->buf = realloc(rb->buf, rb->cap);
      }
   }
}

static void
conn_loop(md_conn_t *conn)
{
   rbuf_t rb = {malloc(RBUF_SIZE), RBUF_SIZE, 0, 0};
   while (!atomic_load(&conn->srv->stopping) && rbuf_fill(conn, &rb, 16)) {
      const uint8_t *h = rb.buf + rb.off;
      int32_t len = (int32_t)((uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                              (uint32_t)h[3] << 24);
      if (!md_wire_check_length(len)) {
         md_log(conn->srv, "conn%d: bad message length %d", (int)conn->id, (int)len);
         break;
      }
      if (!rbuf_fill(conn, &rb, (size_t)len) ||
          !handle_message(conn, rb.buf + rb.off, (size_t)len)) {
         break;
      }
      rbuf_consume(&rb, (size_t)len);
   }
   free(rb.buf);
}

static void *
conn_main(void *arg)
{
   md_conn_t *conn = arg;
   md_server_t *srv = conn->srv;
   char err[512];
   if (srv->tls && !(conn->tls = md_tls_accept(srv->tls, conn->fd, err, sizeof err))) {
      md_log(srv, "conn%d: %s", (int)conn->id, err);
   } else {
      conn_loop(conn);
   }
   md_tls_conn_destroy(conn->tls);
   md_log(srv, "conn%d: closed", (int)conn->id);
   pthread_mutex_lock(&srv->conns_lock);
   if (conn->prev) {
      conn->prev->next = conn->next;
   } else {
      srv->conns = conn->next;
   }
   if (conn->next) {
      conn->next->prev = conn->prev;
   }
   close(conn->fd);
   close(conn->wake_fd);
   md_auth_conn_cleanup(&conn->auth);
   free(conn->app_name);
   free(conn);
   srv->n_conns--;
   pthread_cond_broadcast(&srv->conns_cond);
   pthread_mutex_unlock(&srv->conns_lock);
   return NULL;
}

static void
start_conn(md_server_t *srv, int member, int fd, const struct sockaddr_storage *ss)
{
   pthread_mutex_lock(&srv->conns_lock);
   if (srv->n_conns >= srv->opts.max_connections) {
      pthread_mutex_unlock(&srv->conns_lock);
      fprintf(stderr, "test-mongod: refusing connection: %d connections open (max %d)\n",
              srv->n_conns, srv->opts.max_connections);
      close(fd);
      return;
   }
   md_conn_t *conn = calloc(1, sizeof *conn);
   conn->srv = srv;
   conn->fd = fd;
   conn->member = member;
   conn->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
   conn->id = srv->next_conn_id++;
   if (ss->ss_family == AF_INET) {
      const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
      char ip[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &in->sin_addr, ip, sizeof ip);
      snprintf(conn->peer, sizeof conn->peer, "%s:%d", ip, ntohs(in->sin_port));
      conn->auth.loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
   } else if (ss->ss_family == AF_INET6) {
      const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
      conn->auth.loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
   }
   int one = 1;
   setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
   pthread_attr_t attr;
   pthread_attr_init(&attr);
   pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
   pthread_attr_setstacksize(&attr, 4 * 1024 * 1024);
   pthread_t tid;
   conn->next = srv->conns;
   if (srv->conns) {
      srv->conns->prev = conn;
   }
   srv->conns = conn;
   srv->n_conns++;
   if (pthread_create(&tid, &attr, conn_main, conn) != 0) {
      srv->conns = conn->next;
      if (conn->next) {
         conn->next->prev = NULL;
      }
      srv->n_conns--;
      close(fd);
      close(conn->wake_fd);
      free(conn);
   }
   pthread_attr_destroy(&attr);
   pthread_mutex_unlock(&srv->conns_lock);
}

/* Waits for a connection on any member's listener (a refusing member has none) and starts
 * its thread; a wake-up re-reads the members' reach. False once the server stops. */
static bool
accept_next(md_server_t *srv)
{
   struct pollfd p[65];
   int n = srv->topo.n < 64 ? srv->topo.n : 64;
   for (int i = 0; i < n; i++) {
      p[i] = (struct pollfd){.fd = srv->topo.members[i].listen_fd, .events = POLLIN};
   }
   p[n] = (struct pollfd){.fd = srv->accept_wake_fd, .events = POLLIN};
   if (poll(p, (nfds_t)n + 1, -1) < 0 && errno != EINTR) {
      return false;
   }
   if (atomic_load(&srv->stopping)) {
      return false;
   }
   if (p[n].revents & POLLIN) {
      uint64_t count;
      while (read(srv->accept_wake_fd, &count, sizeof count) > 0) {
      }
      md_server_sync_listeners(srv);
      return true;
   }
   for (int i = 0; i < n; i++) {
      if (!(p[i].revents & POLLIN)) {
         continue;
      }
      struct sockaddr_storage ss;
      socklen_t sl = sizeof ss;
      int fd = accept4(p[i].fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
      if (fd >= 0) {
         start_conn(srv, i, fd, &ss);
      } else if (errno == EMFILE || errno == ENFILE) {
         usleep(10000);
      }
   }
   return true;
}

void
md_server_run(md_server_t *srv)
{
   md_ttl_start(srv);
   md_election_start(srv);
   while (!atomic_load(&srv->stopping) && accept_next(srv)) {
   }
   /* Wake every connection: blocked reads end, waiting getMores see `stopping`. */
   pthread_mutex_lock(&srv->conns_lock);
   for (md_conn_t *c = srv->conns; c; c = c->next) {
      shutdown(c->fd, SHUT_RDWR);
   }
   pthread_mutex_unlock(&srv->conns_lock);
   pthread_mutex_lock(&srv->data.lock);
   pthread_cond_broadcast(&srv->reach_cond); /* connections of a hung member */
   md_oplog_wake(&srv->data.oplog);
   pthread_cond_broadcast(&srv->data.txns.cond); /* writes waiting for transactions */
   pthread_mutex_unlock(&srv->data.lock);
   pthread_mutex_lock(&srv->conns_lock);
   while (srv->n_conns > 0) {
      pthread_cond_wait(&srv->conns_cond, &srv->conns_lock);
   }
   pthread_mutex_unlock(&srv->conns_lock);
   md_ttl_stop(srv);
   md_election_stop(srv);
}
