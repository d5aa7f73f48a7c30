/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-bench: end-to-end throughput and latency of liboutbox + outbox-relay, each figure
 * next to a baseline measured in the same invocation (see README.md in this directory).
 *
 * Every event the benchmark creates carries {bench_n: N, pad: "..."} as its data; N is unique
 * within a run, so the subscriber can tell which event arrived (and count duplicates) from the
 * payload alone, whatever envelope the relay wraps around it.
 */
#ifndef OUTBOX_BENCH_H
#define OUTBOX_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#define BENCH_DB_DEFAULT "outbox_bench"
#define BENCH_MAX_SCALE 8
#define BENCH_MAX_BASELINE_RUNS 4

typedef enum { BENCH_SMOKE, BENCH_QUICK, BENCH_DEFAULT, BENCH_LONG } bench_mode_t;

typedef struct {
   bench_mode_t mode;
   const char *relay_path;  /* outbox-relay executable; NULL skips drain and steady */
   const char *admin_path;  /* outbox-admin (replay); default: next to the relay */
   const char *mongod_path; /* test-mongod, when no OUTBOX_MONGODB_URI is given */
   const char *mosquitto_path;
   const char *publisher_path;           /* outbox-bench-pub, the ceiling's publisher */
   const char *sysmalloc_publisher_path; /* the same with glibc's malloc; NULL: none built */
   const char *json_path;                /* --json FILE */
   const char *database;
   const char *only;           /* comma list of parts to run, NULL = all */
   const char *relay_args[32]; /* extra arguments for every relay run (--relay-arg) */
   int n_relay_args;
   const char *window_flag; /* the relay flag that sets its in-flight window */
   size_t events;           /* drain backlog */
   size_t entities_few, entities_many;
   size_t payload; /* bytes of event data (the pad dominates) */
   int window;     /* MQTT in-flight window, baseline and relay */
   int qos;
   int writers;      /* steady-state writer threads */
   double phase_s;   /* duration of a steady-state phase */
   double lib_s;     /* duration of one library benchmark run */
   int lib_reps;     /* runs per configuration (ABBA order when 2) */
   double timeout_s; /* give up on one drain after this long */
   size_t oplog_mb;  /* test-mongod's --oplog-mb (history bound) */
   bool verbose;
   bool syscalls; /* count the relay's system calls per event and thread in drains */
   bool allocs;   /* and its allocations (uprobes: slow the relay far more) (systrace.c) */
} bench_opts_t;

/* System calls and allocations of one thread over a traced interval (systrace.c). */
#define BENCH_MAX_THREADS 32
typedef struct {
   int tid;
   char comm[24];
   bool main;                      /* the process's main thread */
   double syscalls, futex, allocs; /* futex: lock waits and wake-ups, which grow with
                                    * contention (and with tracing), not with the work */
   char top[3][24];                /* its most frequent system calls ... */
   double top_calls[3];
} bench_thread_use_t;

typedef struct {
   bool ok, allocs_ok;
   double events; /* events delivered while traced */
   double syscalls, futex, allocs;
   double own; /* the relay's own threads (not paho's MQTTAsync_*), futex left out */
   int n;
   bench_thread_use_t t[BENCH_MAX_THREADS];
} bench_sysuse_t;

typedef struct {
   pid_t trace, stat; /* the two perf processes */
   char trace_path[192], stat_path[192];
   char group[24]; /* uprobe group: probe_libjemalloc or probe_libc */
   unsigned made;  /* uprobes this run created (bit per function) */
} bench_systrace_t;

/* Attaches perf to @pid (files in @workdir); false when perf cannot be used. */
bool bench_systrace_start(bench_systrace_t *t, const char *workdir, pid_t pid, bool allocs);
/* Stops tracing, removes the uprobes it made, and fills @u per @events (its main thread is
 * @relay). */
void bench_systrace_stop(bench_systrace_t *t, pid_t relay, double events, bench_sysuse_t *u);
void bench_sysuse_print(FILE *out, const char *label, const bench_sysuse_t *u);

/* Resource use of one process over one measured interval. */
typedef struct {
   pid_t pid;      /* 0 when the process is not ours (external server) */
   double cpu_s;   /* user + system seconds spent in the interval */
   double sys_s;   /* the system (kernel) part of it */
   double hwm_mib; /* VmHWM at the end of the interval (peak resident set) */
} bench_proc_use_t;

