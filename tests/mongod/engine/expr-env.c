/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What an expression sees besides its document: the command's clock ($$NOW, $$CLUSTER_TIME)
 * and the expressions the server was started without.
 *
 * The clock is thread-local: the server runs each command on its connection's thread and sets
 * the clock there first, so every expression of that command (filters, update pipelines,
 * change-stream stages, views), however deeply nested, sees the same values, as in MongoDB.
 * The disabled list is process-wide and written only at start-up, before threads exist.
 */
#include <string.h>
#include <time.h>

#include "expr.h"

static _Thread_local tm_command_clock_t command_clock;
static _Thread_local bool command_clock_set;

void
tm_command_clock_set(const tm_command_clock_t *clock)
{
   command_clock_set = clock != NULL;
   if (clock) {
      command_clock = *clock;
   }
}

void
tm_expr_now(bson_value_t *out)
{
   int64_t ms = command_clock.now_ms;

   if (!command_clock_set) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
   }
   out->value_type = BSON_TYPE_DATE_TIME;
   out->value.v_datetime = ms;
}

bool
tm_expr_cluster_time(bson_value_t *out, bson_error_t *error)
{
   if (!command_clock_set || !command_clock.has_cluster_time) {
      return tm_error_set(error, 51144, "Builtin variable '$$CLUSTER_TIME' is not available");
   }
   out->value_type = BSON_TYPE_TIMESTAMP;
   out->value.v_timestamp.timestamp = command_clock.cluster_time_t;
   out->value.v_timestamp.increment = command_clock.cluster_time_i;
   return true;
}

#define MAX_DISABLED 16

static char disabled[MAX_DISABLED][64];
static size_t n_disabled;

/* The operators expr.c evaluates itself, which the operator table does not list. */
static bool
is_known(const char *name)
{
   static const char *const lazy[] = {"$cond", "$and", "$or", "$ifNull", "$literal"};
   int min, max;

   for (size_t i = 0; i < sizeof lazy / sizeof lazy[0]; i++) {
      if (strcmp(lazy[i], name) == 0) {
         return true;
      }
   }
   return tm_expr_op_lookup(name, &min, &max) != NULL;
}

bool
tm_expr_disable(const char *name)
{
   char full[64];

   bson_snprintf(full, sizeof full, "%s%s", name[0] == '$' ? "" : "$", name);
   if (!is_known(full) || n_disabled == MAX_DISABLED) {
      return false;
   }
   bson_strncpy(disabled[n_disabled++], full, sizeof disabled[0]);
   return true;
}

bool
tm_expr_is_disabled(const char *name)
{
   for (size_t i = 0; i < n_disabled; i++) {
      if (strcmp(disabled[i], name) == 0) {
         return true;
      }
   }
   return false;
}
