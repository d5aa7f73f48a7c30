/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-bench-pub: the ceiling's publisher in a process of its own, as the relay is. paho
 * 1.3.12 serialises every client of a process on global mutexes, so a publisher inside the
 * benchmark process shares them with the benchmark's subscriber and flatters nobody fairly;
 * this program shares nothing with it but the broker and the machine.
 *
 * outbox-bench drives it over a pipe, so that connecting is not timed:
 *   outbox-bench-pub URI MESSAGES PAYLOAD WINDOW all|none TOPIC-PREFIX TIMEOUT-S [FIRST]
 * (events FIRST .. FIRST+MESSAGES-1, default 0: several publishers run side by side with
 * disjoint ranges under one prefix)
 *   stdout: "ready RECEIVE-MAX MALLOC"     once connected (MALLOC: jemalloc or glibc)
 *   stdin:  "go"                           start publishing
 *   stdout: "done ACKED FAILED ACK-SECONDS" when every message was acknowledged (or the
 *                                          timeout passed); ACK-SECONDS: "go" -> last PUBACK
 * then it waits for stdin to close (so the benchmark can read its CPU time) and exits 0 when
 * every message was acknowledged, 1 otherwise. Usage errors exit 64.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "bench.h"
#include "publisher.h"

static bool
parse_args(int argc, char **argv, size_t *messages, size_t *payload, int *window, bool *bare,
           double *timeout_s, size_t *first)
{
   char *end1, *end2, *end3, *end4, *end5 = "";
   if (argc != 8 && argc != 9) {
      return false;
   }
   *first = argc == 9 ? strtoul(argv[8], &end5, 10) : 0;
   *messages = strtoul(argv[2], &end1, 10);
   *payload = strtoul(argv[3], &end2, 10);
   *window = (int)strtol(argv[4], &end3, 10);
   *timeout_s = strtod(argv[7], &end4);
   *bare = !strcmp(argv[5], "none");
   return !*end1 && !*end2 && !*end3 && !*end4 && !*end5 && *messages > 0 && *window > 0 &&
          *timeout_s > 0 && (*bare || !strcmp(argv[5], "all"));
}

int
main(int argc, char **argv)
{
   size_t messages, payload, first;
   int window;
   bool bare;
   double timeout_s;
   char line[64];

   if (!parse_args(argc, argv, &messages, &payload, &window, &bare, &timeout_s, &first)) {
      fprintf(stderr, "usage: outbox-bench-pub URI MESSAGES PAYLOAD WINDOW all|none "
                      "TOPIC-PREFIX TIMEOUT-S [FIRST] (driven by outbox-bench)\n");
      return EX_USAGE;
   }
   signal(SIGPIPE, SIG_IGN);
   bench_pub_t *p = bench_pub_new(argv[1], window);
   if (!p) {
      return 1;
   }
   printf("ready %d %s\n", bench_pub_receive_max(p), bench_malloc_name());
   fflush(stdout);
   if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0) {
      bench_pub_destroy(p);
      return 1;
   }
   int64_t t0 = bench_now_ns();
   bool ok = true;
   for (size_t i = first; ok && i < first + messages; i++) {
      ok = bench_pub_send(p, argv[6], i, payload, window, bare);
   }
   ok = bench_pub_wait_idle(p, t0 + (int64_t)(timeout_s * 1e9)) && ok;
   bench_pub_stats_t st;
   bench_pub_stats(p, &st);
   ok = ok && st.failed == 0 && st.acked == messages;
   printf("done %zu %zu %.6f\n", st.acked, st.failed,
          st.last_ack_ns > t0 ? bench_secs(t0, st.last_ack_ns) : 0.0);
   fflush(stdout);
   while (fgets(line, sizeof line, stdin)) {
      /* until the benchmark closes the pipe */
   }
   bench_pub_destroy(p);
   return ok ? 0 : 1;
}
