/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * test-mongod: an in-memory MongoDB wire-protocol server for the project's tests. main()
 * parses arguments, sets up signals and runs the server; SIGTERM/SIGINT stop it cleanly
 * (exit 0, all memory freed: sanitizer builds report leaks at exit).
 */
#include <getopt.h>
#include <stddef.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sysexits.h>
#include <time.h>

#include "net/server.h"
#include "shard/router.h"

static void
usage(FILE *out)
{
   fputs("usage: test-mongod [OPTION]...\n"
         "An in-memory MongoDB 6.0 replica-set primary (set rs0) for tests.\n\n"
         "  --port N          TCP port to listen on; 0 picks a free one (default 27017)\n"
         "  --port-file FILE  write the port to FILE once connections are accepted\n"
         "  --bind ADDR       address to listen on and advertise (default 127.0.0.1)\n"
         "  --members N       a replica set of N members, each on its own port (the next\n"
         "                    ones after --port, or free ones with --port 0) sharing one\n"
         "                    data set (default 1)\n"
         "  --election-timeout-ms N  how long the set stays without a primary before\n"
         "                    electing one (default 10000, as mongod's)\n"
         "  --enable-test-commands  testMemberFault (members that hang or refuse)\n"
         "  --mongos          answer as mongos 6.0 in front of --shards N shards\n"
         "  --standalone      answer as a standalone mongod: no set in hello, no cluster\n"
         "                    time, change streams refused (40573); for tools that must\n"
         "                    refuse one\n"
         "  --shards N        shards behind --mongos, each one member (default 2)\n"
         "  --mongos-count N  N routers over the same shards, each on its own port (the\n"
         "                    port file lists them, one a line; default 1)\n"
         "  --periodic-noop-ms N  how often an idle shard's clock ticks (default 10000,\n"
         "                    mongod's periodicNoopIntervalSecs)\n"
         "  --replication-lag-ms N  how far each secondary's replication trails (default 0)\n"
         "  --oplog-size N    change-stream history bound in entries (default 1000000);\n"
         "                    resuming from older tokens fails with 286\n"
         "  --oplog-mb N      also bound the memory the history takes to about N MiB\n"
         "                    (default 1024; 0: no byte bound)\n"
         "  --max-connections N  refuse connections beyond N (default 2000)\n"
         "  --ttl-interval N  seconds between TTL index passes (default 60; 0: never)\n"
         "  --transaction-lifetime N  seconds before an open transaction is aborted\n"
         "                    (mongod's transactionLifetimeLimitSeconds; default 60)\n"
         "  --auth            require authentication (SCRAM-SHA-1/-256) and roles\n"
         "  --user NAME:PASSWORD:ROLE[@DB][,ROLE[@DB]]...\n"
         "                    create a user in admin at start (repeatable; implies --auth);\n"
         "                    a role without @DB is on admin\n"
         "  --tls-cert-file FILE  serve TLS only, with this PEM certificate and key\n"
         "  --tls-ca-file FILE    require client certificates signed by these CAs\n"
         "  --tls-allow-connections-without-certificates\n"
         "                    with --tls-ca-file: verify a certificate only if one is sent\n"
         "  --without-expression NAME  behave like a server that lacks the aggregation\n"
         "                    expression NAME (e.g. toHashedIndexKey): using it fails with\n"
         "                    168 InvalidPipelineOperator; may be repeated\n"
         "  --verbose         log connections and errors to stderr\n"
         "  --help            show this help\n",
         out);
}

static bool
parse_number(const char *s, long min, long max, long *out)
{
   char *end;
   long v = strtol(s, &end, 10);
   if (!*s || *end || v < min || v > max) {
      return false;
   }
   *out = v;
   return true;
}

typedef struct {
   const char **specs;
   int n;
} user_specs_t;

