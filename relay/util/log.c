/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The relay's logger (log.h): formats one line per call, text or JSON, and writes it to
 * stderr or the log file; routes mongoc's and paho's logs into it. Its state is process-wide:
 * the level, format and reopen request are atomics any thread may set; the file descriptor and
 * path are guarded by log_mutex, so any thread may log (log.h says which calls are main-only).
 */
#include "util/log.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <MQTTAsync.h>
#include <mongoc/mongoc.h>

#include "util/redact.h"

/* The logger is process-wide state on purpose: mongoc's and paho's handlers are global
 * too, and every thread must reach the same sink without passing a handle around. */
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;
static atomic_int log_level = RELAY_LOG_INFO;
static atomic_int log_format = RELAY_LOG_TEXT;
static atomic_bool reopen_requested = false;
static int log_fd = STDERR_FILENO; /* guarded by log_mutex */
static char *log_path;             /* guarded by log_mutex; NULL = stderr */

static const char *const level_names[] = {"error", "warning", "info", "debug", "trace"};
/* Text lines pad to five columns so messages line up. */
static const char *const level_tags[] = {"ERROR", "WARN ", "INFO ", "DEBUG", "TRACE"};

static int
open_log(const char *path, bson_error_t *error)
{
   int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
   if (fd < 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_SYSTEM, "cannot open log file '%s': %s",
                     path, strerror(errno));
   }
   return fd;
}

/* Swaps in a new sink; the caller holds log_mutex. */
static void
set_sink(int fd, char *path)
{
   if (log_fd != STDERR_FILENO) {
      close(log_fd);
   }
   log_fd = fd;
   bson_free(log_path);
   log_path = path;
}

static enum MQTTASYNC_TRACE_LEVELS
paho_level_for(relay_log_level_t level)
{
   /* paho's ERROR trace reports every failed socket operation, which the relay reports
    * itself (once, with context), so below DEBUG only SEVERE and FATAL get through. */
   switch (level) {
   case RELAY_LOG_TRACE:
      return MQTTASYNC_TRACE_MINIMUM;
   case RELAY_LOG_DEBUG:
      return MQTTASYNC_TRACE_PROTOCOL;
   default:
      return MQTTASYNC_TRACE_SEVERE;
   }
}

static atomic_bool routed = false;
static atomic_bool paho_detail = false;
static void (*_Atomic paho_observer)(const char *line);

void
relay_log_sync_paho(void)
{
   relay_log_level_t level = (relay_log_level_t)atomic_load(&log_level);
   if (atomic_load(&paho_detail) && level < RELAY_LOG_DEBUG) {
      /* Protocol lines reach the observer; relay_log() still drops them below debug. */
      MQTTAsync_setTraceLevel(MQTTASYNC_TRACE_PROTOCOL);
      return;
   }
   /* paho 1.3.12 formats (vsnprintf under a global mutex) every protocol trace line and
    * records every function entry whenever its internal trace level is above ERROR, even
    * when nothing is printed, and MQTTAsync_setTraceLevel() lowers that internal level only
    * for levels <= ERROR (for SEVERE it sets just the output level). Setting ERROR first
    * and then the wanted output level keeps what is printed unchanged and saves a fifth of
    * paho's instructions per message, also after a SIGHUP lowered the level from debug. */
   if (level < RELAY_LOG_DEBUG) {
      MQTTAsync_setTraceLevel(MQTTASYNC_TRACE_ERROR);
   }
   MQTTAsync_setTraceLevel(paho_level_for(level));
}

bool
relay_log_init(relay_log_level_t level, relay_log_format_t format, const char *path,
               bson_error_t *error)
{
   int fd = STDERR_FILENO;
   if (path && *path) {
      fd = open_log(path, error);
      if (fd < 0) {
         return false;
      }
   }
   pthread_mutex_lock(&log_mutex);
   set_sink(fd, (path && *path) ? bson_strdup(path) : NULL);
   atomic_store(&log_level, (int)level);
   atomic_store(&log_format, (int)format);
   pthread_mutex_unlock(&log_mutex);
   if (atomic_load(&routed)) {
      relay_log_sync_paho();
   }
   return true;
}

void
relay_log_shutdown(void)
{
   pthread_mutex_lock(&log_mutex);
   set_sink(STDERR_FILENO, NULL);
   pthread_mutex_unlock(&log_mutex);
}

/* The caller holds log_mutex. On failure the old descriptor stays: losing the log entirely
 * because logrotate misbehaved would be worse than writing to the rotated file. */
static bool
reopen_locked(void)
{
   if (!log_path) {
      return true;
   }
   int fd = open_log(log_path, NULL);
   if (fd < 0) {
      return false;
   }
   close(log_fd);
   log_fd = fd;
   return true;
}

