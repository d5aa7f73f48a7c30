/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The table on stdout and the same figures as JSON (--json FILE).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

static const char *const mode_names[] = {"smoke", "quick", "default", "long"};

void
bench_fail(bench_results_t *r, const char *fmt, ...)
{
   char msg[256];
   va_list ap;
   va_start(ap, fmt);
   vsnprintf(msg, sizeof msg, fmt, ap);
   va_end(ap);
   fprintf(stderr, "outbox-bench: FAILED: %s\n", msg);
   size_t used = strlen(r->failure);
   snprintf(r->failure + used, sizeof r->failure - used, "%s%s", used ? "; " : "", msg);
   r->failed = true;
}

/* Nearest-rank percentile of an ascending array. */
double
bench_percentile(double *sorted, size_t n, double pct)
{
   if (!n) {
      return NAN;
   }
   size_t rank = (size_t)ceil(pct / 100.0 * (double)n);
   return sorted[rank ? rank - 1 : 0];
}

static double
per_100k(double cpu_s, size_t events)
{
   return events ? cpu_s * 100000.0 / (double)events : 0;
}

static double
baseline_mean(const bench_results_t *r)
{
   double sum = 0;
   for (int i = 0; i < r->n_baseline_runs; i++) {
      sum += r->baseline_runs[i];
   }
   return r->n_baseline_runs ? sum / r->n_baseline_runs : 0;
}

static void
print_use(const char *who, const bench_proc_use_t *u, size_t events)
{
   if (u->pid > 0) {
      printf("  %-9s %6.1f us CPU/ev (%2.0f%% sys) peak RSS %6.1f MiB", who,
             events ? u->cpu_s * 1e6 / (double)events : 0,
             u->cpu_s > 0 ? 100 * u->sys_s / u->cpu_s : 0, u->hwm_mib);
   } else {
      printf("  %-9s (external: not measured)", who);
   }
}

static void
print_drain(const char *label, const bench_drain_t *d)
{
   if (!d->events) {
      return;
   }
   double ratio = d->baseline_msgs_per_s > 0 ? d->msgs_per_s / d->baseline_msgs_per_s : 0;
   printf("%-22s %8zu ev %7zu ent  %9.0f ev/s  %5.2f x ceiling  %6.2f s (1st msg %.2f s, "
          "last %.2f s, %.0f B msgs)%s\n",
          label, d->events, d->entities, d->msgs_per_s, ratio, d->seconds, d->first_msg_s,
          d->all_received_s, d->avg_msg_bytes, d->ok ? "" : "  INCOMPLETE");
   if (d->duplicates || d->order_violations) {
      printf("  duplicates %zu, per-entity order violations %zu\n", d->duplicates,
             d->order_violations);
   }
   print_use("relay", &d->relay, d->events);
   print_use("bench", &d->self, d->events);
   printf("\n");
   print_use("mongod", &d->mongod, d->events);
   print_use("mosquitto", &d->mosquitto, d->events);
   printf("\n");
   bench_sysuse_print(stdout, "relay", &d->relay_sys);
}

static void
print_replay(const bench_results_t *r)
{
   const bench_replay_t *p = &r->replay;
   if (!p->events) {
      return;
   }
   double ratio = p->baseline_msgs_per_s > 0 ? p->msgs_per_s / p->baseline_msgs_per_s : 0;
   printf("\nReplay of an archive (outbox-admin replay, window %d; ceiling at the same window "
          "%.0f msg/s)\n",
          p->window, p->baseline_msgs_per_s);
   printf("%-22s %8zu ev %7zu ent  %9.0f ev/s  %5.2f x ceiling  %6.2f s%s\n", "  few entities",
          p->events, p->entities, p->msgs_per_s, ratio, p->seconds, p->ok ? "" : "  INCOMPLETE");
   if (p->duplicates || p->order_violations) {
      printf("  duplicates %zu, per-entity order violations %zu\n", p->duplicates,
             p->order_violations);
   }
   print_use("admin", &p->admin, p->events);
   printf("\n");
}

