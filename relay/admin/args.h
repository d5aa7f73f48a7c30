/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * outbox-admin's command line: the command, the tool's own options (into admin_t) and the
 * relay's options, which are handed on untouched to relay_config_load_mongodb().
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#ifndef RELAY_ADMIN_ARGS_H
#define RELAY_ADMIN_ARGS_H

#include "admin/admin.h"

typedef enum {
   ADMIN_ARGS_RUN = 0,
   ADMIN_ARGS_HELP,
   ADMIN_ARGS_VERSION,
   ADMIN_ARGS_USAGE_ERROR,
} admin_args_result_t;

typedef struct {
   const char *command;
   int relay_argc;    /* relay_argv[0] is argv[0] */
   char **relay_argv; /* owned array of borrowed strings */
} admin_args_t;

/* Parses @argv. On ADMIN_ARGS_USAGE_ERROR @error says what is wrong. @args must be freed
 * with admin_args_cleanup() whatever is returned. */
admin_args_result_t admin_args_parse(admin_t *a, admin_args_t *args, int argc, char **argv,
                                     bson_error_t *error);

/* Parses a duration (when.c): 500ms, 30s, 5m, 2h, 1d, or a plain number of seconds; digits
 * with at most one '.', nothing around them, below about 106 million years. */
bool admin_parse_age(const char *text, int64_t *ms);

/* Parses --since/--until (when.c): RFC 3339 UTC ("2026-11-20T10:00:00Z", optional fraction,
 * a real calendar date) or an age ("2h": that long before @now). */
bool admin_parse_time(const char *text, int64_t now, int64_t *ms);

void admin_args_cleanup(admin_t *a, admin_args_t *args);

#endif /* RELAY_ADMIN_ARGS_H */
