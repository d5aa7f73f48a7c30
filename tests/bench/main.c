/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-bench entry point: options, servers, the measurements in a fixed order, the report.
 * Baselines run next to what they are compared with, so every ratio compares figures taken
 * seconds apart on the same servers, not against numbers from another day or machine.
 */
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sysexits.h>
#include <unistd.h>

#include "bench.h"
#include "drain.h"
#include "parts.h"
#include "replay.h"
#include "subscriber.h"

static void
machine_info(char *buf, size_t size)
{
   char model[128] = "unknown CPU", line[256];
   FILE *f = fopen("/proc/cpuinfo", "r");
   while (f && fgets(line, sizeof line, f)) {
      char *colon = strchr(line, ':');
      if (!strncmp(line, "model name", 10) && colon) {
         snprintf(model, sizeof model, "%s", colon + 2);
         model[strcspn(model, "\n")] = '\0';
         break;
      }
   }
   if (f) {
      fclose(f);
   }
   struct utsname u;
   uname(&u);
   snprintf(buf, size, "%s, %ld CPUs (%s), Linux %s", u.nodename, sysconf(_SC_NPROCESSORS_ONLN),
            model, u.release);
}

/* Copies a URI for the report without "user:password@": reports get pasted into READMEs. */
static void
redact(char *buf, size_t size, const char *uri, const char *note)
{
   const char *scheme = strstr(uri, "://");
   const char *host = scheme ? scheme + 3 : uri;
   const char *at = strchr(host, '@');
   const char *slash = strchr(host, '/');
   if (at && (!slash || at < slash)) {
      snprintf(buf, size, "%.*s***@%s%s", (int)(host - uri), uri, at + 1, note);
   } else {
      snprintf(buf, size, "%s%s", uri, note);
   }
}

static size_t
baseline_messages(const bench_opts_t *o)
{
   size_t cap = o->mode == BENCH_QUICK ? 15000 : 100000;
   return o->events < cap ? o->events : cap;
}

/* One more ceiling run; the headline figure is the mean of all of them. */
static double
baseline_again(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
               bench_results_t *r)
{
   bench_baseline_t b;
   bench_baseline_t *out = r->n_baseline_runs ? &b : &r->baseline;
   if (o->verbose) {
      fprintf(stderr, "outbox-bench: ceiling, %zu messages\n", baseline_messages(o));
   }
   if (!bench_baseline_run(o, s, sub, baseline_messages(o), o->payload, o->window, false, out)) {
      bench_fail(r, "ceiling incomplete");
   }
   if (r->n_baseline_runs < BENCH_MAX_BASELINE_RUNS) {
      r->baseline_runs[r->n_baseline_runs++] = out->msgs_per_s;
   }
   return out->msgs_per_s;
}

/* The ceiling without user properties once more (for the drain with --user-properties none). */
static double
bare_again(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub, bench_results_t *r)
{
   bench_baseline_t b;
   if (!bench_baseline_run(o, s, sub, baseline_messages(o), o->payload, o->window, true, &b)) {
      bench_fail(r, "ceiling without properties incomplete");
   }
   return b.msgs_per_s;
}

/* The drains of the default run: the sweep over few and over many entities, the change
 * stream path with one event per commit, and the sweep without user properties (compared
 * with the ceiling without them). */
static const struct {
   const char *what, *part; /* --only drain runs all; --only drain-few just that one */
   bool many, stream, bare, archive;
} drain_specs[] = {
   {"sweep", "drain-few", false, false, false, false},
   {"sweep", "drain-many", true, false, false, false},
   {"stream, 1 event per commit", "drain-stream", false, true, false, false},
   {"sweep, --user-properties none", "drain-bare", false, false, true, false},
   /* The archive's cost: a second write per event, against drain-few in the same run. */
   {"sweep, --archive-collection", "drain-archive", false, false, false, true},
};

static bool
drain_enabled(const bench_opts_t *o, size_t i)
{
   return bench_part_enabled(o, "drain") || bench_part_enabled(o, drain_specs[i].part);
}

static bool
any_drain_enabled(const bench_opts_t *o)
{
   for (size_t i = 0; i < sizeof drain_specs / sizeof drain_specs[0]; i++) {
      if (drain_enabled(o, i)) {
         return true;
      }
   }
   return false;
}

/* Ceilings bracket the drains (ceiling, drain, ceiling, drain, ...) and each drain is
 * compared with the mean of the two around it, so load that comes and goes on a shared
 * machine shifts both sides of a ratio alike. */