static void
print_steady(const bench_results_t *r)
{
   if (!r->saturation.events) {
      return;
   }
   printf("\nSteady state (liboutbox writers -> relay -> subscriber), max sustainable "
          "%.0f ev/s\n",
          r->max_sustainable_per_s);
   printf("  %5s %10s %10s %8s %8s %8s %8s %10s\n", "load", "target/s", "done/s", "p50 ms",
          "p95 ms", "p99 ms", "max ms", "catch-up");
   for (int i = 0; i < 3; i++) {
      const bench_steady_t *s = &r->steady[i];
      if (!s->events) {
         continue;
      }
      printf("  %4.0f%% %10.0f %10.0f %8.2f %8.2f %8.2f %8.2f %7.0f ms%s%s\n", s->target_pct,
             s->target_per_s, s->achieved_per_s, s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms,
             s->catchup_ms, s->target_pct == 50 ? "  (target p99 < 20 ms)" : "",
             s->ok ? "" : "  INCOMPLETE");
   }
}

/* One figure for the library: the geometric mean over the cases of plain/lib, as an
 * overhead in percent. Single cases swing by +-15% on a shared machine; the mean of six
 * interleaved ones much less. 0 without cases. */
static double
lib_overhead_mean_pct(const bench_results_t *r)
{
   double log_sum = 0;
   int n = 0;
   for (int i = 0; i < r->n_lib; i++) {
      const bench_libcase_t *c = &r->lib[i];
      if (c->ok && c->lib_per_s > 0 && c->plain_per_s > 0) {
         log_sum += log(c->plain_per_s / c->lib_per_s);
         n++;
      }
   }
   return n ? (exp(log_sum / n) - 1) * 100 : 0;
}

static void
print_lib(const bench_results_t *r)
{
   if (!r->n_lib) {
      return;
   }
   printf("\nLibrary: commits/s, liboutbox update vs plain mongoc_collection_update_one "
          "(target overhead < 10%%)\n");
   printf("  %7s %9s %10s %10s %9s   %-17s %-17s %s\n", "threads", "ev/commit", "liboutbox",
          "plain", "overhead", "client CPU us/c", "server CPU us/c", "cmds/c");
   for (int i = 0; i < r->n_lib; i++) {
      const bench_libcase_t *c = &r->lib[i];
      printf("  %7d %9d %10.0f %10.0f %8.1f%%   %7.1f / %-7.1f %7.1f / %-7.1f %.2f / %.2f%s\n",
             c->threads, c->events_per_commit, c->lib_per_s, c->plain_per_s, c->overhead_pct,
             c->lib_cpu_us, c->plain_cpu_us, c->lib_server_cpu_us, c->plain_server_cpu_us,
             c->lib_cmds, c->plain_cmds, c->ok ? "" : "  FAILED");
   }
   printf("  (per commit: liboutbox / plain; server = test-mongod when started here)\n");
   printf("  overhead over all cases (geometric mean): %.1f%%\n", lib_overhead_mean_pct(r));
}

static void
print_scale(const bench_results_t *r)
{
   if (!r->n_scale) {
      return;
   }
   printf("\nScaling (drain rate against a baseline with the same window and payload)\n");
   printf("  %6s %8s %9s %8s %10s %12s %7s\n", "window", "ev/cmt", "payload", "events", "drain/s",
          "baseline/s", "ratio");
   for (int i = 0; i < r->n_scale; i++) {
      const bench_drain_t *d = &r->scale[i];
      printf("  %6d %8d %9zu %8zu %10.0f %12.0f %7.2f%s\n", d->window, d->events_per_commit,
             d->payload, d->events, d->msgs_per_s, d->baseline_msgs_per_s,
             d->baseline_msgs_per_s > 0 ? d->msgs_per_s / d->baseline_msgs_per_s : 0,
             d->ok ? "" : "  INCOMPLETE");
   }
}

