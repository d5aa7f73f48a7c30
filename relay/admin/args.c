/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Splitting outbox-admin's command line. The tool's options are looked up first, then the
 * relay's (relay_config_is_option() says whether one takes a value); the first word that is
 * not an option is the command. Options may come before or after it.
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#include "admin/args.h"
#include "util/error.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const commands[] = {"status",  "pending",       "dead-letters", "requeue",
                                       "discard", "ensure-schema", "replay",       NULL};

typedef enum { A_FLAG, A_STRING, A_AGE, A_COUNT, A_ID, A_ID_JSON } kind_t;

typedef struct {
   const char *name;
   kind_t kind;
   size_t offset; /* in admin_t */
} admin_opt_t;

#define OFF(f) offsetof(admin_t, f)
static const admin_opt_t admin_opts[] = {
   {"json", A_FLAG, OFF(json)},
   {"all", A_FLAG, OFF(all)},
   {"dry-run", A_FLAG, OFF(dry_run)},
   {"discarded", A_FLAG, OFF(discarded)},
   {"print", A_FLAG, OFF(print)},
   {"combine", A_FLAG, OFF(combine)},
   {"id", A_ID, 0},
   {"id-json", A_ID_JSON, 0},
   {"event-id", A_STRING, OFF(event_id)},
   {"type", A_STRING, OFF(type)},
   {"reason-contains", A_STRING, OFF(reason_filter)},
   {"by", A_STRING, OFF(by)},
   {"reason", A_STRING, OFF(reason)},
   {"validation-action", A_STRING, OFF(validation_action)},
   {"validation-level", A_STRING, OFF(validation_level)},
   {"older-than", A_AGE, OFF(older_than_ms)},
   {"max-age", A_AGE, OFF(max_age_ms)},
   {"limit", A_COUNT, OFF(limit)},
   {"top", A_COUNT, OFF(top)},
   {"since", A_STRING, OFF(since)},
   {"until", A_STRING, OFF(until)},
   {"rate", A_COUNT, OFF(rate)},
};

/* An id given as JSON is one entity's id: a query operator ({"$ne": null} matched every
 * entity, and so got `discard` past the "a filter or --all" rule) or an array (never an _id)
 * is refused. Extended JSON such as {"$oid": "..."} has become the value it stands for by
 * then, so any key starting with '$' left is an operator. */
static bool
check_id_value(const bson_value_t *v, const char *json, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   if (v->value_type == BSON_TYPE_ARRAY) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "--id-json: '%s' is an array, which is never an entity id", json);
      return false;
   }
   if (v->value_type != BSON_TYPE_DOCUMENT ||
       !bson_init_static(&doc, v->value.v_doc.data, v->value.v_doc.data_len) ||
       !bson_iter_init(&it, &doc)) {
      return true;
   }
   while (bson_iter_next(&it)) {
      if (bson_iter_key(&it)[0] == '$') {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                        "--id-json: '%s' holds the query operator '%s', not an entity id: give "
                        "the id itself (one entity; extended JSON such as {\"$oid\": \"...\"} "
                        "is fine)",
                        json, bson_iter_key(&it));
         return false;
      }
   }
   return true;
}

static bool
set_id_json(admin_t *a, const char *json, bson_error_t *error)
{
   char *doc_json = bson_strdup_printf("{\"v\": %s}", json);
   bson_error_t parse_error;
   bson_t *doc = bson_new_from_json((const uint8_t *)doc_json, -1, &parse_error);
   bson_iter_t it;
   /* One key: '1, "w": 2' must not pass as 1. */
   bool ok = doc && bson_count_keys(doc) == 1 && bson_iter_init_find(&it, doc, "v");
   if (!ok) {
      /* libbson's message points into the {"v": ...} wrapper: not quoted. */
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "--id-json: '%s' is not one JSON value (e.g. 42, \"a-1\", "
                     "{\"$oid\": \"5f2b6c0e9d3e4a1b2c3d4e5f\"})",
                     json);
   } else if ((ok = check_id_value(bson_iter_value(&it), json, error))) {
      bson_value_copy(bson_iter_value(&it), &a->entity);
      a->has_entity = true;
   }
   bson_destroy(doc);
   bson_free(doc_json);
   return ok;
}

