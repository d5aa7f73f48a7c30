/*
 * System calls (--syscalls) and allocations (--allocs) per event by thread of one process (the
 * relay, over a drain), beside the rates: counts, unlike rates and CPU seconds, hardly move with
 * the load of a shared machine, so a regression shows on a noisy one. Two perf processes attach to
 * the relay once its threads exist (bench_systrace_start()): `perf trace -s` (every system call, by
 * name and thread) and `perf stat --per-thread` on uprobes of the allocator's malloc, calloc and
 * realloc (jemalloc's, or the C library's when the relay links no jemalloc). The uprobes are
 * created when missing and removed at the end when this run created them. Where perf is missing or
 * not permitted, the figures are simply absent (bench_sysuse_t.ok false). Tracing costs the relay
 * time, so a drain measured with --syscalls is slower: compare its counts, not its rate, with a run
 * without.
 */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

static const char *const alloc_fns[] = {"malloc", "calloc", "realloc"};

/* The allocator the relay's process has mapped: jemalloc when linked, else the C library. */
static bool
find_allocator(pid_t pid, char *lib, size_t len, char *group, size_t glen)
{
   char path[64], line[512];
   bool found = false;
   snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
   FILE *f = fopen(path, "r");
   if (!f) {
      return false;
   }
   while (fgets(line, sizeof line, f)) {
      char *p = strchr(line, '/');
      bool je = strstr(line, "libjemalloc.so");
      if (p && (je || (!found && strstr(line, "/libc.so")))) {
         p[strcspn(p, "\n")] = '\0';
         snprintf(lib, len, "%s", p);
         snprintf(group, glen, "%s", je ? "probe_libjemalloc" : "probe_libc");
         found = true;
         if (je) {
            break;
         }
      }
   }
   fclose(f);
   return found;
}

/* Runs @argv to the end, its output thrown away; true on exit status 0. */
static bool
run_quietly(const char *const *argv)
{
   pid_t pid = bench_spawn(argv, "/dev/null");
   int status;
   return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0;
}

static bool
have_probe(const char *event)
{
   const char *argv[] = {"/usr/bin/perf", "probe", "-q", "-l", event, NULL};
   char out[64];
   bool found = false;
   FILE *to = NULL, *from = NULL;
   pid_t pid = bench_spawn_piped(argv, &to, &from);
   if (pid <= 0) {
      return false;
   }
   fclose(to);
   found = fgets(out, sizeof out, from) != NULL;
   fclose(from);
   waitpid(pid, NULL, 0);
   return found;
}

static void
make_probes(bench_systrace_t *t, const char *lib)
{
   for (size_t i = 0; i < sizeof alloc_fns / sizeof alloc_fns[0]; i++) {
      char event[96];
      snprintf(event, sizeof event, "%s:%s", t->group, alloc_fns[i]);
      if (!have_probe(event)) {
         const char *argv[] = {"/usr/bin/perf", "probe",      "-q", "-x", lib,
                               "--add",         alloc_fns[i], NULL};
         if (run_quietly(argv)) {
            t->made |= 1u << i;
         }
      }
   }
}

bool
bench_systrace_start(bench_systrace_t *t, const char *workdir, pid_t pid, bool allocs)
{
   char spid[16], lib[256], events[320];
   memset(t, 0, sizeof *t);
   if (access("/usr/bin/perf", X_OK) != 0 || pid <= 0) {
      return false;
   }
   snprintf(spid, sizeof spid, "%ld", (long)pid);
   snprintf(t->trace_path, sizeof t->trace_path, "%s/perf-trace-%ld.txt", workdir, (long)pid);
   snprintf(t->stat_path, sizeof t->stat_path, "%s/perf-stat-%ld.txt", workdir, (long)pid);
   const char *trace[] = {"/usr/bin/perf", "trace", "-s", "-o", t->trace_path, "-p", spid, NULL};
   t->trace = bench_spawn(trace, "/dev/null");
   if (allocs && find_allocator(pid, lib, sizeof lib, t->group, sizeof t->group)) {
      make_probes(t, lib);
      snprintf(events, sizeof events, "%s:malloc,%s:calloc,%s:realloc", t->group, t->group,
               t->group);
      const char *stat[] = {"/usr/bin/perf", "stat", "--per-thread", "-x", ",",  "-e",
                            events,          "-o",   t->stat_path,   "-p", spid, NULL};
      t->stat = bench_spawn(stat, "/dev/null");
   }
   usleep(300000); /* perf needs a moment to attach to every thread */
   return t->trace > 0;
}

static bench_thread_use_t *
thread_of(bench_sysuse_t *u, int tid, const char *comm)
{
   for (int i = 0; i < u->n; i++) {
      if (u->t[i].tid == tid) {
         return &u->t[i];
      }
   }
   if (u->n == BENCH_MAX_THREADS) {
      return NULL;
   }
   bench_thread_use_t *t = &u->t[u->n++];
   memset(t, 0, sizeof *t);
   t->tid = tid;
   snprintf(t->comm, sizeof t->comm, "%s", comm);
   return t;
}