static void
print_baselines(const bench_results_t *r)
{
   const bench_baseline_t *b = &r->baseline;
   if (!b->messages) {
      return;
   }
   printf("%-22s %8zu msgs, window %d, data %zu B (%.0f B messages), publisher in a process\n",
          "Ceiling (paho QoS 1)", b->messages, b->window, b->payload, b->avg_msg_bytes);
   printf("%-22s of its own (outbox-bench-pub, malloc %s), same shape as the relay's messages\n",
          "", b->malloc_name[0] ? b->malloc_name : "unknown");
   if (b->broker_receive_max && b->broker_receive_max <= b->window) {
      printf("%-22s the broker's Receive Maximum (%d) limits the window\n", "",
             b->broker_receive_max);
   }
   printf("%-22s %9.0f msg/s received (first run: %.0f received, %.0f acknowledged, "
          "%.1f us CPU/msg)%s\n",
          "", baseline_mean(r), b->msgs_per_s, b->acked_per_s, b->cpu_us_per_msg,
          b->ok ? "" : "  INCOMPLETE");
   if (r->n_baseline_runs > 1) {
      printf("%-22s runs:", "");
      for (int i = 0; i < r->n_baseline_runs; i++) {
         printf(" %.0f", r->baseline_runs[i]);
      }
      printf(" msg/s (each drain is compared with the runs before and after it)\n");
   }
   const bench_baseline_t *bare = &r->baseline_bare, *in = &r->baseline_inproc;
   const bench_baseline_t *sys = &r->baseline_sysmalloc;
   if (bare->messages) {
      /* Compared with the first run: the one measured just before it. */
      printf("%-22s %9.0f msg/s without the 4 user properties (%.2f x; %.1f us CPU/msg)%s\n", "",
             bare->msgs_per_s, b->msgs_per_s > 0 ? bare->msgs_per_s / b->msgs_per_s : 0,
             bare->cpu_us_per_msg, bare->ok ? "" : "  INCOMPLETE");
   }
   if (sys->messages) {
      printf("%-22s %9.0f msg/s with glibc's malloc (secondary: outbox-bench-pub-sysmalloc,\n"
             "%-22s %.2f x; %.1f us CPU/msg)%s\n",
             "", sys->msgs_per_s, "", b->msgs_per_s > 0 ? sys->msgs_per_s / b->msgs_per_s : 0,
             sys->cpu_us_per_msg, sys->ok ? "" : "  INCOMPLETE");
   }
   if (in->messages) {
      printf("%-22s %9.0f msg/s with the publisher inside the benchmark process (secondary:\n"
             "%-22s it shares paho's global locks with the subscriber)%s\n",
             "", in->msgs_per_s, "", in->ok ? "" : "  INCOMPLETE");
   }
   printf("\n");
}

static void
print_group(const bench_results_t *r)
{
   const bench_failover_t *f = &r->failover;
   if (f->kills) {
      printf("\nRelay group failover (2 members, lease ttl %d ms, renew %d ms, margin %d ms)\n",
             f->ttl_ms, f->renew_ms, f->margin_ms);
      printf("  kill -9 -> first message of an orphaned partition over %d kills: p50 %.2f s, "
             "max %.2f s%s\n",
             f->kills, f->p50_s, f->max_s, f->ok ? "" : "  INCOMPLETE");
   }
   if (!r->n_group) {
      return;
   }
   printf("\nRelay group drain (events written live to a settled group, 1 per commit)\n");
   printf("  %7s %9s %9s %11s %9s %11s %9s %10s\n", "members", "events", "ev/s", "sum of sep.",
          "ratio", "together", "ratio", "CPU us/ev");
   for (int i = 0; i < r->n_group; i++) {
      const bench_group_drain_t *g = &r->group[i];
      double sum = g->members * g->ceiling_one;
      printf("  %7d %9zu %9.0f %11.0f %9.2f %11.0f %9.2f %10.1f%s\n", g->members, g->events,
             g->msgs_per_s, sum, sum > 0 ? g->msgs_per_s / sum : 0, g->ceiling_together,
             g->ceiling_together > 0 ? g->msgs_per_s / g->ceiling_together : 0, g->cpu_us_per_event,
             g->ok ? "" : "  INCOMPLETE");
   }
   printf("  sum of sep.: k x one publisher process alone (each member's own ceiling), "
          "measured\n  before each drain; together: k publisher processes side by side "
          "on this machine.\n");
   printf("  per member (CPU s / events of its partitions / CPU us per event):\n");
   for (int i = 0; i < r->n_group; i++) {
      const bench_group_drain_t *g = &r->group[i];
      printf("  %7d ", g->members);
      for (int m = 0; m < g->members; m++) {
         printf("  %.2f / %zu / %.1f", g->cpu_s[m], g->member_events[m], g->member_us_per_event[m]);
      }
      printf("%s\n",
             g->leases_moved ? "  (a lease moved during the drain: split approximate)" : "");
   }
   if (r->group[0].ok && r->group[0].cpu_us_per_event > 0) {
      /* One member per core, each at its own CPU cost: a projection, not a measurement. */
      const bench_group_drain_t *one = &r->group[0];
      double by_cpu = 1e6 / one->cpu_us_per_event;
      double per_member =
         one->ceiling_one > 0 && one->ceiling_one < by_cpu ? one->ceiling_one : by_cpu;
      printf("  this machine's cores are shared by every member, MongoDB and the broker: more "
             "members cannot drain faster here.\n"
             "  PROJECTION (not measured): with a core per member and MongoDB and the broker "
             "not saturated,\n  k members drain about k x %.0f ev/s (one member's rate here; "
             "its CPU alone would allow %.0f ev/s,\n  one paho connection's ceiling here is "
             "%.0f msg/s; a member is bounded by the lower, %.0f ev/s)\n",
             one->msgs_per_s, by_cpu, one->ceiling_one, per_member);
   }
}