typedef struct {
   bool ok;
   size_t events, entities, received, duplicates;
   int window, events_per_commit;
   size_t payload;
   const char *mode;           /* "sweep" (backlog before start) or "stream" (written live) */
   double seconds;             /* relay start (sweep) or first write (stream) -> all cleared */
   double first_msg_s;         /* -> first message at the subscriber */
   double all_received_s;      /* -> last distinct message at the subscriber */
   double msgs_per_s;          /* events / seconds */
   double baseline_msgs_per_s; /* baseline with the same window and payload */
   double avg_msg_bytes;       /* MQTT payload size seen at the subscriber */
   size_t order_violations;
   bench_proc_use_t relay, mongod, mosquitto;
   bench_proc_use_t self;    /* this process: the subscriber (and the writers when streaming) */
   bench_sysuse_t relay_sys; /* --syscalls: the relay's, per event and thread */
} bench_drain_t;

/* outbox-admin replay of an archive (replay.c). */
typedef struct {
   bool ok;
   size_t events, entities, received, duplicates, order_violations;
   int window; /* outbox-admin replay's in-flight window */
   size_t payload;
   double seconds;             /* outbox-admin started -> every event at the subscriber */
   double msgs_per_s;          /* events / seconds */
   double baseline_msgs_per_s; /* the ceiling with the same window, before and after */
   bench_proc_use_t admin;     /* outbox-admin's CPU over the replay */
} bench_replay_t;

typedef struct {
   bool ok;
   double target_pct; /* 25, 50, 90; 0 for the saturation run */
   double target_per_s, achieved_per_s;
   size_t events, received;
   double p50_ms, p95_ms, p99_ms, max_ms;
   double catchup_ms; /* last message received after the writers stopped: > a few ms
                       * means the pipeline did not keep up with the rate */
} bench_steady_t;

typedef struct {
   int threads, events_per_commit;
   double lib_per_s, plain_per_s, overhead_pct;
   double lib_cpu_us, plain_cpu_us;               /* client CPU per commit */
   double lib_server_cpu_us, plain_server_cpu_us; /* test-mongod CPU per commit */
   double lib_cmds, plain_cmds;                   /* commands sent per commit */
   bool ok;
} bench_libcase_t;

typedef struct {
   bool ok;
   size_t messages;
   int window;
   size_t payload;
   bool bare;              /* without the four MQTT 5 user properties the relay sends */
   bool in_process;        /* publisher inside the benchmark process (secondary figure) */
   int broker_receive_max; /* from CONNACK; the window is capped to it (0: none sent) */
   char malloc_name[16];   /* the publisher process's malloc: "jemalloc" or "glibc" */
   double msgs_per_s;      /* first publish -> all received by the subscriber */
   double acked_per_s;     /* first publish -> last PUBACK */
   double avg_msg_bytes;
   double cpu_us_per_msg; /* the publisher process's CPU per message (separate process) */
} bench_baseline_t;

/* Relay groups (group.c): failover after kill -9 and the drain rate of 1, 2, 4 members. */
#define BENCH_MAX_KILLS 16
typedef struct {
   bool ok;
   int kills, ttl_ms, renew_ms, margin_ms;
   double failover_s[BENCH_MAX_KILLS]; /* kill -9 -> first message of an orphaned partition */
   double p50_s, max_s;
} bench_failover_t;

typedef struct {
   bool ok;
   int members;
   size_t events;
   double seconds, msgs_per_s;
   double cpu_s[4];               /* each member's CPU over the drain */
   double cpu_us_per_event;       /* all members' CPU / events */
   size_t member_events[4];       /* events of each member's partitions (its leases) */
   double member_us_per_event[4]; /* cpu_s[m] / member_events[m] */
   bool leases_moved;             /* a partition changed owner during the drain */
   double ceiling_one;            /* one publisher process alone, measured before this drain */
   double ceiling_together;       /* k publisher processes side by side, measured before it */
} bench_group_drain_t;

typedef struct {
   char machine[256];
   char mongodb[200], mqtt[200];                  /* addresses without credentials */
   bench_baseline_t baseline, baseline_bare;      /* separate process: the ceiling */
   bench_baseline_t baseline_inproc;              /* in this process: secondary */
   bench_baseline_t baseline_sysmalloc;           /* outbox-bench-pub-sysmalloc: secondary */
   double baseline_runs[BENCH_MAX_BASELINE_RUNS]; /* msgs/s of each ceiling run with the
                                                   * default window and payload */
   int n_baseline_runs;
   bench_drain_t drain_few, drain_many, drain_stream, drain_bare;
   bench_drain_t drain_archive; /* drain-few with --archive-collection */
   bench_replay_t replay;       /* outbox-admin replay of an archive */
   bench_steady_t saturation, steady[3];
   double max_sustainable_per_s;
   bench_libcase_t lib[6];
   int n_lib;
   bench_baseline_t scale_base[BENCH_MAX_SCALE];
   bench_drain_t scale[BENCH_MAX_SCALE];
   int n_scale;
   bench_failover_t failover;
   bench_group_drain_t group[3]; /* 1, 2 and 4 members */
   int n_group;
   bool failed; /* some measurement could not complete or lost events */
   char failure[512];
} bench_results_t;

