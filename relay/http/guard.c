/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Bounds what slow and idle HTTP clients can hold of a libmicrohttpd daemon (guard.h says the
 * rules and why). The guard owns its list of waiting connections, guarded by its mutex:
 * libmicrohttpd's threads add and remove them, the guard's own watchdog thread cuts those past
 * their deadline.
 */
#include "http/guard.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <bson/bson.h>

/* One connection. Waiting ones are on the guard's list, oldest first. */
typedef struct entry_t {
   int fd;
   int64_t since_ms; /* accepted, or its previous request ended */
   bool listed;
   struct entry_t *prev, *next;
} entry_t;

struct relay_http_guard_t {
   unsigned max_waiting;
   int64_t deadline_ms;
   pthread_t thread;
   pthread_mutex_t mutex;
   pthread_cond_t cond; /* wakes the watchdog: stop, or a new list head */
   bool stop;
   entry_t *head, *tail; /* guarded by mutex */
   unsigned waiting;
};

static int64_t
now_ms(void)
{
   struct timespec ts;
   clock_gettime(CLOCK_MONOTONIC, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
unlist(relay_http_guard_t *g, entry_t *e)
{
   if (!e->listed) {
      return;
   }
   if (e->prev) {
      e->prev->next = e->next;
   } else {
      g->head = e->next;
   }
   if (e->next) {
      e->next->prev = e->prev;
   } else {
      g->tail = e->prev;
   }
   e->prev = e->next = NULL;
   e->listed = false;
   g->waiting--;
}

static void
list_at_tail(relay_http_guard_t *g, entry_t *e, int64_t now)
{
   e->since_ms = now;
   e->prev = g->tail;
   e->next = NULL;
   if (g->tail) {
      g->tail->next = e;
   } else {
      g->head = e;
      pthread_cond_signal(&g->cond);
   }
   g->tail = e;
   e->listed = true;
   g->waiting++;
}

/* Caller holds the mutex. The connection's own thread closes it once it sees the end. */
static void
cut(relay_http_guard_t *g, entry_t *e)
{
   shutdown(e->fd, SHUT_RDWR);
   unlist(g, e);
}

static void *
watch(void *arg)
{
   relay_http_guard_t *g = arg;
   pthread_mutex_lock(&g->mutex);
   while (!g->stop) {
      int64_t now = now_ms();
      while (g->head && now - g->head->since_ms >= g->deadline_ms) {
         cut(g, g->head);
      }
      int64_t wake = g->head ? g->head->since_ms + g->deadline_ms : now + 1000;
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      int64_t ns = (int64_t)ts.tv_nsec + (wake - now) * 1000000;
      ts.tv_sec += (time_t)(ns / 1000000000);
      ts.tv_nsec = (long)(ns % 1000000000);
      pthread_cond_timedwait(&g->cond, &g->mutex, &ts);
   }
   pthread_mutex_unlock(&g->mutex);
   return NULL;
}

relay_http_guard_t *
relay_http_guard_new(unsigned max_waiting, unsigned deadline_ms)
{
   relay_http_guard_t *g = bson_malloc0(sizeof *g);
   pthread_condattr_t attr;
   g->max_waiting = max_waiting;
   g->deadline_ms = deadline_ms;
   pthread_mutex_init(&g->mutex, NULL);
   pthread_condattr_init(&attr);
   pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
   pthread_cond_init(&g->cond, &attr);
   pthread_condattr_destroy(&attr);
   if (pthread_create(&g->thread, NULL, watch, g) != 0) {
      pthread_cond_destroy(&g->cond);
      pthread_mutex_destroy(&g->mutex);
      bson_free(g);
      return NULL;
   }
   return g;
}

void
relay_http_guard_destroy(relay_http_guard_t *g)
{
   if (!g) {
      return;
   }
   pthread_mutex_lock(&g->mutex);
   g->stop = true;
   pthread_cond_signal(&g->cond);
   pthread_mutex_unlock(&g->mutex);
   pthread_join(g->thread, NULL);
   /* libmicrohttpd reported every close before it stopped: the list is empty. */
   pthread_cond_destroy(&g->cond);
   pthread_mutex_destroy(&g->mutex);
   bson_free(g);
}

void
relay_http_guard_notify(void *cls, struct MHD_Connection *connection, void **socket_context,
                        enum MHD_ConnectionNotificationCode code)
{
   relay_http_guard_t *g = cls;
   entry_t *e = *socket_context;

   pthread_mutex_lock(&g->mutex);
   if (code == MHD_CONNECTION_NOTIFY_STARTED) {
      const union MHD_ConnectionInfo *info =
         MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
      e = bson_malloc0(sizeof *e);
      e->fd = info ? info->connect_fd : -1;
      *socket_context = e;
      if (e->fd >= 0) {
         list_at_tail(g, e, now_ms());
      }
      if (g->waiting > g->max_waiting) {
         cut(g, g->head); /* the one that has waited longest; never this new one */
      }
   } else if (e) {
      unlist(g, e);
      bson_free(e);
      *socket_context = NULL;
   }
   pthread_mutex_unlock(&g->mutex);
}

static entry_t *
entry_of(struct MHD_Connection *connection)
{
   const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
   return info ? info->socket_context : NULL;
}

void
relay_http_guard_received(relay_http_guard_t *g, struct MHD_Connection *connection)
{
   entry_t *e = entry_of(connection);
   if (e) {
      pthread_mutex_lock(&g->mutex);
      unlist(g, e);
      pthread_mutex_unlock(&g->mutex);
   }
}

void
relay_http_guard_done(relay_http_guard_t *g, struct MHD_Connection *connection)
{
   entry_t *e = entry_of(connection);
   if (e && e->fd >= 0) {
      pthread_mutex_lock(&g->mutex);
      if (!e->listed) {
         list_at_tail(g, e, now_ms());
      }
      pthread_mutex_unlock(&g->mutex);
   }
}

size_t
relay_http_guard_unescape(void *cls, struct MHD_Connection *connection, char *s)
{
   if (strstr(s, "%00")) {
      return strlen(s);
   }
   return MHD_http_unescape(s);
}