void
bench_report_print(const bench_opts_t *o, const bench_results_t *r)
{
   printf("\noutbox-bench %s run on %s\n", mode_names[o->mode], r->machine);
   printf("MongoDB %s, MQTT %s\n", r->mongodb, r->mqtt);
   printf("Figures vary between machines and runs; compare the ratios within one run.\n\n");
   print_baselines(r);
   if (r->drain_few.events || r->drain_many.events || r->drain_stream.events ||
       r->drain_bare.events || r->drain_archive.events) {
      printf("Drain of a pending backlog (target >= 1.0 x ceiling)\n");
      print_drain("  few entities", &r->drain_few);
      print_drain("  many entities", &r->drain_many);
      print_drain("  stream, 1/commit", &r->drain_stream);
      if (r->drain_bare.events) {
         printf("Drain with --user-properties none, against the ceiling without them "
                "(target >= 0.9 x)\n");
      }
      print_drain("  few entities", &r->drain_bare);
      if (r->drain_archive.events) {
         printf("Drain with --archive-collection (a second write per event)\n");
      }
      print_drain("  few entities", &r->drain_archive);
   }
   print_replay(r);
   print_steady(r);
   print_lib(r);
   print_scale(r);
   print_group(r);
   if (r->failed) {
      printf("\nFAILED: %s\n", r->failure);
   }
}

/* Writes "key": value, or "key": null for figures that were not measured. */
static void
jnum(FILE *f, const char *key, double v, bool measured)
{
   if (measured && isfinite(v)) {
      fprintf(f, "  \"%s\": %.6g,\n", key, v);
   } else {
      fprintf(f, "  \"%s\": null,\n", key);
   }
}

static void
jstr(FILE *f, const char *key, const char *v)
{
   fprintf(f, "  \"%s\": \"", key);
   for (const char *p = v; *p; p++) {
      if (*p == '"' || *p == '\\') {
         fputc('\\', f);
      }
      fputc((unsigned char)*p < 0x20 ? ' ' : *p, f);
   }
   fprintf(f, "\",\n");
}

static void
json_drain(FILE *f, const char *prefix, const bench_drain_t *d)
{
   char key[96];
   bool m = d->events > 0;
#define K(suffix) (snprintf(key, sizeof key, "%s%s", prefix, suffix), key)
   jnum(f, K("msgs_per_s"), d->msgs_per_s, m);
   jnum(f, K("ratio"), d->msgs_per_s / d->baseline_msgs_per_s, m && d->baseline_msgs_per_s > 0);
   jnum(f, K("events"), (double)d->events, m);
   jnum(f, K("entities"), (double)d->entities, m);
   jnum(f, K("seconds"), d->seconds, m);
   jnum(f, K("duplicates"), (double)d->duplicates, m);
   jnum(f, K("relay_cpu_s_per_100k"), per_100k(d->relay.cpu_s, d->events), m);
   jnum(f, K("relay_cpu_us_per_event"), d->events ? d->relay.cpu_s * 1e6 / (double)d->events : 0,
        m);
   jnum(f, K("relay_sys_share"), d->relay.cpu_s > 0 ? d->relay.sys_s / d->relay.cpu_s : 0, m);
   jnum(f, K("relay_peak_rss_mib"), d->relay.hwm_mib, m);
   jnum(f, K("mongod_cpu_s_per_100k"), per_100k(d->mongod.cpu_s, d->events),
        m && d->mongod.pid > 0);
   jnum(f, K("mosquitto_cpu_s_per_100k"), per_100k(d->mosquitto.cpu_s, d->events),
        m && d->mosquitto.pid > 0);
   jnum(f, K("bench_cpu_s_per_100k"), per_100k(d->self.cpu_s, d->events), m);
   jnum(f, K("relay_syscalls_per_event"), d->relay_sys.syscalls / d->relay_sys.events,
        m && d->relay_sys.ok);
   jnum(f, K("relay_futex_per_event"), d->relay_sys.futex / d->relay_sys.events,
        m && d->relay_sys.ok);
   jnum(f, K("relay_own_syscalls_per_event"), d->relay_sys.own / d->relay_sys.events,
        m && d->relay_sys.ok);
   jnum(f, K("relay_allocs_per_event"), d->relay_sys.allocs / d->relay_sys.events,
        m && d->relay_sys.allocs_ok);
#undef K
}

