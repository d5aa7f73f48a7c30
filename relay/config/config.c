/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Loading: defaults, then the config file, then the environment, then the flags, each layer
 * overwriting the one before; then the checks that involve several options.
 *
 * Runs on the thread that loads the configuration (main at start-up, the signal thread on
 * SIGHUP); it touches only the relay_config_t it is given, never a running one.
 */
#include "config/config-private.h"
#include "util/error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct {
   const relay_opt_t *opt;
   const char *value; /* borrowed from argv */
   const char *flag;  /* as typed, for messages */
   size_t flag_len;
} flag_t;

typedef struct {
   flag_t *flags;
   size_t n_flags;
   const char *config_path; /* borrowed from argv or the environment */
   bool check;
} args_t;

/* One argument starting with "--". Sets *@i past a separate value it consumed. */
static relay_config_action_t
scan_long(args_t *args, int argc, char **argv, int *i, bson_error_t *error)
{
   const char *arg = argv[*i];
   const char *name = arg + 2;
   const char *eq = strchr(name, '=');
   size_t len = eq ? (size_t)(eq - name) : strlen(name);

   if (!eq && !strcmp(name, "help")) {
      return RELAY_CONFIG_HELP;
   }
   if (!eq && !strcmp(name, "version")) {
      return RELAY_CONFIG_VERSION;
   }
   if (!eq && !strcmp(name, "check-config")) {
      args->check = true;
      return RELAY_CONFIG_RUN;
   }
   bool is_config = len == 6 && !strncmp(name, "config", 6);
   const relay_opt_t *opt = is_config ? NULL : _relay_opt_find(name, len);
   if (!opt && !is_config) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "unknown option '--%.*s' (see --help)", (int)len, name);
      return RELAY_CONFIG_USAGE_ERROR;
   }
   if (opt && opt->type == OPT_SECRET) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "--%s is not accepted on the command line (other users can read it with "
                     "ps): use %s, --%s-file or the config file",
                     opt->name, opt->env, opt->name);
      return RELAY_CONFIG_USAGE_ERROR;
   }
   const char *value = eq ? eq + 1 : NULL;
   if (!value && opt && opt->type == OPT_BOOL) {
      value = "true";
   } else if (!value) {
      if (*i + 1 >= argc || !strncmp(argv[*i + 1], "--", 2)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "--%.*s: missing value",
                        (int)len, name);
         return RELAY_CONFIG_USAGE_ERROR;
      }
      value = argv[++*i];
   }
   if (is_config) {
      args->config_path = value;
   } else {
      args->flags[args->n_flags++] = (flag_t){opt, value, arg, len + 2};
   }
   return RELAY_CONFIG_RUN;
}

static relay_config_action_t
scan_argv(args_t *args, int argc, char **argv, bson_error_t *error)
{
   for (int i = 1; i < argc; i++) {
      const char *arg = argv[i];
      relay_config_action_t action = RELAY_CONFIG_RUN;
      if (!strcmp(arg, "-h")) {
         return RELAY_CONFIG_HELP;
      } else if (!strcmp(arg, "-V")) {
         return RELAY_CONFIG_VERSION;
      } else if (!strcmp(arg, "-c")) {
         if (i + 1 >= argc) {
            bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "-c: missing value");
            return RELAY_CONFIG_USAGE_ERROR;
         }
         args->config_path = argv[++i];
      } else if (!strncmp(arg, "--", 2) && arg[2]) {
         action = scan_long(args, argc, argv, &i, error);
      } else {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "unexpected argument '%s' (options start with --; see --help)", arg);
         return RELAY_CONFIG_USAGE_ERROR;
      }
      if (action != RELAY_CONFIG_RUN) {
         return action;
      }
   }
   return RELAY_CONFIG_RUN;
}

static const char *
env_value(const relay_opt_t *opt)
{
   const char *v = getenv(opt->env);
   /* Empty counts as unset: container tooling often defines variables it has no value for. */
   return v && *v ? v : NULL;
}