/* Addresses and (when started by us) process ids of the servers. */
typedef struct {
   char mongodb_uri[160];
   char mqtt_uri[160];
   pid_t mongod_pid, mosquitto_pid;
   char workdir[128];
} bench_servers_t;

static inline int64_t
bench_now_ns(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline double
bench_secs(int64_t from_ns, int64_t to_ns)
{
   return (double)(to_ns - from_ns) / 1e9;
}

/* options.c */
bool bench_opts_parse(bench_opts_t *o, int argc, char **argv, int *exit_code);
bool bench_part_enabled(const bench_opts_t *o, const char *part);

/* servers.c */
bool bench_servers_start(const bench_opts_t *o, bench_servers_t *s);
void bench_servers_stop(bench_servers_t *s);
pid_t bench_spawn(const char *const *argv, const char *log_path);
/* Starts a child whose stdin and stdout are pipes to us (it shares our stderr). 0 on
 * failure. Close *to_child to end its input; reap it with bench_stop_child(). */
pid_t bench_spawn_piped(const char *const *argv, FILE **to_child, FILE **from_child);
int bench_stop_child(pid_t pid, double grace_s);
/* Waits up to `grace_s` for a child to exit by itself, then stops it as above. Returns its
 * exit status, or -1 if it had to be stopped. */
int bench_wait_child(pid_t pid, double grace_s);
void bench_signals_init(void);
/* Starts the relay on db.coll with the given window; its output goes to workdir/log_name. */
pid_t bench_relay_start(const bench_opts_t *o, const bench_servers_t *s, const char *coll,
                        int window, const char *log_name);
/* The same with more arguments (a NULL-terminated list, e.g. lease timings). Relays started
 * on the same collection share their name: they form a group. */
pid_t bench_relay_start_with(const bench_opts_t *o, const bench_servers_t *s, const char *coll,
                             int window, const char *log_name, const char *const *extra);
void bench_relay_log_remove(const bench_servers_t *s, const char *log_name);

/* procstat.c: 0 on failure, so a missing process reads as "no data", never as a crash. */
double bench_proc_cpu_s(pid_t pid);
double bench_proc_hwm_mib(pid_t pid);
void bench_proc_use_begin(bench_proc_use_t *u, pid_t pid);
void bench_proc_use_end(bench_proc_use_t *u);

/* baseline.c: the ceiling, measured with outbox-bench-pub in a process of its own (the
 * headline figure), or with the same publisher inside this process (a secondary figure). */
struct bench_sub;
bool bench_baseline_run(const bench_opts_t *o, const bench_servers_t *s, struct bench_sub *sub,
                        size_t messages, size_t payload, int window, bool bare,
                        bench_baseline_t *out);
/* The same with k (1-4) publisher processes side by side, each sending messages / k: the
 * ceiling of k separate paho processes together on this machine. */
bool bench_baseline_together(const bench_opts_t *o, const bench_servers_t *s, struct bench_sub *sub,
                             int k, size_t messages, size_t payload, int window, bool bare,
                             bench_baseline_t *out);
bool bench_baseline_inproc(const bench_opts_t *o, const bench_servers_t *s, struct bench_sub *sub,
                           size_t messages, size_t payload, int window, bool bare,
                           bench_baseline_t *out);
/* The ceiling's publisher with glibc's malloc (o->sysmalloc_publisher_path): a secondary
 * figure, what a plain paho program gets. */
bool bench_baseline_sysmalloc(const bench_opts_t *o, const bench_servers_t *s,
                              struct bench_sub *sub, size_t messages, size_t payload, int window,
                              bench_baseline_t *out);

/* Length of the "pad" string that makes an event's data about `payload` bytes as JSON. */
static inline size_t
bench_pad_len(size_t payload)
{
   return payload > 48 ? payload - 40 : 8;
}

/* A string of `len` 'x' characters, owned by the benchmark (valid until exit). */
const char *bench_pad(size_t len);

/* report.c */
void bench_report_print(const bench_opts_t *o, const bench_results_t *r);
bool bench_report_json(const bench_opts_t *o, const bench_results_t *r, const char *path);
double bench_percentile(double *sorted, size_t n, double pct);
void bench_fail(bench_results_t *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* OUTBOX_BENCH_H */