static void
json_lists(FILE *f, const bench_results_t *r)
{
   fprintf(f, "  \"lib\": [");
   for (int i = 0; i < r->n_lib; i++) {
      const bench_libcase_t *c = &r->lib[i];
      fprintf(f,
              "%s\n    {\"threads\": %d, \"events_per_commit\": %d, \"lib_commits_per_s\": "
              "%.1f, \"plain_commits_per_s\": %.1f, \"overhead_pct\": %.2f, "
              "\"lib_cpu_us_per_commit\": %.2f, \"plain_cpu_us_per_commit\": %.2f, "
              "\"lib_server_cpu_us_per_commit\": %.2f, "
              "\"plain_server_cpu_us_per_commit\": %.2f, \"lib_commands_per_commit\": %.3f, "
              "\"plain_commands_per_commit\": %.3f, \"ok\": %s}",
              i ? "," : "", c->threads, c->events_per_commit, c->lib_per_s, c->plain_per_s,
              c->overhead_pct, c->lib_cpu_us, c->plain_cpu_us, c->lib_server_cpu_us,
              c->plain_server_cpu_us, c->lib_cmds, c->plain_cmds, c->ok ? "true" : "false");
   }
   fprintf(f, "],\n  \"scale\": [");
   for (int i = 0; i < r->n_scale; i++) {
      const bench_drain_t *d = &r->scale[i];
      fprintf(f,
              "%s\n    {\"window\": %d, \"events_per_commit\": %d, \"payload\": %zu, "
              "\"events\": %zu, \"drain_msgs_per_s\": %.1f, \"baseline_msgs_per_s\": %.1f, "
              "\"ok\": %s}",
              i ? "," : "", d->window, d->events_per_commit, d->payload, d->events, d->msgs_per_s,
              d->baseline_msgs_per_s, d->ok ? "true" : "false");
   }
   fprintf(f, "],\n  \"group\": [");
   for (int i = 0; i < r->n_group; i++) {
      const bench_group_drain_t *g = &r->group[i];
      fprintf(f,
              "%s\n    {\"members\": %d, \"events\": %zu, \"msgs_per_s\": %.1f, "
              "\"cpu_us_per_event\": %.2f, \"ceiling_one_msgs_per_s\": %.1f, "
              "\"sum_of_ceilings_msgs_per_s\": %.1f, \"ceiling_together_msgs_per_s\": %.1f, "
              "\"member_cpu_us_per_event\": [",
              i ? "," : "", g->members, g->events, g->msgs_per_s, g->cpu_us_per_event,
              g->ceiling_one, g->members * g->ceiling_one, g->ceiling_together);
      for (int m = 0; m < g->members; m++) {
         fprintf(f, "%s%.2f", m ? ", " : "", g->member_us_per_event[m]);
      }
      fprintf(f, "], \"leases_moved\": %s, \"ok\": %s}", g->leases_moved ? "true" : "false",
              g->ok ? "true" : "false");
   }
   fprintf(f, "],\n");
}