/* One row per option: what it sets in md_server_opts_t and the values it takes. */
typedef enum {
   OPT_INT,   /* an int field, min..max */
   OPT_SIZE,  /* a size_t field, min..max, times `scale` */
   OPT_FLAG,  /* a bool field set to true */
   OPT_STR,   /* a const char * field */
   OPT_USER,  /* --user: a spec kept for later, implies --auth */
   OPT_NOEXPR /* --without-expression */
} opt_kind_t;

typedef struct {
   const char *name;
   opt_kind_t kind;
   size_t offset; /* into md_server_opts_t */
   long min, max, scale;
   const char *range; /* said after a bad value */
} opt_t;

#define OPT_AT(field) offsetof(md_server_opts_t, field)

static const opt_t options[] = {
   {.name = "port", .kind = OPT_INT, .offset = OPT_AT(port), .max = 65535},
   {.name = "port-file", .kind = OPT_STR, .offset = OPT_AT(port_file)},
   {.name = "bind", .kind = OPT_STR, .offset = OPT_AT(bind)},
   {.name = "bind_ip", .kind = OPT_STR, .offset = OPT_AT(bind)},
   {.name = "members",
    .kind = OPT_INT,
    .offset = OPT_AT(members),
    .min = 1,
    .max = 50,
    .range = " (1 to 50, as MongoDB)"},
   {.name = "enable-test-commands", .kind = OPT_FLAG, .offset = OPT_AT(test_commands)},
   {.name = "replication-lag-ms",
    .kind = OPT_INT,
    .offset = OPT_AT(replication_lag_ms),
    .max = 86400000},
   {.name = "election-timeout-ms",
    .kind = OPT_INT,
    .offset = OPT_AT(election_timeout_ms),
    .min = 1,
    .max = 86400000},
   {.name = "oplog-size",
    .kind = OPT_SIZE,
    .offset = OPT_AT(oplog_size),
    .min = 1,
    .max = 1L << 30,
    .scale = 1},
   {.name = "oplog-mb",
    .kind = OPT_SIZE,
    .offset = OPT_AT(oplog_bytes),
    .max = 1L << 20,
    .scale = 1024 * 1024},
   {.name = "max-connections",
    .kind = OPT_INT,
    .offset = OPT_AT(max_connections),
    .min = 1,
    .max = 100000},
   {.name = "ttl-interval", .kind = OPT_INT, .offset = OPT_AT(ttl_interval), .max = 86400},
   {.name = "transaction-lifetime",
    .kind = OPT_INT,
    .offset = OPT_AT(txn_lifetime),
    .min = 1,
    .max = 86400},
   {.name = "auth", .kind = OPT_FLAG, .offset = OPT_AT(auth)},
   {.name = "user", .kind = OPT_USER},
   {.name = "tls-cert-file", .kind = OPT_STR, .offset = OPT_AT(tls_cert_file)},
   {.name = "tls-ca-file", .kind = OPT_STR, .offset = OPT_AT(tls_ca_file)},
   {.name = "tls-allow-connections-without-certificates",
    .kind = OPT_FLAG,
    .offset = OPT_AT(tls_allow_no_cert)},
   {.name = "without-expression", .kind = OPT_NOEXPR},
   {.name = "mongos", .kind = OPT_FLAG, .offset = OPT_AT(mongos)},
   {.name = "standalone", .kind = OPT_FLAG, .offset = OPT_AT(standalone)},
   {.name = "shards",
    .kind = OPT_INT,
    .offset = OPT_AT(shards),
    .min = 1,
    .max = 16,
    .range = " (1 to 16)"},
   {.name = "mongos-count",
    .kind = OPT_INT,
    .offset = OPT_AT(mongos_count),
    .min = 1,
    .max = 16,
    .range = " (1 to 16)"},
   {.name = "periodic-noop-ms",
    .kind = OPT_INT,
    .offset = OPT_AT(periodic_noop_ms),
    .min = 1,
    .max = 86400000},
   {.name = "verbose", .kind = OPT_FLAG, .offset = OPT_AT(verbose)},
};

