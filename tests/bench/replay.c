/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Replay: how fast `outbox-admin replay` publishes an archive again (issue 28). An archive of
 * `--events` entries over the few-entities layout is written straight into a collection of
 * its own (as the relay writes entries), then outbox-admin replays it to the broker; timed
 * from starting outbox-admin (its start-up included, as the drains include the relay's) until
 * the subscriber has every event. The ceiling it is compared with is measured right before
 * and after it with outbox-admin's window (main.c), so the ratio compares figures taken
 * seconds apart. Main thread only.
 */
#include "replay.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <outbox/archive.h>

#include "backlog.h"
#include "drain.h"

/* Waits until the subscriber has @n events. outbox-admin exits once its publishes are
 * acknowledged: a failure ends the wait at once, a success leaves the messages a few
 * seconds to arrive. It is not reaped here (its CPU is read from /proc first). */
static bool
wait_replayed(bench_sub_t *sub, size_t n, pid_t admin, int64_t deadline, const char **why)
{
   bool exited = false;
   for (;;) {
      int64_t slice = bench_now_ns() + 200000000;
      if (bench_sub_wait_n(sub, n, deadline < slice ? deadline : slice)) {
         return true;
      }
      if (bench_now_ns() >= deadline) {
         *why = exited ? "outbox-admin exited 0 but events never arrived"
                       : "timed out waiting for messages";
         return false;
      }
      siginfo_t info = {0};
      if (!exited && waitid(P_PID, (id_t)admin, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == admin) {
         if (info.si_code != CLD_EXITED || info.si_status != 0) {
            *why = "outbox-admin replay failed (see its log)";
            return false;
         }
         exited = true;
         int64_t grace = bench_now_ns() + 10 * (int64_t)1000000000;
         deadline = deadline < grace ? deadline : grace;
      }
   }
}

/* Runs outbox-admin replay over @archive for collection @coll and waits for every event. */
static bool
measure(const bench_opts_t *o, const bench_servers_t *s, bench_sub_t *sub, const char *coll,
        const char *archive, const char *log, bench_replay_t *out, const char **why)
{
   char qos[8];
   snprintf(qos, sizeof qos, "%d", o->qos);
   const char *argv[] = {o->admin_path,  "replay",     "--mongodb-uri",
                         s->mongodb_uri, "--database", o->database,
                         "--collection", coll,         "--archive-collection",
                         archive,        "--mqtt-uri", s->mqtt_uri,
                         "--qos",        qos,          NULL};
   bench_proc_use_begin(&out->admin, 0);
   int64_t t0 = bench_now_ns();
   pid_t admin = bench_spawn(argv, log);
   if (!admin) {
      *why = "cannot start outbox-admin";
      return false;
   }
   out->admin.pid = admin; /* started at ~0 CPU: its total is the interval's */
   int64_t deadline = t0 + (int64_t)(o->timeout_s * 1e9);
   bool ok = wait_replayed(sub, out->events, admin, deadline, why);
   out->seconds = bench_secs(t0, bench_now_ns());
   bench_proc_use_end(&out->admin); /* a zombie's CPU times are still readable */
   if (bench_wait_child(admin, 15) != 0 && ok) {
      *why = "outbox-admin replay did not exit with 0";
      ok = false;
   }
   return ok;
}

static void
finish(bench_sub_t *sub, const bench_layout_t *l, bench_replay_t *out)
{
   bench_sub_stats_t st;
   bench_sub_stats(sub, &st);
   out->received = st.distinct > out->events ? out->events : st.distinct;
   out->duplicates = st.total - st.distinct - st.stray;
   out->msgs_per_s = out->ok && out->seconds > 0 ? (double)out->events / out->seconds : 0;
   out->order_violations = bench_order_violations(l, bench_sub_rank(sub));
}

/* Drops @archive and installs its indexes (the replay's cursor reads through them). */
static bool
prepare_archive(mongoc_client_t *c, const char *db, const char *archive)
{
   bench_coll_drop(c, db, archive);
   mongoc_collection_t *col = mongoc_client_get_collection(c, db, archive);
   bson_error_t err;
   bool ok = outbox_archive_ensure_schema(col, NULL, &err);
   if (!ok) {
      fprintf(stderr, "outbox-bench: archive schema on %s.%s: %s\n", db, archive, err.message);
   }
   mongoc_collection_destroy(col);
   return ok;
}

bool
bench_replay_run(const bench_opts_t *o, const bench_servers_t *s, mongoc_client_t *c,
                 bench_sub_t *sub, bench_replay_t *out)
{
   char coll[64], archive[64], log[256], prefix[96];
   snprintf(coll, sizeof coll, "replayed_%ld", (long)getpid());
   snprintf(archive, sizeof archive, "replay_archive_%ld", (long)getpid());
   snprintf(log, sizeof log, "%s/admin-%s.log", s->workdir, coll);
   snprintf(prefix, sizeof prefix, "outbox/%s/", coll);
   memset(out, 0, sizeof *out);
   out->events = o->events;
   out->entities = o->entities_few < o->events ? o->entities_few : o->events;
   out->window = BENCH_REPLAY_WINDOW;
   out->payload = o->payload;
   bench_layout_t l;
   bench_layout_init(&l, out->events, out->entities);
   const char *why = "could not write the archive";
   bool ok = prepare_archive(c, o->database, archive) &&
             bench_archive_insert(c, o->database, archive, coll, &l, o->payload);
   bench_sub_reset(sub, prefix, 0, out->events);
   ok = ok && measure(o, s, sub, coll, archive, log, out, &why);
   out->ok = ok;
   finish(sub, &l, out);
   if (ok && out->order_violations) {
      why = "events of one entity arrived out of seq order";
      out->ok = ok = false;
   }
   if (!ok) {
      fprintf(stderr, "outbox-bench: replay (%zu events, %zu entities): %s (%zu received)\n",
              out->events, out->entities, why, out->received);
      bench_relay_log_tail(s, strrchr(log, '/') + 1);
   } else {
      unlink(log);
   }
   bench_coll_drop(c, o->database, archive);
   bench_layout_free(&l);
   return ok;
}