static void
run_drains(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c, bench_sub_t *sub,
           bench_results_t *r)
{
   static const char *const bare_args[] = {"--user-properties", "none", NULL};
   static const char *const archive_args[] = {"--archive-collection", "outbox_bench_archive", NULL};
   bench_drain_t *outs[] = {&r->drain_few, &r->drain_many, &r->drain_stream, &r->drain_bare,
                            &r->drain_archive};
   double before = r->baseline_runs[0];
   for (size_t i = 0; i < sizeof drain_specs / sizeof drain_specs[0]; i++) {
      size_t entities = drain_specs[i].many ? o->entities_many : o->entities_few;
      bench_drain_run_t run = {.opts = o,
                               .events = o->events,
                               .payload = o->payload,
                               .window = o->window,
                               .per_commit = 1,
                               .stream = drain_specs[i].stream,
                               .extra_args = drain_specs[i].bare      ? bare_args
                                             : drain_specs[i].archive ? archive_args
                                                                      : NULL};
      if (!drain_enabled(o, i) ||
          (drain_specs[i].bare && (o->mode == BENCH_SMOKE || !r->baseline_bare.ok))) {
         continue;
      }
      run.entities = entities < o->events ? entities : o->events;
      if (o->verbose) {
         fprintf(stderr, "outbox-bench: drain (%s) of %zu events over %zu entities\n",
                 drain_specs[i].what, run.events, run.entities);
      }
      if (!bench_drain_run(&run, s, c, sub, outs[i])) {
         bench_fail(r, "drain (%s) over %zu entities incomplete", drain_specs[i].what,
                    run.entities);
      }
      if (drain_specs[i].bare) {
         outs[i]->baseline_msgs_per_s =
            (r->baseline_bare.msgs_per_s + bare_again(o, s, sub, r)) / 2;
         continue;
      }
      double after = baseline_again(o, s, sub, r);
      outs[i]->baseline_msgs_per_s = (before + after) / 2;
      before = after;
   }
}

/* The replay between two ceilings with its window (outbox-admin's, not --window), compared
 * with their mean like the drains. */
static void
run_replay(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c, bench_sub_t *sub,
           bench_results_t *r)
{
   bench_baseline_t before, after;
   size_t messages = baseline_messages(o);
   if (o->verbose) {
      fprintf(stderr, "outbox-bench: replay of %zu archived events (ceiling at window %d)\n",
              o->events, BENCH_REPLAY_WINDOW);
   }
   if (!bench_baseline_run(o, s, sub, messages, o->payload, BENCH_REPLAY_WINDOW, false, &before)) {
      bench_fail(r, "ceiling before the replay incomplete");
   }
   if (!bench_replay_run(o, s, c, sub, &r->replay)) {
      bench_fail(r, "replay of %zu archived events incomplete", o->events);
   }
   if (!bench_baseline_run(o, s, sub, messages, o->payload, BENCH_REPLAY_WINDOW, false, &after)) {
      bench_fail(r, "ceiling after the replay incomplete");
   }
   r->replay.baseline_msgs_per_s = (before.msgs_per_s + after.msgs_per_s) / 2;
}

static void
run_scaling(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c, bench_sub_t *sub,
            bench_results_t *r)
{
   static const struct {
      int window, per_commit;
      size_t payload;
      bool stream;
   } cases[] = {{16, 1, 200, false},   {64, 1, 200, false},   {256, 1, 200, false},
                {1024, 1, 200, false}, {256, 1, 200, true},   {256, 10, 200, true},
                {256, 1, 2048, false}, {256, 1, 65536, false}};
   for (size_t i = 0; i < sizeof cases / sizeof cases[0] && r->n_scale < BENCH_MAX_SCALE; i++) {
      size_t events = o->events < 100000 ? o->events : 100000;
      size_t cap = (size_t)256 * 1024 * 1024 / cases[i].payload; /* bound the bytes moved */
      events = events < cap ? events : cap;
      bench_drain_run_t run = {.opts = o,
                               .events = events,
                               .payload = cases[i].payload,
                               .window = cases[i].window,
                               .per_commit = cases[i].per_commit,
                               .stream = cases[i].stream};
      run.entities = o->entities_few < events ? o->entities_few : events;
      /* Its own baseline right before it: same window, same payload, same moment. */
      bench_baseline_t *b = &r->scale_base[r->n_scale];
      if (!bench_baseline_run(o, s, sub, events, run.payload, run.window, false, b)) {
         bench_fail(r, "baseline (window %d, payload %zu) incomplete", run.window, run.payload);
      }
      bench_drain_t *d = &r->scale[r->n_scale];
      if (o->verbose) {
         fprintf(stderr, "outbox-bench: scaling: window %d, %d/commit, %zu B, %s\n", run.window,
                 run.per_commit, run.payload, run.stream ? "stream" : "sweep");
      }
      if (!bench_drain_run(&run, s, c, sub, d)) {
         bench_fail(r, "scaling drain %zu incomplete", i + 1);
      }
      d->baseline_msgs_per_s = b->msgs_per_s;
      r->n_scale++;
   }
}

