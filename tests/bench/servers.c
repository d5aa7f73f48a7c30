/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Child processes: mosquitto and test-mongod on free loopback ports (unless
 * OUTBOX_MONGODB_URI / OUTBOX_MQTT_URI name servers to use), and the relay under test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

extern char **environ;

/* Every child still running, so an interrupted benchmark leaves no server behind. */
static volatile pid_t children[16];

static void
track(pid_t pid, pid_t replace)
{
   for (size_t i = 0; i < sizeof children / sizeof children[0]; i++) {
      if (children[i] == replace) {
         children[i] = pid;
         return;
      }
   }
}

static void
on_signal(int sig)
{
   for (size_t i = 0; i < sizeof children / sizeof children[0]; i++) {
      if (children[i] > 0) {
         kill(children[i], SIGTERM);
      }
   }
   _exit(128 + sig);
}

void
bench_signals_init(void)
{
   /* paho writes to sockets the broker may have closed: EPIPE, not death by SIGPIPE. */
   signal(SIGPIPE, SIG_IGN);
   struct sigaction sa = {.sa_handler = on_signal};
   sigemptyset(&sa.sa_mask);
   sigaction(SIGINT, &sa, NULL);
   sigaction(SIGTERM, &sa, NULL);
   sigaction(SIGHUP, &sa, NULL);
}

static void
sleep_ms(int ms)
{
   nanosleep(&(struct timespec){ms / 1000, (long)(ms % 1000) * 1000000}, NULL);
}

/* fork() + execve() rather than posix_spawn(): the child asks the kernel to send it SIGTERM
 * when the benchmark dies, however it dies, so no server or relay outlives it. Only
 * async-signal-safe calls run between fork and exec, as a threaded parent requires.
 * `in_fd`/`out_fd` (or -1) become the child's stdin/stdout; `log_fd` (or -1) its stdout,
 * unless `out_fd` is given, and its stderr. */
static pid_t
spawn(const char *const *argv, int in_fd, int out_fd, int log_fd)
{
   pid_t parent = getpid();
   pid_t pid = fork();
   if (pid == 0) {
      if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) {
         _exit(127); /* the benchmark is already gone */
      }
      if ((in_fd >= 0 && dup2(in_fd, 0) < 0) || (out_fd >= 0 && dup2(out_fd, 1) < 0) ||
          (log_fd >= 0 && out_fd < 0 && dup2(log_fd, 1) < 0) ||
          (log_fd >= 0 && dup2(log_fd, 2) < 0)) {
         _exit(127);
      }
      execve(argv[0], (char *const *)argv, environ);
      static const char msg[] = "outbox-bench: exec failed\n";
      ssize_t ignored = write(2, msg, sizeof msg - 1);
      (void)ignored;
      _exit(127);
   }
   if (pid < 0) {
      fprintf(stderr, "outbox-bench: cannot start %s: %s\n", argv[0], strerror(errno));
      return 0;
   }
   track(pid, 0);
   return pid;
}

pid_t
bench_spawn(const char *const *argv, const char *log_path)
{
   int log_fd = -1;
   if (log_path && (log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0) {
      fprintf(stderr, "outbox-bench: %s: %s\n", log_path, strerror(errno));
      return 0;
   }
   pid_t pid = spawn(argv, -1, -1, log_fd);
   if (log_fd >= 0) {
      close(log_fd);
   }
   return pid;
}

pid_t
bench_spawn_piped(const char *const *argv, FILE **to_child, FILE **from_child)
{
   int in[2], out[2];
   if (pipe2(in, O_CLOEXEC) != 0) {
      return 0;
   }
   if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      return 0;
   }
   pid_t pid = spawn(argv, in[0], out[1], -1);
   close(in[0]);
   close(out[1]);
   if (!pid) {
      close(in[1]);
      close(out[0]);
      return 0;
   }
   *to_child = fdopen(in[1], "w");
   *from_child = fdopen(out[0], "r");
   return pid;
}