#define N_OPTIONS (sizeof options / sizeof options[0])
#define OPT_HELP 'h'
#define OPT_VERBOSE 'v'
#define OPT_BASE 256 /* getopt_long's value for options[i] is OPT_BASE + i */

/* Applies options[i] with `arg`; false (after saying why) when the value is bad. */
static bool
apply_option(const opt_t *o, const char *arg, md_server_opts_t *opts, user_specs_t *users)
{
   char *field = (char *)opts + o->offset;
   long n;
   switch (o->kind) {
   case OPT_INT:
   case OPT_SIZE:
      if (!parse_number(arg, o->min, o->max, &n)) {
         fprintf(stderr, "test-mongod: bad --%s %s%s\n", o->name, arg, o->range ? o->range : "");
         return false;
      }
      if (o->kind == OPT_INT) {
         *(int *)field = (int)n;
      } else {
         *(size_t *)field = (size_t)n * (size_t)o->scale;
      }
      return true;
   case OPT_FLAG:
      *(bool *)field = true;
      return true;
   case OPT_STR:
      *(const char **)field = arg;
      return true;
   case OPT_USER:
      opts->auth = true;
      users->specs = realloc(users->specs, (size_t)(users->n + 1) * sizeof *users->specs);
      users->specs[users->n++] = arg;
      return true;
   case OPT_NOEXPR:
      if (!tm_expr_disable(arg)) {
         fprintf(stderr, "test-mongod: --without-expression: unknown expression %s\n", arg);
         return false;
      }
      return true;
   }
   return false;
}

/* Options that contradict each other: EX_USAGE after saying why, else 0. */
static int
check_options(const md_server_opts_t *opts)
{
   if ((opts->tls_ca_file || opts->tls_allow_no_cert) && !opts->tls_cert_file) {
      fprintf(stderr, "test-mongod: --tls-ca-file and --tls-allow-connections-without-"
                      "certificates need --tls-cert-file\n");
      return EX_USAGE;
   }
   if (opts->mongos && (opts->members > 1 || opts->auth)) {
      fprintf(stderr, "test-mongod: --mongos with --members or --auth is not supported\n");
      return EX_USAGE;
   }
   if (opts->standalone && (opts->members > 1 || opts->mongos || opts->test_commands)) {
      fprintf(stderr, "test-mongod: --standalone with --members, --mongos or "
                      "--enable-test-commands is not supported\n");
      return EX_USAGE;
   }
   if (opts->mongos_count > 1 && !opts->mongos) {
      fprintf(stderr, "test-mongod: --mongos-count needs --mongos\n");
      return EX_USAGE;
   }
   return 0;
}

