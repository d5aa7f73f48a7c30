/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Binding the listeners: one per replica-set member (--members N), member i on --port + i,
 * or each on a free port with --port 0; TLS set up first when configured. Each member
 * advertises the address clients use (hosts, primary, me). The port file receives member
 * 0's port, then the others' on the following lines, once all listen. md_server_listen runs
 * once, before any connection thread; md_server_sync_listeners runs in the accept thread
 * (the only one touching listen_fd afterwards) when a member stops or starts refusing.
 * Also what a fault does to a member's connections (md_server_set_reach: a refusing
 * member's are closed; md_server_await_reach: a hung member's wait for its heal).
 */
#include "net/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/election.h"

static bool
write_port_file(const char *path, const md_topology_t *topo)
{
   /* Write then rename, so a reader never sees a partial number. */
   char tmp[4096];
   snprintf(tmp, sizeof tmp, "%s.tmp", path);
   FILE *f = fopen(tmp, "w");
   if (!f) {
      return false;
   }
   for (int i = 0; i < topo->n; i++) {
      const char *colon = strrchr(topo->members[i].host_port, ':');
      fprintf(f, "%s\n", colon ? colon + 1 : "");
   }
   return fclose(f) == 0 && rename(tmp, path) == 0;
}

/* Binds one listener on `port` (0: any); returns the socket and the port it got, or -1. */
static int
bind_one(const char *bind_addr, int port, int *actual)
{
   struct addrinfo hints = {
      .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICHOST};
   struct addrinfo *ai = NULL;
   char port_str[16];
   snprintf(port_str, sizeof port_str, "%d", port);
   int rc = getaddrinfo(bind_addr, port_str, &hints, &ai);
   if (rc != 0) {
      fprintf(stderr, "test-mongod: bad --bind address %s: %s\n", bind_addr, gai_strerror(rc));
      return -1;
   }
   int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
   int one = 1;
   setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
   if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
      fprintf(stderr, "test-mongod: cannot listen on %s:%d: %s\n", bind_addr, port,
              strerror(errno));
      freeaddrinfo(ai);
      if (fd >= 0) {
         close(fd);
      }
      return -1;
   }
   freeaddrinfo(ai);
   struct sockaddr_storage ss;
   socklen_t sl = sizeof ss;
   getsockname(fd, (struct sockaddr *)&ss, &sl);
   *actual = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
   return fd;
}

bool
md_server_listen(md_server_t *srv)
{
   if (srv->opts.tls_cert_file) {
      char err[512];
      srv->tls = md_tls_new(srv->opts.tls_cert_file, srv->opts.tls_ca_file,
                            srv->opts.tls_allow_no_cert, err, sizeof err);
      if (!srv->tls) {
         fprintf(stderr, "test-mongod: %s\n", err);
         return false;
      }
   }
   /* Clients must find the address they used in hosts/primary/me (replicaSet=rs0). */
   const char *host = srv->opts.bind;
   if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0) {
      host = "127.0.0.1";
   }
   for (int i = 0; i < srv->topo.n; i++) {
      md_member_t *m = &srv->topo.members[i];
      int actual = 0;
      m->listen_fd = bind_one(srv->opts.bind, srv->opts.port ? srv->opts.port + i : 0, &actual);
      if (m->listen_fd < 0) {
         return false;
      }
      m->port = actual;
      snprintf(m->host_port, sizeof m->host_port, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host,
               actual);
      md_log(srv, "member %d listening on %s", i, m->host_port);
   }
   if (srv->opts.port_file && !write_port_file(srv->opts.port_file, &srv->topo)) {
      fprintf(stderr, "test-mongod: cannot write %s: %s\n", srv->opts.port_file, strerror(errno));
      return false;
   }
   return true;
}

void
md_server_sync_listeners(md_server_t *srv)
{
   pthread_mutex_lock(&srv->data.lock);
   uint64_t gen = srv->listen_gen_wanted;
   for (int i = 0; i < srv->topo.n; i++) {
      md_member_t *m = &srv->topo.members[i];
      if (m->reach == MD_REACH_REFUSE && m->listen_fd >= 0) {
         close(m->listen_fd); /* connecting now: ECONNREFUSED, as to a stopped mongod */
         m->listen_fd = -1;
      } else if (m->reach != MD_REACH_REFUSE && m->listen_fd < 0) {
         int actual;
         m->listen_fd = bind_one(srv->opts.bind, m->port, &actual);
         if (m->listen_fd < 0) {
            fprintf(stderr, "test-mongod: member %d cannot listen again on %d\n", i, m->port);
         }
      }
   }
   srv->listen_gen_done = gen;
   pthread_cond_broadcast(&srv->reach_cond); /* md_server_set_reach waits for this */
   pthread_mutex_unlock(&srv->data.lock);
}

void
md_server_set_reach(md_server_t *srv, int m, md_reach_t reach)
{
   md_topology_set_reach(&srv->topo, m, reach, md_wall_ms());
   if (reach == MD_REACH_REFUSE) {
      pthread_mutex_lock(&srv->conns_lock);
      for (md_conn_t *c = srv->conns; c; c = c->next) {
         if (c->member == m) {
            shutdown(c->fd, SHUT_RDWR); /* its clients see the connection reset */
         }
      }
      pthread_mutex_unlock(&srv->conns_lock);
   }
   uint64_t one = 1, gen = ++srv->listen_gen_wanted;
   if (write(srv->accept_wake_fd, &one, sizeof one) < 0) {
      md_log(srv, "cannot wake the accept thread: %s", strerror(errno));
   }
   pthread_cond_broadcast(&srv->reach_cond);
   md_election_wake(srv);
   /* Return once the listeners match: a client told "healed" can connect at once. */
   while (srv->listen_gen_done < gen && !atomic_load(&srv->stopping)) {
      pthread_cond_wait(&srv->reach_cond, &srv->data.lock);
   }
}

bool
md_server_await_reach(md_conn_t *conn)
{
   md_server_t *srv = conn->srv;
   const md_member_t *me = &srv->topo.members[conn->member];
   while (me->reach == MD_REACH_HANG && !atomic_load(&srv->stopping)) {
      pthread_cond_wait(&srv->reach_cond, &srv->data.lock);
   }
   return (me->reach == MD_REACH_UP || me->reach == MD_REACH_ISOLATE) &&
          !atomic_load(&srv->stopping); /* an isolated member still answers its clients */
}