/* Waits up to `grace_s` for the child to exit; -2 if it is still running. */
static int
reap(pid_t pid, double grace_s)
{
   int status = 0;
   for (int waited = 0; waited < (int)(grace_s * 1000); waited += 10) {
      pid_t r = waitpid(pid, &status, WNOHANG);
      if (r == pid) {
         return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (r < 0 && errno != EINTR) {
         return -1;
      }
      sleep_ms(10);
   }
   return -2;
}

/* SIGTERM, then SIGKILL after `grace_s`. Returns the exit status, 128+signal if killed by
 * one, or -1 if it had to be killed by us. */
int
bench_stop_child(pid_t pid, double grace_s)
{
   if (pid <= 0) {
      return 0;
   }
   kill(pid, SIGTERM);
   int result = reap(pid, grace_s);
   if (result == -2 && kill(pid, SIGKILL) == 0) {
      waitpid(pid, NULL, 0);
   }
   track(0, pid);
   return result < 0 ? -1 : result;
}

int
bench_wait_child(pid_t pid, double grace_s)
{
   if (pid <= 0) {
      return 0;
   }
   int result = reap(pid, grace_s);
   if (result == -2) {
      bench_stop_child(pid, 5);
      return -1;
   }
   track(0, pid);
   return result;
}

static int
free_port(void)
{
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
   socklen_t len = sizeof a;
   int port = 0;
   if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
       !getsockname(fd, (struct sockaddr *)&a, &len)) {
      port = ntohs(a.sin_port);
   }
   if (fd >= 0) {
      close(fd);
   }
   return port;
}

static bool
port_open(int port)
{
   int fd = socket(AF_INET, SOCK_STREAM, 0);
   struct sockaddr_in a = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
   bool ok = fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof a);
   if (fd >= 0) {
      close(fd);
   }
   return ok;
}

static bool
start_mosquitto(const bench_opts_t *o, bench_servers_t *s)
{
   char conf[192], log[192];
   snprintf(conf, sizeof conf, "%s/mosquitto.conf", s->workdir);
   snprintf(log, sizeof log, "%s/mosquitto.log", s->workdir);
   /* Another process may take the port between free_port() and mosquitto's bind: retry. */
   for (int attempt = 0; attempt < 5; attempt++) {
      int port = free_port();
      FILE *f = fopen(conf, "w");
      if (!f) {
         return false;
      }
      /* Queues and the outgoing window are raised so the broker's defaults (1000 queued,
       * 20 in flight per client) never become the limit being measured, for the baseline
       * and the relay alike. Staying our own user keeps mosquitto from switching
       * credentials, which would also drop its parent-death signal. */
      const struct passwd *pw = getpwuid(getuid());
      fprintf(f,
              "listener %d 127.0.0.1\nallow_anonymous true\npersistence false\n"
              "max_queued_messages 10000000\nmax_inflight_messages 1000\n"
              "log_dest stderr\nlog_type error\nlog_type warning\n",
              port);
      if (pw) {
         fprintf(f, "user %s\n", pw->pw_name);
      }
      fclose(f);
      const char *argv[] = {o->mosquitto_path, "-c", conf, NULL};
      s->mosquitto_pid = bench_spawn(argv, log);
      for (int i = 0; i < 200 && s->mosquitto_pid; i++) {
         if (port_open(port)) {
            snprintf(s->mqtt_uri, sizeof s->mqtt_uri, "tcp://127.0.0.1:%d", port);
            return true;
         }
         if (waitpid(s->mosquitto_pid, NULL, WNOHANG) == s->mosquitto_pid) {
            break;
         }
         sleep_ms(25);
      }
      bench_stop_child(s->mosquitto_pid, 1);
      s->mosquitto_pid = 0;
   }
   fprintf(stderr, "outbox-bench: mosquitto did not start (see %s)\n", log);
   return false;
}

static bool
start_mongod(const bench_opts_t *o, bench_servers_t *s)
{
   char port_file[192], log[192];
   if (!o->mongod_path) {
      fprintf(stderr, "outbox-bench: no MongoDB: set OUTBOX_MONGODB_URI or pass --mongod PATH\n");
      return false;
   }
   snprintf(port_file, sizeof port_file, "%s/mongod.port", s->workdir);
   snprintf(log, sizeof log, "%s/mongod.log", s->workdir);
   /* The history of changes is bounded (--oplog-mb, 256 MiB by default; test-mongod's own
    * default is 1 GiB): a 1M-event drain writes ~0.5 GB of documents and as much history
    * again (inserts carry whole documents, clears the pending arrays left), and the server
    * must stay under 1.5 GB (issue 16). MongoDB sizes an in-memory oplog at 5% of RAM, at
    * least 50 MB. Resuming from further back than the bound answers 286, as a rolled-over
    * oplog does, and the relay sweeps. */
   char oplog_mb[24];
   snprintf(oplog_mb, sizeof oplog_mb, "%zu", o->oplog_mb);
   const char *argv[] = {o->mongod_path, "--port",     "0",      "--port-file",
                         port_file,      "--oplog-mb", oplog_mb, NULL};
   s->mongod_pid = bench_spawn(argv, log);
   for (int i = 0; i < 400 && s->mongod_pid; i++) {
      FILE *f = fopen(port_file, "r");
      int port = 0;
      if (f) {
         if (fscanf(f, "%d", &port) != 1) {
            port = 0;
         }
         fclose(f);
      }
      if (port > 0) {
         snprintf(s->mongodb_uri, sizeof s->mongodb_uri,
                  "mongodb://127.0.0.1:%d/?directConnection=true", port);
         return true;
      }
      if (waitpid(s->mongod_pid, NULL, WNOHANG) == s->mongod_pid) {
         s->mongod_pid = 0;
         break;
      }
      sleep_ms(25);
   }
   fprintf(stderr, "outbox-bench: test-mongod did not start (see %s)\n", log);
   return false;
}

