/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The ceiling: how fast paho MQTTAsync itself publishes QoS 1 messages to the same broker,
 * with the same window and messages of the relay's shape and size (publisher.h), and no
 * MongoDB. The headline figure comes from a publisher in a process of its own
 * (outbox-bench-pub), as the relay is one; the in-process figure is kept as a secondary
 * line. Both are timed from the first publish until the benchmark's subscriber has all.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "publisher.h"
#include "subscriber.h"

static void
baseline_init(bench_baseline_t *out, size_t messages, size_t payload, int window, bool bare,
              bool in_process)
{
   memset(out, 0, sizeof *out);
   out->messages = messages;
   out->window = window;
   out->payload = payload;
   out->bare = bare;
   out->in_process = in_process;
}

/* A topic prefix of its own per run, so a late message of an earlier run never counts. */
static void
run_prefix(char *buf, size_t size)
{
   static int counter;
   snprintf(buf, size, "bench/base%d/", ++counter);
}

/* paho 1.3.11 stalls its send thread for up to a second whenever more messages are in flight
 * than the broker's Receive Maximum (mosquitto: max_inflight_messages), so the ceiling of a
 * paho client is reached with the window capped to it, as the relay caps its own. */
static int
capped_window(bench_baseline_t *out, int receive_max)
{
   out->broker_receive_max = receive_max;
   if (receive_max > 0 && receive_max < out->window) {
      out->window = receive_max;
   }
   return out->window;
}

static void
received(bench_sub_t *sub, int64_t t0, bench_baseline_t *out)
{
   bench_sub_stats_t st;
   bench_sub_stats(sub, &st);
   if (st.distinct) {
      out->msgs_per_s = (double)st.distinct / bench_secs(t0, st.last_ns);
      out->avg_msg_bytes = (double)st.bytes / (double)st.total;
   }
}

bool
bench_baseline_inproc(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                      size_t messages, size_t payload, int window, bool bare, bench_baseline_t *out)
{
   char prefix[64];
   baseline_init(out, messages, payload, window, bare, true);
   bench_pub_t *p = bench_pub_new(s->mqtt_uri, window);
   if (!p) {
      return false;
   }
   window = capped_window(out, bench_pub_receive_max(p));
   run_prefix(prefix, sizeof prefix);
   bench_sub_reset(sub, prefix, 0, messages);
   int64_t t0 = bench_now_ns();
   bool ok = true;
   for (size_t i = 0; ok && i < messages; i++) {
      ok = bench_pub_send(p, prefix, i, payload, window, bare);
   }
   int64_t deadline = bench_now_ns() + (int64_t)(o->timeout_s * 1e9);
   ok = bench_sub_wait_all(sub, deadline) && ok;
   ok = bench_pub_wait_idle(p, deadline) && ok;
   bench_pub_stats_t ps;
   bench_pub_stats(p, &ps);
   ok = ok && ps.failed == 0 && ps.acked == messages;
   received(sub, t0, out);
   if (ps.last_ack_ns > t0) {
      out->acked_per_s = (double)ps.acked / bench_secs(t0, ps.last_ack_ns);
   }
   out->ok = ok;
   bench_pub_destroy(p);
   return ok;
}

/* Reads one line from the publisher; false at EOF (it died or refused). */
static bool
read_line(FILE *from, char *buf, size_t size)
{
   if (!fgets(buf, (int)size, from)) {
      return false;
   }
   buf[strcspn(buf, "\n")] = '\0';
   return true;
}

/* One outbox-bench-pub process, driven over its pipes. */
typedef struct {
   pid_t pid;
   FILE *to, *from;
   int receive_max;
   char malloc_name[16];
   size_t acked, failed;
   double ack_s, cpu0;
} pub_proc_t;