static bool
apply(admin_t *a, const admin_opt_t *o, const char *value, bson_error_t *error)
{
   void *field = (char *)a + o->offset;
   if (a->has_entity && (o->kind == A_ID || o->kind == A_ID_JSON)) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "--%s: one entity id only",
                     o->name);
      return false;
   }
   switch (o->kind) {
   case A_FLAG:
      *(bool *)field = true;
      return true;
   case A_STRING:
      if (!*value) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "--%s: empty value", o->name);
         return false;
      }
      *(const char **)field = value;
      return true;
   case A_AGE:
      a->max_age_given = a->max_age_given || o->offset == OFF(max_age_ms);
      if (!admin_parse_age(value, (int64_t *)field)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                        "--%s: expected a duration like 500ms, 30s, 5m, 1.5h, 1d or 2w, got '%s'",
                        o->name, value);
         return false;
      }
      return true;
   case A_COUNT: {
      char *end;
      errno = 0;
      long long n = strtoll(value, &end, 10);
      /* strtoll() also takes leading spaces and a sign. */
      if (*end || end == value || n < 1 || errno == ERANGE || value[0] < '0' || value[0] > '9') {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                        "--%s: expected a number from 1 to %lld, got '%s'", o->name, LLONG_MAX,
                        value);
         return false;
      }
      *(int64_t *)field = n;
      return true;
   }
   case A_ID:
      a->entity.value_type = BSON_TYPE_UTF8;
      a->entity.value.v_utf8.str = bson_strdup(value);
      a->entity.value.v_utf8.len = (uint32_t)strlen(value);
      a->has_entity = true;
      return true;
   case A_ID_JSON:
      return set_id_json(a, value, error);
   }
   return false;
}

static const admin_opt_t *
find_opt(const char *name, size_t len)
{
   for (size_t i = 0; i < sizeof admin_opts / sizeof admin_opts[0]; i++) {
      if (strlen(admin_opts[i].name) == len && !strncmp(admin_opts[i].name, name, len)) {
         return &admin_opts[i];
      }
   }
   return NULL;
}

/* One "--name[=value]" argument; *@i moves past a separate value. */
static admin_args_result_t
scan_option(admin_t *a, admin_args_t *args, int argc, char **argv, int *i, bson_error_t *error)
{
   const char *name = argv[*i] + 2, *eq = strchr(name, '=');
   size_t len = eq ? (size_t)(eq - name) : strlen(name);
   const admin_opt_t *o = find_opt(name, len);
   bool takes_value = false;

   if (!o && !relay_config_is_option(name, len, &takes_value)) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "unknown option '--%.*s'",
                     (int)len, name);
      return ADMIN_ARGS_USAGE_ERROR;
   }
   if (!o) {
      args->relay_argv[args->relay_argc++] = argv[*i];
      if (takes_value && !eq && *i + 1 < argc) {
         args->relay_argv[args->relay_argc++] = argv[++*i];
      }
      return ADMIN_ARGS_RUN;
   }
   const char *value = eq ? eq + 1 : NULL;
   if (o->kind == A_FLAG && value) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "--%s takes no value", o->name);
      return ADMIN_ARGS_USAGE_ERROR;
   }
   if (o->kind != A_FLAG && !value) {
      if (*i + 1 >= argc) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "--%s: missing value",
                        o->name);
         return ADMIN_ARGS_USAGE_ERROR;
      }
      value = argv[++*i];
   }
   return apply(a, o, value, error) ? ADMIN_ARGS_RUN : ADMIN_ARGS_USAGE_ERROR;
}