bool
bench_servers_start(const bench_opts_t *o, bench_servers_t *s)
{
   memset(s, 0, sizeof *s);
   const char *tmp = getenv("TMPDIR");
   snprintf(s->workdir, sizeof s->workdir, "%s/outbox-bench.XXXXXX", tmp && *tmp ? tmp : "/tmp");
   if (!mkdtemp(s->workdir)) {
      perror("outbox-bench: mkdtemp");
      return false;
   }
   const char *mongodb = getenv("OUTBOX_MONGODB_URI");
   const char *mqtt = getenv("OUTBOX_MQTT_URI");
   if (mongodb && *mongodb) {
      snprintf(s->mongodb_uri, sizeof s->mongodb_uri, "%s", mongodb);
   } else if (!start_mongod(o, s)) {
      return false;
   }
   if (mqtt && *mqtt) {
      snprintf(s->mqtt_uri, sizeof s->mqtt_uri, "%s", mqtt);
   } else if (!start_mosquitto(o, s)) {
      return false;
   }
   return true;
}

static void
remove_workdir(const char *dir)
{
   static const char *const files[] = {"mosquitto.conf", "mosquitto.log", "mongod.port",
                                       "mongod.log"};
   char path[256];
   for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, files[i]);
      unlink(path);
   }
   /* Relay logs are kept only when something failed; rmdir then fails and says so. */
   if (rmdir(dir) && errno == ENOTEMPTY) {
      fprintf(stderr, "outbox-bench: logs kept in %s\n", dir);
   }
}

void
bench_servers_stop(bench_servers_t *s)
{
   if (s->mosquitto_pid) {
      bench_stop_child(s->mosquitto_pid, 5);
      s->mosquitto_pid = 0;
   }
   if (s->mongod_pid) {
      int st = bench_stop_child(s->mongod_pid, 10);
      if (st != 0) {
         fprintf(stderr, "outbox-bench: test-mongod exited with status %d\n", st);
      }
      s->mongod_pid = 0;
   }
   if (s->workdir[0]) {
      remove_workdir(s->workdir);
   }
}

pid_t
bench_relay_start(const bench_opts_t *o, const bench_servers_t *s, const char *coll, int window,
                  const char *log_name)
{
   return bench_relay_start_with(o, s, coll, window, log_name, NULL);
}

pid_t
bench_relay_start_with(const bench_opts_t *o, const bench_servers_t *s, const char *coll,
                       int window, const char *log_name, const char *const *extra)
{
   char window_s[16], name[96], log[256], metrics[32];
   snprintf(window_s, sizeof window_s, "%d", window);
   snprintf(name, sizeof name, "bench-%s", coll);
   snprintf(log, sizeof log, "%s/%s", s->workdir, log_name);
   /* Metrics stay on, as in production, but never on the fixed default port that another
    * relay on this machine may hold. */
   snprintf(metrics, sizeof metrics, "127.0.0.1:%d", free_port());
   const char *argv[64];
   int n = 0;
   argv[n++] = o->relay_path;
   argv[n++] = "--mongodb-uri";
   argv[n++] = s->mongodb_uri;
   argv[n++] = "--mqtt-uri";
   argv[n++] = s->mqtt_uri;
   argv[n++] = "--database";
   argv[n++] = o->database;
   argv[n++] = "--collection";
   argv[n++] = coll;
   argv[n++] = "--name";
   argv[n++] = name;
   argv[n++] = "--metrics-listen";
   argv[n++] = metrics;
   if (o->window_flag && *o->window_flag) {
      argv[n++] = o->window_flag;
      argv[n++] = window_s;
   }
   for (int i = 0; i < o->n_relay_args; i++) {
      argv[n++] = o->relay_args[i];
   }
   for (int i = 0; extra && extra[i] && n < 63; i++) {
      argv[n++] = extra[i];
   }
   argv[n] = NULL;
   return bench_spawn(argv, log);
}

void
bench_relay_log_remove(const bench_servers_t *s, const char *log_name)
{
   char log[256];
   snprintf(log, sizeof log, "%s/%s", s->workdir, log_name);
   unlink(log);
}