/* 0, EX_USAGE, or -1 after --help. */
static int
parse_args(int argc, char **argv, md_server_opts_t *opts, user_specs_t *users)
{
   struct option longopts[N_OPTIONS + 2];
   for (size_t i = 0; i < N_OPTIONS; i++) {
      bool takes = options[i].kind != OPT_FLAG;
      longopts[i] = (struct option){options[i].name, takes ? required_argument : no_argument, NULL,
                                    OPT_BASE + (int)i};
   }
   longopts[N_OPTIONS] = (struct option){"help", no_argument, NULL, OPT_HELP};
   longopts[N_OPTIONS + 1] = (struct option){NULL, 0, NULL, 0};
   int ch;
   while ((ch = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
      if (ch >= OPT_BASE && ch < OPT_BASE + (int)N_OPTIONS) {
         if (!apply_option(&options[ch - OPT_BASE], optarg, opts, users)) {
            return EX_USAGE;
         }
      } else if (ch == OPT_VERBOSE) {
         opts->verbose = true;
      } else if (ch == OPT_HELP) {
         usage(stdout);
         return -1;
      } else {
         usage(stderr);
         return EX_USAGE;
      }
   }
   if (optind < argc) {
      fprintf(stderr, "test-mongod: unexpected argument %s\n", argv[optind]);
      return EX_USAGE;
   }
   return check_options(opts);
}

typedef struct {
   md_server_t *srv;
   sigset_t set;
} sig_ctx_t;

static void *
signal_main(void *arg)
{
   sig_ctx_t *ctx = arg;
   int sig = 0;
   sigwait(&ctx->set, &sig);
   md_server_stop(ctx->srv);
   return NULL;
}

/* Read by jemalloc when the build links it (meson -Dallocator); glibc's malloc ignores it.
 * Freed pages go back to the kernel within a second, and at once with MADV_DONTNEED instead
 * of lingering as MADV_FREE ("muzzy") pages that still count as resident: with jemalloc's
 * defaults (10 s each) RSS grew 10-22 MiB over server-pymongo's 600-connection leak check,
 * with these 1.5-5.5 MiB like glibc's. MALLOC_CONF in the environment still overrides. */
extern const char *malloc_conf;
const char *malloc_conf = "dirty_decay_ms:1000,muzzy_decay_ms:0";

int
main(int argc, char **argv)
{
   md_server_opts_t opts = {.bind = "127.0.0.1",
                            .port = 27017,
                            .oplog_size = 1000000,
                            .oplog_bytes = (size_t)1024 * 1024 * 1024,
                            .max_connections = 2000,
                            .ttl_interval = 60,
                            .txn_lifetime = 60,
                            .members = 1,
                            .election_timeout_ms = 10000,
                            .shards = 2,
                            .periodic_noop_ms = 10000};
   user_specs_t users = {NULL, 0};
   int rc = parse_args(argc, argv, &opts, &users);
   if (rc != 0) {
      free(users.specs);
      return rc < 0 ? 0 : rc;
   }
   if (opts.mongos && opts.mongos_count > 1) {
      opts.members = opts.mongos_count; /* one listener each (shard/router.c) */
   }
   srand((unsigned)time(NULL));
   /* Commands run under one server lock, so per-thread malloc arenas buy no concurrency; with
    * one per connection thread, history and documents freed by one thread and allocated by
    * another fragmented the heap (215 MB more resident in a 1M-event benchmark). Only
    * glibc's malloc reads this: a build linked with jemalloc ignores it. */
   mallopt(M_ARENA_MAX, 2);
   /* One descriptor per connection: allow as many as the hard limit permits. */
   struct rlimit rl;
   if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
   }
   sig_ctx_t ctx;
   sigemptyset(&ctx.set);
   sigaddset(&ctx.set, SIGTERM);
   sigaddset(&ctx.set, SIGINT);
   sigaddset(&ctx.set, SIGHUP);
   /* Blocked before any thread starts, so only the signal thread ever receives them. */
   pthread_sigmask(SIG_BLOCK, &ctx.set, NULL);
   signal(SIGPIPE, SIG_IGN);
   ctx.srv = md_server_new(&opts);
   for (int i = 0; i < users.n; i++) {
      bson_error_t error;
      if (!md_users_add_spec(&ctx.srv->users, users.specs[i], &error)) {
         fprintf(stderr, "test-mongod: --user: %s\n", error.message); /* never the password */
         free(users.specs);
         md_server_destroy(ctx.srv);
         return EX_USAGE;
      }
   }
   free(users.specs);
   if (opts.mongos) {
      md_router_attach(ctx.srv);
   }
   if (!md_server_listen(ctx.srv)) {
      md_router_detach(ctx.srv);
      md_server_destroy(ctx.srv);
      return EX_UNAVAILABLE;
   }
   pthread_t sig_thread;
   pthread_create(&sig_thread, NULL, signal_main, &ctx);
   md_server_run(ctx.srv);
   if (!atomic_load(&ctx.srv->stopping)) {
      pthread_kill(sig_thread, SIGTERM); /* the listener failed: stop the signal thread too */
   }
   pthread_join(sig_thread, NULL);
   md_router_detach(ctx.srv);
   md_server_destroy(ctx.srv);
   return 0;
}
