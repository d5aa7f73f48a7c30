/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Command line. A mode sets every size first (--smoke, --quick, default, --long); explicit
 * flags then override single values, whatever their position.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include "bench.h"

static void
usage(FILE *out)
{
   fprintf(out,
           "Usage: outbox-bench [--smoke | --quick | --long] [OPTIONS]\n"
           "End-to-end benchmark of liboutbox and outbox-relay against paho's own publish rate.\n"
           "Servers: OUTBOX_MONGODB_URI and OUTBOX_MQTT_URI name existing ones; otherwise\n"
           "test-mongod (--mongod) and mosquitto are started on free loopback ports.\n\n"
           "  --smoke             a few hundred events; checks everything arrives (seconds)\n"
           "  --quick             reduced sizes, under two minutes\n"
           "  --long              1M-event drain and the scaling runs (window, events per\n"
           "                      commit, payload size); test-mongod needs many GB of RAM for it\n"
           "  --relay PATH        outbox-relay to measure (without it: baseline and lib only)\n"
           "  --admin PATH        outbox-admin for the replay part (default: next to --relay)\n"
           "  --mongod PATH       test-mongod executable\n"
           "  --mosquitto PATH    mosquitto executable (default /usr/sbin/mosquitto)\n"
           "  --publisher PATH    the ceiling's publisher (default: outbox-bench-pub next to\n"
           "                      this program; PATH-sysmalloc, when it exists, gives a\n"
           "                      secondary ceiling with glibc's malloc)\n"
           "  --json FILE         also write the figures as JSON\n"
           "  --only LIST         comma list of: baseline,drain,steady,lib,scale,group,replay; or\n"
           "                      single drains: drain-few,drain-many,drain-stream,drain-bare,\n"
           "                      drain-archive\n"
           "  --events N          drain backlog size\n"
           "  --entities A,B      entity counts of the two drains (default 1000,100000)\n"
           "  --payload BYTES     event data size (default 200)\n"
           "  --window N          MQTT in-flight window, baseline and relay (default 256)\n"
           "  --window-flag FLAG  relay flag that sets its window (default --inflight-window)\n"
           "  --relay-arg ARG     extra relay argument (repeatable)\n"
           "  --writers N         steady-state writer threads (default 4)\n"
           "  --phase-seconds S   duration of each steady-state phase\n"
           "  --lib-seconds S     duration of each library benchmark run\n"
           "  --database DB       database for the benchmark's collections (default %s)\n"
           "  --timeout S         give up on one measurement after S seconds\n"
           "  --oplog-mb N        test-mongod's change history bound (default 256)\n"
           "  --syscalls          also count the relay's system calls per event and thread in\n"
           "                      drains (perf trace -s; slows the traced drains: compare\n"
           "                      counts, not rates, with another traced run)\n"
           "  --allocs            and its allocations per event and thread (perf stat on\n"
           "                      uprobes of malloc, calloc, realloc: several times slower)\n"
           "  -v, --verbose       progress on stderr\n"
           "  -h, --help          this help\n",
           BENCH_DB_DEFAULT);
}

/* outbox-bench-pub in the directory of this executable (both are built in one place). */
static const char *
default_publisher(void)
{
   static char path[4096];
   ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
   char *slash = n > 0 ? memrchr(path, '/', (size_t)n) : NULL;
   if (!slash) {
      return "outbox-bench-pub";
   }
   strcpy(slash + 1, "outbox-bench-pub");
   return path;
}

/* PUBLISHER-sysmalloc, built beside the publisher when the build links jemalloc; NULL when
 * there is none. */
static const char *
sysmalloc_publisher(const char *publisher)
{
   static char path[4096];
   int n = snprintf(path, sizeof path, "%s-sysmalloc", publisher);
   return n > 0 && (size_t)n < sizeof path && access(path, X_OK) == 0 ? path : NULL;
}

/* outbox-admin in the directory of @relay (both are built in one place); NULL when there is
 * none (the replay part is then skipped). */
static const char *
admin_next_to(const char *relay)
{
   static char path[4096];
   const char *slash = relay ? strrchr(relay, '/') : NULL;
   int n = slash ? snprintf(path, sizeof path, "%.*s/outbox-admin", (int)(slash - relay), relay)
                 : snprintf(path, sizeof path, "outbox-admin");
   return relay && n > 0 && (size_t)n < sizeof path && access(path, X_OK) == 0 ? path : NULL;
}