/* Adds "name calls" to @t's three most frequent system calls. */
static void
note_top(bench_thread_use_t *t, const char *name, double calls)
{
   for (int i = 0; i < 3; i++) {
      if (calls > t->top_calls[i]) {
         for (int j = 2; j > i; j--) {
            t->top_calls[j] = t->top_calls[j - 1];
            memcpy(t->top[j], t->top[j - 1], sizeof t->top[j]);
         }
         t->top_calls[i] = calls;
         snprintf(t->top[i], sizeof t->top[i], "%.23s", name);
         return;
      }
   }
}

/* `perf trace -s`: per thread a line " comm (tid), N events, P%" and then a table whose rows
 * are "   syscall   calls   errors   total ...". */
static bool
parse_trace(const char *path, bench_sysuse_t *u)
{
   char line[512], comm[64], name[64];
   int tid;
   unsigned long long calls;
   bench_thread_use_t *cur = NULL;
   FILE *f = fopen(path, "r");
   if (!f) {
      return false;
   }
   while (fgets(line, sizeof line, f)) {
      char *paren = strrchr(line, '(');
      if (paren && strstr(line, " events") && sscanf(paren, "(%d)", &tid) == 1) {
         size_t n = (size_t)(paren - line);
         while (n > 0 && isspace((unsigned char)line[n - 1])) {
            n--;
         }
         size_t start = 0;
         while (start < n && isspace((unsigned char)line[start])) {
            start++;
         }
         snprintf(comm, sizeof comm, "%.*s", (int)(n - start), line + start);
         cur = thread_of(u, tid, comm);
      } else if (cur && sscanf(line, " %63s %llu", name, &calls) == 2 && name[0] != '-' &&
                 strcmp(name, "syscall") != 0) {
         cur->syscalls += (double)calls;
         if (strcmp(name, "futex") == 0) {
            cur->futex += (double)calls;
         }
         note_top(cur, name, (double)calls);
      }
   }
   fclose(f);
   return u->n > 0;
}

/* `perf stat --per-thread -x ,`: rows "comm-tid,count,unit,event,...". */
static void
parse_stat(const char *path, bench_sysuse_t *u)
{
   char line[512];
   FILE *f = fopen(path, "r");
   if (!f) {
      return;
   }
   while (fgets(line, sizeof line, f)) {
      char *comma = strchr(line, ',');
      char *dash;
      if (!comma || line[0] == '#') {
         continue;
      }
      *comma = '\0';
      dash = strrchr(line, '-');
      if (!dash) {
         continue;
      }
      *dash = '\0';
      bench_thread_use_t *t = thread_of(u, atoi(dash + 1), line);
      if (t) {
         t->allocs += strtod(comma + 1, NULL);
         u->allocs_ok = true;
      }
   }
   fclose(f);
}

static void
stop(pid_t pid)
{
   int status;
   if (pid > 0) {
      kill(pid, SIGINT);
      waitpid(pid, &status, 0);
   }
}

void
bench_systrace_stop(bench_systrace_t *t, pid_t relay, double events, bench_sysuse_t *u)
{
   memset(u, 0, sizeof *u);
   stop(t->trace);
   stop(t->stat);
   for (size_t i = 0; i < sizeof alloc_fns / sizeof alloc_fns[0]; i++) {
      if (t->made & (1u << i)) {
         char event[96];
         snprintf(event, sizeof event, "%s:%s", t->group, alloc_fns[i]);
         const char *argv[] = {"/usr/bin/perf", "probe", "-q", "-d", event, NULL};
         run_quietly(argv);
      }
   }
   if (t->trace <= 0 || events <= 0 || !parse_trace(t->trace_path, u)) {
      return;
   }
   parse_stat(t->stat_path, u);
   u->ok = true;
   u->events = events;
   for (int i = 0; i < u->n; i++) {
      u->t[i].main = u->t[i].tid == relay;
      u->syscalls += u->t[i].syscalls;
      u->futex += u->t[i].futex;
      u->allocs += u->t[i].allocs;
      if (strncmp(u->t[i].comm, "MQTTAsync", 9) != 0) {
         u->own += u->t[i].syscalls - u->t[i].futex;
      }
   }
   unlink(t->trace_path);
   unlink(t->stat_path);
}

void
bench_sysuse_print(FILE *out, const char *label, const bench_sysuse_t *u)
{
   if (!u->ok) {
      return;
   }
   fprintf(out,
           "  %s: per event %.2f system calls (%.2f of them futex; %.2f by its own threads "
           "without futex), %s%.1f allocations%s (%.0f events traced)\n",
           label, u->syscalls / u->events, u->futex / u->events, u->own / u->events,
           u->allocs_ok ? "" : "(", u->allocs / u->events, u->allocs_ok ? "" : ": not counted)",
           u->events);
   for (int i = 0; i < u->n; i++) {
      const bench_thread_use_t *t = &u->t[i];
      if (t->syscalls / u->events < 0.005 && t->allocs / u->events < 0.05) {
         continue;
      }
      fprintf(out, "    %-16s %7d%s  syscalls %6.2f (futex %5.2f)  allocs %7.2f  ", t->comm, t->tid,
              t->main ? " (main)" : "       ", t->syscalls / u->events, t->futex / u->events,
              t->allocs / u->events);
      for (int k = 0; k < 3 && t->top_calls[k] > 0; k++) {
         fprintf(out, "%s%s %.2f", k ? ", " : "", t->top[k], t->top_calls[k] / u->events);
      }
      fputc('\n', out);
   }
}