bool
relay_log_reopen(void)
{
   pthread_mutex_lock(&log_mutex);
   atomic_store(&reopen_requested, false);
   bool ok = reopen_locked();
   pthread_mutex_unlock(&log_mutex);
   return ok;
}

void
relay_log_request_reopen(void)
{
   atomic_store(&reopen_requested, true);
}

bool
relay_log_enabled(relay_log_level_t level)
{
   return (int)level <= atomic_load(&log_level);
}

static void
append_timestamp(bson_string_t *line)
{
   struct timespec ts;
   struct tm tm;
   char buf[32];

   clock_gettime(CLOCK_REALTIME, &ts);
   gmtime_r(&ts.tv_sec, &tm);
   strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
   bson_string_append_printf(line, "%s.%03dZ", buf, (int)(ts.tv_nsec / 1000000));
}

/* Length of the valid UTF-8 sequence at @s (1-4), or 0 if the bytes there are not one. */
static size_t
utf8_seq_len(const unsigned char *s)
{
   size_t n;
   if (s[0] < 0x80) {
      return 1;
   } else if (s[0] >= 0xc2 && s[0] <= 0xdf) {
      n = 2;
   } else if (s[0] >= 0xe0 && s[0] <= 0xef) {
      n = 3;
   } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
      n = 4;
   } else {
      return 0;
   }
   for (size_t i = 1; i < n; i++) {
      if ((s[i] & 0xc0) != 0x80) {
         return 0; /* also stops at the terminating NUL */
      }
   }
   /* Overlong three-byte forms, surrogates and code points above U+10FFFF. */
   if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
       (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)) {
      return 0;
   }
   return n;
}

/* Appends @s as the inside of a JSON string: quotes, backslashes and control characters
 * escaped, invalid UTF-8 replaced by U+FFFD so every line stays parseable. */
static void
append_json_escaped(bson_string_t *out, const char *s)
{
   const unsigned char *p = (const unsigned char *)s;
   while (*p) {
      size_t n = utf8_seq_len(p);
      if (n == 0) {
         bson_string_append(out, "\\ufffd");
         p++;
         continue;
      }
      if (n > 1) {
         char seq[5] = {0};
         memcpy(seq, p, n);
         bson_string_append(out, seq);
      } else if (*p == '"' || *p == '\\') {
         bson_string_append_printf(out, "\\%c", *p);
      } else if (*p == '\n') {
         bson_string_append(out, "\\n");
      } else if (*p == '\r') {
         bson_string_append(out, "\\r");
      } else if (*p == '\t') {
         bson_string_append(out, "\\t");
      } else if (*p < 0x20 || *p == 0x7f) {
         bson_string_append_printf(out, "\\u%04x", *p);
      } else {
         bson_string_append_c(out, (char)*p);
      }
      p += n;
   }
}

/* Text lines: control characters become C-style escapes so a message can never start a
 * new line (forged log lines) or move the cursor. UTF-8 passes through. */
static void
append_text_escaped(bson_string_t *out, const char *s)
{
   for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
      if (*p == '\n') {
         bson_string_append(out, "\\n");
      } else if (*p == '\r') {
         bson_string_append(out, "\\r");
      } else if (*p == '\t') {
         bson_string_append(out, "\\t");
      } else if (*p < 0x20 || *p == 0x7f) {
         bson_string_append_printf(out, "\\x%02x", *p);
      } else {
         bson_string_append_c(out, (char)*p);
      }
   }
}

static void
format_line(bson_string_t *line, relay_log_level_t level, const char *component, const char *msg)
{
   if (atomic_load(&log_format) == RELAY_LOG_JSON) {
      bson_string_append(line, "{\"time\":\"");
      append_timestamp(line);
      bson_string_append_printf(line, "\",\"level\":\"%s\",\"component\":\"", level_names[level]);
      append_json_escaped(line, component);
      bson_string_append(line, "\",\"msg\":\"");
      append_json_escaped(line, msg);
      bson_string_append(line, "\"}\n");
   } else {
      append_timestamp(line);
      bson_string_append_printf(line, " %s ", level_tags[level]);
      append_text_escaped(line, component);
      bson_string_append(line, ": ");
      append_text_escaped(line, msg);
      bson_string_append_c(line, '\n');
   }
}

static void
write_all(int fd, const char *buf, size_t len)
{
   while (len > 0) {
      ssize_t n = write(fd, buf, len);
      if (n < 0 && errno == EINTR) {
         continue;
      }
      if (n <= 0) {
         return; /* nowhere left to report a failing log */
      }
      buf += n;
      len -= (size_t)n;
   }
}

