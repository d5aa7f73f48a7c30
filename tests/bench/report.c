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
   size_t rank = (size_t) ceil(pct / 100.0 * (double) n);
   return sorted[rank ? rank - 1 : 0];
}

static double
per_100k(double cpu_s, size_t events)
{
   return events ? cpu_s * 100000.0 / (double) events : 0;
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
      printf("  %-9s %6.2f CPU s/100k ev  peak RSS %6.1f MiB", who, per_100k(u->cpu_s, events),
             u->hwm_mib);
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
   printf("%-22s %8zu ev %7zu ent  %9.0f ev/s  %5.2f x baseline  %6.2f s (1st msg %.2f s)%s\n",
          label, d->events, d->entities, d->msgs_per_s, ratio, d->seconds, d->first_msg_s,
          d->ok ? "" : "  INCOMPLETE");
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
}

static void
print_steady(const bench_results_t *r)
{
   if (!r->saturation.events) {
      return;
   }
   printf("\nSteady state (liboutbox writers -> relay -> subscriber), max sustainable "
          "%.0f ev/s\n", r->max_sustainable_per_s);
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
   printf("  %6s %8s %9s %8s %10s %12s %7s\n", "window", "ev/cmt", "payload", "events",
          "drain/s", "baseline/s", "ratio");
   for (int i = 0; i < r->n_scale; i++) {
      const bench_drain_t *d = &r->scale[i];
      printf("  %6d %8d %9zu %8zu %10.0f %12.0f %7.2f%s\n", d->window, d->events_per_commit,
             d->payload, d->events, d->msgs_per_s, d->baseline_msgs_per_s,
             d->baseline_msgs_per_s > 0 ? d->msgs_per_s / d->baseline_msgs_per_s : 0,
             d->ok ? "" : "  INCOMPLETE");
   }
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
   printf("\nRelay group drain (events written live to a settled group)\n");
   printf("  %7s %9s %10s %14s  %s\n", "members", "events", "ev/s", "CPU us/event", "CPU s per member");
   for (int i = 0; i < r->n_group; i++) {
      const bench_group_drain_t *g = &r->group[i];
      printf("  %7d %9zu %10.0f %14.1f  ", g->members, g->events, g->msgs_per_s,
             g->cpu_us_per_event);
      for (int m = 0; m < g->members; m++) {
         printf("%s%.2f", m ? " " : "", g->cpu_s[m]);
      }
      printf("%s\n", g->ok ? "" : "  INCOMPLETE");
   }
   if (r->group[0].ok && r->group[0].cpu_us_per_event > 0) {
      /* One member per core, each at its own CPU cost: a projection, not a measurement. */
      printf("  this machine's cores are shared by every member, MongoDB and the broker: more "
             "members cannot drain faster here.\n"
             "  projection (not measured): with a core per member and MongoDB and the broker "
             "not saturated,\n  k members drain about k x %.0f ev/s (one member's rate here; "
             "its CPU alone would allow %.0f ev/s)\n",
             r->group[0].msgs_per_s, 1e6 / r->group[0].cpu_us_per_event);
   }
}

