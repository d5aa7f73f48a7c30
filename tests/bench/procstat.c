/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Resource figures of child processes, read from /proc so they cost nothing while measuring.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

/* utime + stime of @pid in seconds; *@sys_s (may be NULL) gets stime alone. */
static double
proc_times(pid_t pid, double *sys_s)
{
   char path[64], buf[1024];
   if (sys_s) {
      *sys_s = 0;
   }
   if (pid <= 0) {
      return 0;
   }
   snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
   FILE *f = fopen(path, "r");
   if (!f) {
      return 0;
   }
   size_t len = fread(buf, 1, sizeof buf - 1, f);
   fclose(f);
   buf[len] = '\0';
   /* The command name (field 2) may contain spaces and parentheses: count fields from the
    * last ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it. */
   char *p = strrchr(buf, ')');
   if (!p) {
      return 0;
   }
   unsigned long long utime = 0, stime = 0;
   if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
       2) {
      return 0;
   }
   if (sys_s) {
      *sys_s = (double)stime / (double)sysconf(_SC_CLK_TCK);
   }
   return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

double
bench_proc_cpu_s(pid_t pid)
{
   return proc_times(pid, NULL);
}

double
bench_proc_hwm_mib(pid_t pid)
{
   char path[64], line[256];
   if (pid <= 0) {
      return 0;
   }
   snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
   FILE *f = fopen(path, "r");
   if (!f) {
      return 0;
   }
   double mib = 0;
   while (fgets(line, sizeof line, f)) {
      unsigned long kib;
      if (sscanf(line, "VmHWM: %lu kB", &kib) == 1) {
         mib = (double)kib / 1024.0;
         break;
      }
   }
   fclose(f);
   return mib;
}

void
bench_proc_use_begin(bench_proc_use_t *u, pid_t pid)
{
   double sys;
   u->pid = pid;
   u->cpu_s = -proc_times(pid, &sys);
   u->sys_s = -sys;
   u->hwm_mib = 0;
}

void
bench_proc_use_end(bench_proc_use_t *u)
{
   double sys;
   if (u->pid <= 0) {
      u->cpu_s = u->sys_s = 0;
      return;
   }
   u->cpu_s += proc_times(u->pid, &sys);
   u->sys_s += sys;
   u->hwm_mib = bench_proc_hwm_mib(u->pid);
}