void
relay_log(relay_log_level_t level, const char *component, const char *fmt, ...)
{
   if ((int)level < RELAY_LOG_ERROR || (int)level > RELAY_LOG_TRACE) {
      level = RELAY_LOG_ERROR;
   }
   if (!relay_log_enabled(level)) {
      return;
   }
   va_list ap;
   va_start(ap, fmt);
   char *msg = bson_strdupv_printf(fmt, ap);
   va_end(ap);
   /* Whoever wrote the message (mongoc, paho, our own code quoting them): no password. */
   char *clean = relay_redact_known(msg);
   if (clean) {
      bson_free(msg);
      msg = clean;
   }

   bson_string_t *line = bson_string_new(NULL);
   format_line(line, level, component ? component : "relay", msg);

   /* One write() per line under the mutex: lines from different threads never interleave,
    * and O_APPEND keeps them whole even next to other writers of the same file. */
   pthread_mutex_lock(&log_mutex);
   if (atomic_exchange(&reopen_requested, false)) {
      reopen_locked();
   }
   write_all(log_fd, line->str, line->len);
   pthread_mutex_unlock(&log_mutex);

   bson_string_free(line, true);
   bson_free(msg);
}

static void
mongoc_handler(mongoc_log_level_t mlevel, const char *domain, const char *message, void *data)
{
   relay_log_level_t level;
   switch (mlevel) {
   case MONGOC_LOG_LEVEL_ERROR:
   case MONGOC_LOG_LEVEL_CRITICAL:
      level = RELAY_LOG_ERROR;
      break;
   case MONGOC_LOG_LEVEL_WARNING:
      level = RELAY_LOG_WARNING;
      break;
   case MONGOC_LOG_LEVEL_MESSAGE:
   case MONGOC_LOG_LEVEL_INFO:
      level = RELAY_LOG_INFO;
      break;
   case MONGOC_LOG_LEVEL_DEBUG:
      level = RELAY_LOG_DEBUG;
      break;
   default:
      level = RELAY_LOG_TRACE;
      break;
   }
   if (!relay_log_enabled(level)) {
      return;
   }
   relay_log(level, "mongoc", "%s: %s", domain ? domain : "-", message ? message : "");
}

static void
paho_handler(enum MQTTASYNC_TRACE_LEVELS plevel, char *message)
{
   relay_log_level_t level;
   void (*observer)(const char *line) = atomic_load(&paho_observer);
   if (observer && message) {
      observer(message);
   }
   /* Below what the log level shows of paho (its trace may be raised for the observer). */
   if ((int)plevel < (int)paho_level_for((relay_log_level_t)atomic_load(&log_level))) {
      return;
   }
   if (plevel >= MQTTASYNC_TRACE_SEVERE) {
      level = RELAY_LOG_ERROR;
   } else if (plevel == MQTTASYNC_TRACE_ERROR) {
      level = RELAY_LOG_WARNING;
   } else if (plevel == MQTTASYNC_TRACE_PROTOCOL) {
      level = RELAY_LOG_DEBUG;
   } else {
      level = RELAY_LOG_TRACE;
   }
   relay_log(level, "paho", "%s", message ? message : "");
}

void
relay_log_route_dependencies(void)
{
   mongoc_log_set_handler(mongoc_handler, NULL);
   MQTTAsync_setTraceCallback(paho_handler);
   relay_log_sync_paho();
   atomic_store(&routed, true);
}

bool
relay_log_level_parse(const char *s, relay_log_level_t *out)
{
   if (!s) {
      return false;
   }
   for (int i = RELAY_LOG_ERROR; i <= RELAY_LOG_TRACE; i++) {
      if (!strcasecmp(s, level_names[i])) {
         *out = (relay_log_level_t)i;
         return true;
      }
   }
   if (!strcasecmp(s, "warn")) {
      *out = RELAY_LOG_WARNING;
      return true;
   }
   return false;
}

const char *
relay_log_level_name(relay_log_level_t level)
{
   if ((int)level < RELAY_LOG_ERROR || (int)level > RELAY_LOG_TRACE) {
      return "unknown";
   }
   return level_names[level];
}

bool
relay_log_format_parse(const char *s, relay_log_format_t *out)
{
   if (s && !strcasecmp(s, "text")) {
      *out = RELAY_LOG_TEXT;
      return true;
   }
   if (s && !strcasecmp(s, "json")) {
      *out = RELAY_LOG_JSON;
      return true;
   }
   return false;
}

const char *
relay_log_format_name(relay_log_format_t format)
{
   return format == RELAY_LOG_JSON ? "json" : "text";
}

void
relay_log_observe_paho(void (*observer)(const char *line))
{
   atomic_store(&paho_observer, observer);
}

void
relay_log_paho_detail(bool on)
{
   if (atomic_exchange(&paho_detail, on) != on && atomic_load(&routed)) {
      relay_log_sync_paho();
   }
}