static void
set_mode(bench_opts_t *o, bench_mode_t mode)
{
   o->mode = mode;
   o->entities_few = 1000;
   o->entities_many = 100000;
   o->payload = 200;
   o->window = 256; /* the relay's default --inflight-window */
   o->qos = 1;
   o->writers = 4;
   o->lib_reps = 2;
   o->timeout_s = 300;
   switch (mode) {
   case BENCH_SMOKE:
      o->events = 400;
      o->entities_few = 20;
      o->entities_many = 400;
      o->writers = 2;
      o->phase_s = 0.5;
      o->lib_s = 0.2;
      o->lib_reps = 1;
      o->timeout_s = 60;
      break;
   case BENCH_QUICK:
      o->events = 20000;
      o->entities_many = 20000;
      o->phase_s = 4;
      o->lib_s = 0.5;
      o->timeout_s = 60;
      break;
   case BENCH_DEFAULT:
      o->events = 100000;
      o->phase_s = 10;
      o->lib_s = 1.5;
      o->lib_reps = 4;
      break;
   case BENCH_LONG:
      o->events = 1000000;
      o->phase_s = 30;
      o->lib_s = 2.5;
      o->lib_reps = 4;
      o->timeout_s = 1800;
      break;
   }
}

static bool
parse_size(const char *flag, const char *v, size_t min, size_t *out)
{
   char *end;
   unsigned long long x = strtoull(v, &end, 10);
   if (!*v || *end || x < min || v[0] == '-') {
      fprintf(stderr, "outbox-bench: %s needs a number >= %zu, not '%s'\n", flag, min, v);
      return false;
   }
   *out = (size_t)x;
   return true;
}

static bool
parse_seconds(const char *flag, const char *v, double *out)
{
   char *end;
   double x = strtod(v, &end);
   if (!*v || *end || !(x > 0)) {
      fprintf(stderr, "outbox-bench: %s needs a positive number of seconds, not '%s'\n", flag, v);
      return false;
   }
   *out = x;
   return true;
}

static bool
parse_entities(const char *v, bench_opts_t *o)
{
   char a[32];
   const char *comma = strchr(v, ',');
   if (!comma || (size_t)(comma - v) >= sizeof a) {
      fprintf(stderr, "outbox-bench: --entities needs A,B (e.g. 1000,100000)\n");
      return false;
   }
   memcpy(a, v, (size_t)(comma - v));
   a[comma - v] = '\0';
   return parse_size("--entities", a, 1, &o->entities_few) &&
          parse_size("--entities", comma + 1, 1, &o->entities_many);
}

/* Options taking a value. Returns false on a bad value. */
static bool
parse_valued(bench_opts_t *o, const char *f, const char *v)
{
   size_t n;
   if (!strcmp(f, "--relay")) {
      o->relay_path = v;
   } else if (!strcmp(f, "--admin")) {
      o->admin_path = v;
   } else if (!strcmp(f, "--mongod")) {
      o->mongod_path = v;
   } else if (!strcmp(f, "--mosquitto")) {
      o->mosquitto_path = v;
   } else if (!strcmp(f, "--publisher")) {
      o->publisher_path = v;
   } else if (!strcmp(f, "--json")) {
      o->json_path = v;
   } else if (!strcmp(f, "--only")) {
      o->only = v;
   } else if (!strcmp(f, "--database")) {
      o->database = v;
   } else if (!strcmp(f, "--window-flag")) {
      o->window_flag = v;
   } else if (!strcmp(f, "--relay-arg")) {
      if (o->n_relay_args >= (int)(sizeof o->relay_args / sizeof o->relay_args[0])) {
         fprintf(stderr, "outbox-bench: too many --relay-arg\n");
         return false;
      }
      o->relay_args[o->n_relay_args++] = v;
   } else if (!strcmp(f, "--events")) {
      return parse_size(f, v, 1, &o->events);
   } else if (!strcmp(f, "--entities")) {
      return parse_entities(v, o);
   } else if (!strcmp(f, "--payload")) {
      return parse_size(f, v, 16, &o->payload) &&
             (o->payload <= 200 * 1024 || (fprintf(stderr, "outbox-bench: --payload is at "
                                                           "most 204800\n"),
                                           false));
   } else if (!strcmp(f, "--window")) {
      bool ok = parse_size(f, v, 1, &n) && n <= 65535;
      o->window = (int)n;
      return ok;
   } else if (!strcmp(f, "--writers")) {
      bool ok = parse_size(f, v, 1, &n) && n <= 64;
      o->writers = (int)n;
      return ok;
   } else if (!strcmp(f, "--phase-seconds")) {
      return parse_seconds(f, v, &o->phase_s);
   } else if (!strcmp(f, "--lib-seconds")) {
      return parse_seconds(f, v, &o->lib_s);
   } else if (!strcmp(f, "--timeout")) {
      return parse_seconds(f, v, &o->timeout_s);
   } else if (!strcmp(f, "--oplog-mb")) {
      return parse_size(f, v, 1, &o->oplog_mb);
   }
   return true;
}