/* Starts a publisher of events first .. first+messages-1 and waits for its "ready". */
static bool
pub_start(const bench_opts_t *o, const bench_servers_t *s, const char *prefix, size_t messages,
          size_t first, size_t payload, int window, bool bare, pub_proc_t *p)
{
   char args[5][32], line[128];
   snprintf(args[0], sizeof args[0], "%zu", messages);
   snprintf(args[1], sizeof args[1], "%zu", payload);
   snprintf(args[2], sizeof args[2], "%d", window);
   snprintf(args[3], sizeof args[3], "%.0f", o->timeout_s);
   snprintf(args[4], sizeof args[4], "%zu", first);
   const char *argv[] = {o->publisher_path,     s->mqtt_uri, args[0], args[1], args[2],
                         bare ? "none" : "all", prefix,      args[3], args[4], NULL};
   memset(p, 0, sizeof *p);
   p->pid = bench_spawn_piped(argv, &p->to, &p->from);
   bool ok = p->pid > 0 && read_line(p->from, line, sizeof line) &&
             sscanf(line, "ready %d %15s", &p->receive_max, p->malloc_name) >= 1;
   if (!ok) {
      fprintf(stderr, "outbox-bench: the publisher %s did not start\n", o->publisher_path);
   }
   return ok;
}

static bool
pub_go(pub_proc_t *p)
{
   p->cpu0 = bench_proc_cpu_s(p->pid);
   return fputs("go\n", p->to) >= 0 && fflush(p->to) == 0;
}

/* Reads its "done" line; its CPU since "go" is added to *cpu (read before its stdin closes:
 * the process still exists, idle). */
static bool
pub_done(pub_proc_t *p, size_t messages, double *cpu)
{
   char line[128];
   bool ok = read_line(p->from, line, sizeof line) &&
             sscanf(line, "done %zu %zu %lf", &p->acked, &p->failed, &p->ack_s) == 3 &&
             p->failed == 0 && p->acked == messages;
   *cpu += bench_proc_cpu_s(p->pid) - p->cpu0;
   return ok;
}

/* Closes its pipes and reaps it; false unless it exited 0. */
static bool
pub_end(pub_proc_t *p)
{
   if (p->to) {
      fclose(p->to);
   }
   if (p->from) {
      fclose(p->from);
   }
   return p->pid > 0 && bench_wait_child(p->pid, 10) == 0;
}

#define MAX_PUBLISHERS 4

bool
bench_baseline_together(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub, int k,
                        size_t messages, size_t payload, int window, bool bare,
                        bench_baseline_t *out)
{
   char prefix[64];
   pub_proc_t pubs[MAX_PUBLISHERS];
   size_t each = messages / (size_t)k, acked = 0;
   double cpu = 0, ack_s = 0;
   bool ok = k >= 1 && k <= MAX_PUBLISHERS && each > 0;
   int started = 0;

   baseline_init(out, each * (size_t)(k > 0 ? k : 1), payload, window, bare, false);
   run_prefix(prefix, sizeof prefix);
   for (; ok && started < k; started++) {
      ok = pub_start(o, s, prefix, each, each * (size_t)started, payload, window, bare,
                     &pubs[started]);
      /* Each publisher caps its window the same way; the figure says which was used. */
      capped_window(out, pubs[started].receive_max);
      memcpy(out->malloc_name, pubs[started].malloc_name, sizeof out->malloc_name);
   }
   bench_sub_reset(sub, prefix, 0, out->messages);
   int64_t t0 = bench_now_ns();
   for (int i = 0; ok && i < k; i++) {
      ok = pub_go(&pubs[i]);
   }
   int64_t deadline = bench_now_ns() + (int64_t)(o->timeout_s * 1e9);
   ok = bench_sub_wait_all(sub, deadline) && ok;
   for (int i = 0; ok && i < k; i++) {
      ok = pub_done(&pubs[i], each, &cpu);
      acked += pubs[i].acked;
      ack_s = pubs[i].ack_s > ack_s ? pubs[i].ack_s : ack_s;
   }
   received(sub, t0, out);
   out->acked_per_s = ack_s > 0 ? (double)acked / ack_s : 0;
   out->cpu_us_per_msg = acked ? cpu * 1e6 / (double)acked : 0;
   for (int i = 0; i < started; i++) {
      ok = pub_end(&pubs[i]) && ok;
   }
   out->ok = ok;
   return ok;
}

bool
bench_baseline_run(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                   size_t messages, size_t payload, int window, bool bare, bench_baseline_t *out)
{
   return bench_baseline_together(o, s, sub, 1, messages, payload, window, bare, out);
}

bool
bench_baseline_sysmalloc(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub,
                         size_t messages, size_t payload, int window, bench_baseline_t *out)
{
   bench_opts_t with_glibc = *o;
   with_glibc.publisher_path = o->sysmalloc_publisher_path;
   return bench_baseline_run(&with_glibc, s, sub, messages, payload, window, false, out);
}