void
bench_report_print(const bench_opts_t *o, const bench_results_t *r)
{
   printf("\noutbox-bench %s run on %s\n", mode_names[o->mode], r->machine);
   printf("MongoDB %s, MQTT %s\n", r->mongodb, r->mqtt);
   printf("Figures vary between machines and runs; compare the ratios within one run.\n\n");
   const bench_baseline_t *b = &r->baseline;
   if (b->messages) {
      printf("%-22s %8zu msgs, window %d, data %zu B (%.0f B messages)\n", "Baseline (paho QoS 1)",
             b->messages, b->window, b->payload, b->avg_msg_bytes);
      if (b->broker_receive_max && b->broker_receive_max <= b->window) {
         printf("%-22s the broker's Receive Maximum (%d) limits the window\n", "",
                b->broker_receive_max);
      }
      printf("%-22s %9.0f msg/s received (first run: %.0f received, %.0f acknowledged)%s\n",
             "", baseline_mean(r), b->msgs_per_s, b->acked_per_s, b->ok ? "" : "  INCOMPLETE");
      if (r->n_baseline_runs > 1) {
         printf("%-22s runs:", "");
         for (int i = 0; i < r->n_baseline_runs; i++) {
            printf(" %.0f", r->baseline_runs[i]);
         }
         printf(" msg/s (each drain is compared with the runs before and after it)\n");
      }
      if (r->baseline_bare.messages) {
         /* Compared with the first run: the one measured just before it. */
         printf("%-22s %9.0f msg/s received without the 4 user properties (%.2f x)\n", "",
                r->baseline_bare.msgs_per_s,
                b->msgs_per_s > 0 ? r->baseline_bare.msgs_per_s / b->msgs_per_s : 0);
      }
      printf("\n");
   }
   if (r->drain_few.events || r->drain_many.events) {
      printf("Drain of a pending backlog (target >= 0.80 x baseline)\n");
      print_drain("  few entities", &r->drain_few);
      print_drain("  many entities", &r->drain_many);
   }
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
      fputc((unsigned char) *p < 0x20 ? ' ' : *p, f);
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
   jnum(f, K("events"), (double) d->events, m);
   jnum(f, K("entities"), (double) d->entities, m);
   jnum(f, K("seconds"), d->seconds, m);
   jnum(f, K("duplicates"), (double) d->duplicates, m);
   jnum(f, K("relay_cpu_s_per_100k"), per_100k(d->relay.cpu_s, d->events), m);
   jnum(f, K("relay_peak_rss_mib"), d->relay.hwm_mib, m);
   jnum(f, K("mongod_cpu_s_per_100k"), per_100k(d->mongod.cpu_s, d->events),
        m && d->mongod.pid > 0);
   jnum(f, K("mosquitto_cpu_s_per_100k"), per_100k(d->mosquitto.cpu_s, d->events),
        m && d->mosquitto.pid > 0);
   jnum(f, K("bench_cpu_s_per_100k"), per_100k(d->self.cpu_s, d->events), m);
#undef K
}

static void
json_lists(FILE *f, const bench_results_t *r)
{
   fprintf(f, "  \"lib\": [");
   for (int i = 0; i < r->n_lib; i++) {
      const bench_libcase_t *c = &r->lib[i];
      fprintf(f, "%s\n    {\"threads\": %d, \"events_per_commit\": %d, \"lib_commits_per_s\": "
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
      fprintf(f, "%s\n    {\"window\": %d, \"events_per_commit\": %d, \"payload\": %zu, "
                 "\"events\": %zu, \"drain_msgs_per_s\": %.1f, \"baseline_msgs_per_s\": %.1f, "
                 "\"ok\": %s}",
              i ? "," : "", d->window, d->events_per_commit, d->payload, d->events,
              d->msgs_per_s, d->baseline_msgs_per_s, d->ok ? "true" : "false");
   }
   fprintf(f, "],\n  \"group\": [");
   for (int i = 0; i < r->n_group; i++) {
      const bench_group_drain_t *g = &r->group[i];
      fprintf(f, "%s\n    {\"members\": %d, \"events\": %zu, \"msgs_per_s\": %.1f, "
                 "\"cpu_us_per_event\": %.2f, \"ok\": %s}",
              i ? "," : "", g->members, g->events, g->msgs_per_s, g->cpu_us_per_event,
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
   jnum(f, "payload_bytes", (double) o->payload, true);
   jnum(f, "window", o->window, true);
   jnum(f, "baseline_msgs_per_s", baseline_mean(r), r->n_baseline_runs > 0);
   jnum(f, "baseline_acked_per_s", r->baseline.acked_per_s, r->baseline.messages > 0);
   jnum(f, "baseline_bare_msgs_per_s", r->baseline_bare.msgs_per_s,
        r->baseline_bare.messages > 0);
   json_drain(f, "drain_", &r->drain_few);
   json_drain(f, "drain_many_", &r->drain_many);
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
   jnum(f, "relay_peak_rss_mib",
        fmax(r->drain_few.relay.hwm_mib, r->drain_many.relay.hwm_mib),
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