static void
run_all(const bench_opts_t *o, const bench_servers_t *s, bench_results_t *r)
{
   bson_error_t err;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(s->mongodb_uri, &err);
   mongoc_client_t *c = uri ? mongoc_client_new_from_uri(uri) : NULL;
   bench_sub_t *sub = bench_sub_new(s->mqtt_uri);
   if (!c || !sub) {
      bench_fail(r, "cannot connect to %s or %s", s->mongodb_uri, s->mqtt_uri);
      goto done;
   }
   mongoc_client_set_error_api(c, MONGOC_ERROR_API_VERSION_2);
   mongoc_client_set_appname(c, "outbox-bench");
   if (bench_part_enabled(o, "baseline") || any_drain_enabled(o)) {
      baseline_again(o, s, sub, r);
      /* The same without user properties shows what the message contract itself costs. */
      if (o->mode != BENCH_SMOKE && !bench_baseline_run(o, s, sub, baseline_messages(o), o->payload,
                                                        o->window, true, &r->baseline_bare)) {
         bench_fail(r, "baseline without properties incomplete");
      }
      /* paho with glibc's malloc, for comparison only (the relay and the ceiling link
       * jemalloc when the build has it). */
      if (o->mode != BENCH_SMOKE && o->sysmalloc_publisher_path &&
          !bench_baseline_sysmalloc(o, s, sub, baseline_messages(o), o->payload, o->window,
                                    &r->baseline_sysmalloc)) {
         bench_fail(r, "ceiling with glibc's malloc incomplete");
      }
      /* The old in-process figure, for comparison only: that publisher shares paho's global
       * locks with the subscriber. */
      if (o->mode != BENCH_SMOKE &&
          !bench_baseline_inproc(o, s, sub, baseline_messages(o), o->payload, o->window, false,
                                 &r->baseline_inproc)) {
         bench_fail(r, "in-process baseline incomplete");
      }
   }
   bool relay = o->relay_path != NULL;
   if (relay && any_drain_enabled(o)) {
      run_drains(o, s, c, sub, r);
   }
   if (o->admin_path && bench_part_enabled(o, "replay")) {
      run_replay(o, s, c, sub, r);
   }
   if (relay && bench_part_enabled(o, "steady")) {
      bench_steady_run_all(o, s, sub, r);
   }
   if (bench_part_enabled(o, "lib")) {
      bench_lib_run_all(o, s, r);
   }
   if (relay && bench_part_enabled(o, "scale")) {
      run_scaling(o, s, c, sub, r);
   }
#ifdef BENCH_GROUP
   if (relay && bench_part_enabled(o, "group") && o->mode != BENCH_SMOKE) {
      bench_group_failover(o, s, c, sub, r);
      bench_group_drain(o, s, c, sub, r);
   }
#endif
   if (!relay) {
      fprintf(stderr, "outbox-bench: no --relay given: drain, steady and scaling skipped\n");
   }
   if (!o->admin_path && bench_part_enabled(o, "replay")) {
      fprintf(stderr, "outbox-bench: no outbox-admin (--admin) found: replay skipped\n");
   }
done:
   bench_sub_destroy(sub);
   mongoc_client_destroy(c);
   mongoc_uri_destroy(uri);
}

int
main(int argc, char **argv)
{
   bench_opts_t o;
   int code;
   if (!bench_opts_parse(&o, argc, argv, &code)) {
      return code;
   }
   bench_signals_init();
   bench_results_t *r = calloc(1, sizeof *r);
   machine_info(r->machine, sizeof r->machine);
   bench_servers_t s;
   if (!bench_servers_start(&o, &s)) {
      bench_servers_stop(&s);
      free(r);
      return EX_UNAVAILABLE;
   }
   redact(r->mongodb, sizeof r->mongodb, s.mongodb_uri, s.mongod_pid ? " (test-mongod)" : "");
   redact(r->mqtt, sizeof r->mqtt, s.mqtt_uri, s.mosquitto_pid ? " (mosquitto)" : "");
   mongoc_init();
   run_all(&o, &s, r);
   mongoc_cleanup();
   bench_servers_stop(&s);
   bench_report_print(&o, r);
   if (o.json_path && !bench_report_json(&o, r, o.json_path)) {
      bench_fail(r, "cannot write %s", o.json_path);
   }
   code = r->failed ? 1 : 0;
   free(r);
   return code;
}