static bool
load_env(relay_config_t *cfg, bson_error_t *error)
{
   const relay_opt_t *pw = _relay_opt_find("mqtt-password", 13);
   const relay_opt_t *pw_file = _relay_opt_find("mqtt-password-file", 18);
   if (env_value(pw) && env_value(pw_file)) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s and %s are both set: set only one", pw->env, pw_file->env);
      return false;
   }
   for (size_t i = 0; i < relay_n_opts; i++) {
      const relay_opt_t *opt = &relay_opts[i];
      const char *v = opt->name ? env_value(opt) : NULL;
      if (v && !_relay_opt_apply(cfg, opt, v, opt->env, false, error)) {
         return false;
      }
   }
   return true;
}

/* Unlike --mqtt-password, a URI flag cannot be refused for holding a password (it is the
 * natural way to pass a URI), but the operator should know that ps shows it. */
static void
warn_secret_in_flag(const relay_opt_t *opt, const char *value)
{
   char *redacted = relay_config_redact_uri(value);
   if (strcmp(redacted, value) != 0) {
      relay_log(RELAY_LOG_WARNING, "config",
                "--%s holds a password, which other users can read with ps; use %s or the "
                "config file instead",
                opt->name, opt->env);
   }
   bson_free(redacted);
}

static bool
load_flags(relay_config_t *cfg, const args_t *args, bson_error_t *error)
{
   for (size_t i = 0; i < args->n_flags; i++) {
      const flag_t *f = &args->flags[i];
      char *what = bson_strndup(f->flag, f->flag_len);
      /* Repeated --collection (--namespace) flags add up; the first replaces lower layers'
       * list. */
      bool append = false;
      for (size_t j = 0; j < i && f->opt->type == OPT_LIST; j++) {
         append = append || args->flags[j].opt == f->opt;
      }
      bool ok = _relay_opt_apply(cfg, f->opt, f->value, what, append, error);
      if (ok && (f->opt->type == OPT_URI_MONGODB || f->opt->type == OPT_URI_MQTT)) {
         warn_secret_in_flag(f->opt, f->value);
      }
      bson_free(what);
      if (!ok) {
         return false;
      }
   }
   return true;
}

static relay_config_action_t
load(relay_config_t *cfg, int argc, char **argv, bool mongodb_only, bson_error_t *error)
{
   args_t args = {.flags = bson_malloc0(sizeof(flag_t) * (size_t)(argc > 0 ? argc : 1))};
   relay_config_action_t action;

   relay_config_destroy(cfg);
   relay_config_init_defaults(cfg);
   cfg->mongodb_only = mongodb_only;
   action = scan_argv(&args, argc, argv, error);
   if (action != RELAY_CONFIG_RUN) {
      goto done;
   }
   if (!args.config_path) {
      args.config_path = getenv("OUTBOX_CONFIG");
   }
   if ((args.config_path && *args.config_path &&
        !_relay_config_load_file(cfg, args.config_path, error)) ||
       !load_env(cfg, error)) {
      action = RELAY_CONFIG_INVALID;
      goto done;
   }
   if (!load_flags(cfg, &args, error)) {
      action = RELAY_CONFIG_USAGE_ERROR;
      goto done;
   }
   if (!_relay_config_finish(cfg, error)) {
      action = RELAY_CONFIG_INVALID;
      goto done;
   }
   action = args.check ? RELAY_CONFIG_CHECK : RELAY_CONFIG_RUN;
done:
   bson_free(args.flags);
   return action;
}

relay_config_action_t
relay_config_load(relay_config_t *cfg, int argc, char **argv, bson_error_t *error)
{
   return load(cfg, argc, argv, false, error);
}

relay_config_action_t
relay_config_load_mongodb(relay_config_t *cfg, int argc, char **argv, bson_error_t *error)
{
   return load(cfg, argc, argv, true, error);
}