bool
bench_report_json(const bench_opts_t *o, const bench_results_t *r, const char *path)
{
   FILE *f = fopen(path, "w");
   if (!f) {
      perror(path);
      return false;
   }
   fprintf(f, "{\n");
   jstr(f, "mode", mode_names[o->mode]);
   jstr(f, "machine", r->machine);
   jnum(f, "payload_bytes", (double)o->payload, true);
   jnum(f, "window", o->window, true);
   jstr(f, "baseline_malloc", r->baseline.malloc_name);
   jnum(f, "baseline_msgs_per_s", baseline_mean(r), r->n_baseline_runs > 0);
   jnum(f, "baseline_acked_per_s", r->baseline.acked_per_s, r->baseline.messages > 0);
   jnum(f, "baseline_cpu_us_per_msg", r->baseline.cpu_us_per_msg, r->baseline.messages > 0);
   jnum(f, "baseline_bare_msgs_per_s", r->baseline_bare.msgs_per_s, r->baseline_bare.messages > 0);
   jnum(f, "baseline_bare_cpu_us_per_msg", r->baseline_bare.cpu_us_per_msg,
        r->baseline_bare.messages > 0);
   jnum(f, "baseline_inprocess_msgs_per_s", r->baseline_inproc.msgs_per_s,
        r->baseline_inproc.messages > 0);
   jnum(f, "baseline_sysmalloc_msgs_per_s", r->baseline_sysmalloc.msgs_per_s,
        r->baseline_sysmalloc.messages > 0);
   jnum(f, "baseline_sysmalloc_cpu_us_per_msg", r->baseline_sysmalloc.cpu_us_per_msg,
        r->baseline_sysmalloc.messages > 0);
   json_drain(f, "drain_", &r->drain_few);
   json_drain(f, "drain_many_", &r->drain_many);
   json_drain(f, "drain_stream_", &r->drain_stream);
   json_drain(f, "drain_bare_", &r->drain_bare);
   json_drain(f, "drain_archive_", &r->drain_archive);
   bool replayed = r->replay.events > 0;
   jnum(f, "replay_msgs_per_s", r->replay.msgs_per_s, replayed);
   jnum(f, "replay_baseline_msgs_per_s", r->replay.baseline_msgs_per_s, replayed);
   jnum(f, "replay_ratio", r->replay.msgs_per_s / r->replay.baseline_msgs_per_s,
        replayed && r->replay.baseline_msgs_per_s > 0);
   jnum(f, "replay_events", (double)r->replay.events, replayed);
   jnum(f, "replay_window", r->replay.window, replayed);
   jnum(f, "replay_seconds", r->replay.seconds, replayed);
   jnum(f, "replay_duplicates", (double)r->replay.duplicates, replayed);
   jnum(f, "replay_admin_cpu_us_per_event",
        replayed ? r->replay.admin.cpu_s * 1e6 / (double)r->replay.events : 0, replayed);
   jnum(f, "max_sustainable_per_s", r->max_sustainable_per_s, r->saturation.events > 0);
   static const char *const pct[] = {"25pct", "50pct", "90pct"};
   for (int i = 0; i < 3; i++) {
      const bench_steady_t *s = &r->steady[i];
      char key[64];
      static const char *const names[] = {"p50_ms", "p95_ms", "p99_ms", "max_ms", "catchup_ms"};
      double v[] = {s->p50_ms, s->p95_ms, s->p99_ms, s->max_ms, s->catchup_ms};
      for (int k = 0; k < 5; k++) {
         snprintf(key, sizeof key, "%s_at_%s", names[k], pct[i]);
         jnum(f, key, v[k], s->events > 0);
      }
      snprintf(key, sizeof key, "rate_per_s_at_%s", pct[i]);
      jnum(f, key, s->achieved_per_s, s->events > 0);
   }
   jnum(f, "relay_peak_rss_mib", fmax(r->drain_few.relay.hwm_mib, r->drain_many.relay.hwm_mib),
        r->drain_few.events || r->drain_many.events);
   jnum(f, "lib_overhead_mean_pct", lib_overhead_mean_pct(r), r->n_lib > 0);
   jnum(f, "failover_p50_s", r->failover.p50_s, r->failover.ok);
   jnum(f, "failover_max_s", r->failover.max_s, r->failover.ok);
   json_lists(f, r);
   jstr(f, "failure", r->failure);
   fprintf(f, "  \"ok\": %s\n}\n", r->failed ? "false" : "true");
   bool ok = !ferror(f);
   ok = !fclose(f) && ok;
   return ok;
}