static admin_args_result_t
scan_command(admin_args_t *args, const char *word, bson_error_t *error)
{
   if (args->command) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "unexpected argument '%s' after command '%s'", word, args->command);
      return ADMIN_ARGS_USAGE_ERROR;
   }
   for (int i = 0; commands[i]; i++) {
      if (!strcmp(word, commands[i])) {
         args->command = commands[i];
         return ADMIN_ARGS_RUN;
      }
   }
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "unknown command '%s'", word);
   return ADMIN_ARGS_USAGE_ERROR;
}

/* replay's --since and --until: each a time or an age, and a range that is not empty. Ages
 * are judged against the local clock here (the server's is read only after connecting): the
 * same for both, which is all the order needs. */
static admin_args_result_t
check_window(const admin_t *a, bson_error_t *error)
{
   const char *text[2] = {a->since, a->until};
   int64_t ms[2] = {0, 0}, now = (int64_t)time(NULL) * 1000;
   for (int i = 0; i < 2; i++) {
      if (text[i] && !admin_parse_time(text[i], now, &ms[i])) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                        "--%s: expected a UTC time like 2026-11-20T10:00:00Z (a real date) or an "
                        "age like 2h, got '%s'",
                        i == 0 ? "since" : "until", text[i]);
         return ADMIN_ARGS_USAGE_ERROR;
      }
   }
   if (text[0] && text[1] && ms[0] >= ms[1]) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "--since %s is not before --until %s: the range [since, until) is empty "
                     "(reversed?)",
                     text[0], text[1]);
      return ADMIN_ARGS_USAGE_ERROR;
   }
   return ADMIN_ARGS_RUN;
}

/* What only makes sense together, checked once everything is read. */
static admin_args_result_t
check(const admin_t *a, const admin_args_t *args, bson_error_t *error)
{
   if (!strcmp(args->command, "replay") && check_window(a, error) != ADMIN_ARGS_RUN) {
      return ADMIN_ARGS_USAGE_ERROR;
   }
   bool writes = !strcmp(args->command, "requeue") || !strcmp(args->command, "discard");
   bool filtered =
      a->has_entity || a->event_id || a->type || a->reason_filter || a->older_than_ms > 0;
   if (writes && !filtered && !a->all) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "%s needs a filter (--id, --event-id, --type, "
                     "--reason-contains, --older-than) or --all",
                     args->command);
      return ADMIN_ARGS_USAGE_ERROR;
   }
   if (!strcmp(args->command, "discard") && !a->reason) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE,
                     "discard needs --reason: nothing is discarded without a why");
      return ADMIN_ARGS_USAGE_ERROR;
   }
   return ADMIN_ARGS_RUN;
}

admin_args_result_t
admin_args_parse(admin_t *a, admin_args_t *args, int argc, char **argv, bson_error_t *error)
{
   memset(args, 0, sizeof *args);
   args->relay_argv = bson_malloc0(sizeof(char *) * (size_t)(argc + 1));
   args->relay_argv[args->relay_argc++] = argv[0];
   for (int i = 1; i < argc; i++) {
      admin_args_result_t r = ADMIN_ARGS_RUN;
      if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
         return ADMIN_ARGS_HELP;
      } else if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
         return ADMIN_ARGS_VERSION;
      } else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
         args->relay_argv[args->relay_argc++] = argv[i];
         args->relay_argv[args->relay_argc++] = argv[++i];
      } else if (!strncmp(argv[i], "--", 2) && argv[i][2]) {
         r = scan_option(a, args, argc, argv, &i, error);
      } else {
         r = scan_command(args, argv[i], error);
      }
      if (r != ADMIN_ARGS_RUN) {
         return r;
      }
   }
   if (!args->command) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_USAGE, "no command given");
      return ADMIN_ARGS_USAGE_ERROR;
   }
   return check(a, args, error);
}

void
admin_args_cleanup(admin_t *a, admin_args_t *args)
{
   if (a->has_entity) {
      bson_value_destroy(&a->entity);
   }
   bson_free(args->relay_argv);
}