static bool
takes_value(const char *f)
{
   static const char *const valued[] = {
      "--relay",         "--admin",       "--mongod",   "--mosquitto",   "--publisher",
      "--json",          "--only",        "--database", "--window-flag", "--relay-arg",
      "--events",        "--entities",    "--payload",  "--window",      "--writers",
      "--phase-seconds", "--lib-seconds", "--timeout",  "--oplog-mb",    NULL};
   for (int i = 0; valued[i]; i++) {
      if (!strcmp(f, valued[i])) {
         return true;
      }
   }
   return false;
}

bool
bench_opts_parse(bench_opts_t *o, int argc, char **argv, int *exit_code)
{
   memset(o, 0, sizeof *o);
   bench_mode_t mode = BENCH_DEFAULT;
   for (int i = 1; i < argc; i++) {
      if (!strcmp(argv[i], "--smoke")) {
         mode = BENCH_SMOKE;
      } else if (!strcmp(argv[i], "--quick")) {
         mode = BENCH_QUICK;
      } else if (!strcmp(argv[i], "--long")) {
         mode = BENCH_LONG;
      } else if (takes_value(argv[i])) {
         i++; /* skip the value: "--relay-arg --quick" is a value, not a mode */
      }
   }
   set_mode(o, mode);
   o->database = BENCH_DB_DEFAULT;
   o->mosquitto_path = "/usr/sbin/mosquitto";
   o->window_flag = "--inflight-window";
   o->publisher_path = default_publisher();
   o->oplog_mb = 256;
   *exit_code = EX_USAGE;
   for (int i = 1; i < argc; i++) {
      const char *f = argv[i];
      if (!strcmp(f, "-h") || !strcmp(f, "--help")) {
         usage(stdout);
         *exit_code = EX_OK;
         return false;
      } else if (!strcmp(f, "-v") || !strcmp(f, "--verbose")) {
         o->verbose = true;
      } else if (!strcmp(f, "--syscalls")) {
         o->syscalls = true;
      } else if (!strcmp(f, "--allocs")) {
         o->allocs = true;
      } else if (!strcmp(f, "--smoke") || !strcmp(f, "--quick") || !strcmp(f, "--long")) {
         continue;
      } else if (takes_value(f)) {
         if (i + 1 >= argc) {
            fprintf(stderr, "outbox-bench: %s needs a value\n", f);
            return false;
         }
         if (!parse_valued(o, f, argv[++i])) {
            return false;
         }
      } else {
         fprintf(stderr, "outbox-bench: unknown option '%s' (see --help)\n", f);
         return false;
      }
   }
   o->sysmalloc_publisher_path = sysmalloc_publisher(o->publisher_path);
   if (!o->admin_path) {
      o->admin_path = admin_next_to(o->relay_path);
   }
   /* Every writer and library thread owns a disjoint set of entities: none may get none. */
   if (o->entities_few < 8 || o->entities_few < (size_t)o->writers) {
      fprintf(stderr, "outbox-bench: --entities: the first count must be at least 8 and at "
                      "least --writers\n");
      *exit_code = EX_USAGE;
      return false;
   }
   *exit_code = EX_OK;
   return true;
}

bool
bench_part_enabled(const bench_opts_t *o, const char *part)
{
   if (!o->only) {
      return strcmp(part, "scale") != 0 || o->mode == BENCH_LONG;
   }
   size_t len = strlen(part);
   for (const char *p = o->only; (p = strstr(p, part)); p += len) {
      bool starts = p == o->only || p[-1] == ',';
      bool ends = p[len] == '\0' || p[len] == ',';
      if (starts && ends) {
         return true;
      }
   }
   return false;
}
