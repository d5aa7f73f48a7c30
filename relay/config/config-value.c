/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing and validating one option value, whatever its source. Messages name the source
 * (flag, variable or config-file key), say what was expected and quote what was given,
 * except for secrets, which are never echoed.
 *
 * Runs on the thread that loads the configuration (main at start-up, the signal thread on
 * SIGHUP); it touches only the relay_config_t it is given, never a running one.
 */
#include "config/config-private.h"
#include "util/error.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "config/namespace.h"
#include "util/redact.h"

#define FIELD(cfg, opt, type) ((type *)((char *)(cfg) + (opt)->offset))
#define CFIELD(cfg, opt, type) ((const type *)((const char *)(cfg) + (opt)->offset))

static void
set_string(relay_config_t *cfg, const relay_opt_t *opt, const char *text)
{
   char **field = FIELD(cfg, opt, char *);
   bson_free(*field);
   *field = bson_strdup(text);
}

static bool
parse_ll(const char *text, long long *out)
{
   char *end = NULL;
   if (!*text || strchr(" \t\n", text[0])) {
      return false;
   }
   errno = 0;
   long long v = strtoll(text, &end, 10);
   if (errno || *end) {
      return false;
   }
   *out = v;
   return true;
}

static bool
parse_int(relay_config_t *cfg, const relay_opt_t *opt, const char *text, const char *what,
          bson_error_t *error)
{
   long long v;
   if (!parse_ll(text, &v) || v < opt->min || v > opt->max) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: expected an integer from %lld to %lld, got '%s'", what, opt->min,
                     opt->max, text);
      return false;
   }
   if (opt->type == OPT_SIZE) {
      *FIELD(cfg, opt, size_t) = (size_t)v;
   } else {
      *FIELD(cfg, opt, int) = (int)v;
   }
   return true;
}

static bool
parse_bool(const char *text, bool *out)
{
   static const char *const yes[] = {"true", "1", "yes", "on"};
   static const char *const no[] = {"false", "0", "no", "off"};
   for (size_t i = 0; i < 4; i++) {
      if (!strcasecmp(text, yes[i]) || !strcasecmp(text, no[i])) {
         *out = !strcasecmp(text, yes[i]);
         return true;
      }
   }
   return false;
}

/* MongoDB's naming rules, checked here so a typo fails at start-up with a clear message
 * instead of as a server error on the first write. */
static bool
check_name(const relay_opt_t *opt, const char *name, const char *what, bson_error_t *error)
{
   const char *bad = NULL;
   if (!*name) {
      bad = "must not be empty";
   } else if (opt->min == RELAY_NAME_DATABASE && strpbrk(name, "/\\. \"$")) {
      bad = "a database name cannot contain any of / \\ . space \" $";
   } else if (opt->min == RELAY_NAME_COLLECTION && strchr(name, '$')) {
      bad = "a collection name cannot contain $";
   } else if (opt->min == RELAY_NAME_COLLECTION && !strncmp(name, "system.", 7)) {
      bad = "system collections cannot be watched";
   } else if (opt->min == RELAY_NAME_FIELD && (strchr(name, '.') || name[0] == '$')) {
      bad = "a field name cannot contain . or start with $";
   } else if (opt->min == RELAY_NAME_NAMESPACE) {
      relay_nspat_t pat;
      bool ok = relay_nspat_parse(name, what, &pat, error);
      relay_nspat_clear(&pat);
      return ok;
   }
   if (bad) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: %s, got '%s'", what, bad,
                     name);
      return false;
   }
   return true;
}

static bool
has_item(char **items, size_t n, const char *name)
{
   for (size_t i = 0; i < n; i++) {
      if (!strcmp(items[i], name)) {
         return true;
      }
   }
   return false;
}

static bool
parse_list(relay_config_t *cfg, const relay_opt_t *opt, const char *text, const char *what,
           bool append, bson_error_t *error)
{
   char ***items = RELAY_OPT_ITEMS(cfg, opt);
   size_t *n = RELAY_OPT_COUNT(cfg, opt);
   if (!append) {
      bool collections = *items == cfg->collections;
      if (collections) {
         /* Kept, not freed: the narrowed config still owns them (replaced_collections). */
         cfg->replaced_collections = bson_realloc(
            cfg->replaced_collections, (cfg->n_replaced_collections + *n + 1) * sizeof(char *));
      }
      for (size_t i = 0; i < *n; i++) {
         if (collections) {
            cfg->replaced_collections[cfg->n_replaced_collections++] = (*items)[i];
         } else {
            bson_free((*items)[i]);
         }
      }
      *n = 0;
   }
   const char *p = text;
   for (;;) {
      size_t len = strcspn(p, ",");
      char *name = bson_strndup(p, len);
      /* Spaces around commas are forgiven: "a, b" is what people type. */
      char *start = name + strspn(name, " \t");
      char *end = start + strlen(start);
      while (end > start && (end[-1] == ' ' || end[-1] == '\t')) {
         *--end = '\0';
      }
      bool ok = check_name(opt, start, what, error);
      if (ok && has_item(*items, *n, start)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: %s '%s' given twice",
                        what, opt->min == RELAY_NAME_NAMESPACE ? "namespace" : "collection", start);
         ok = false;
      }
      if (ok) {
         *items = bson_realloc(*items, (*n + 1) * sizeof(char *));
         (*items)[(*n)++] = bson_strdup(start);
      }
      bson_free(name);
      if (!ok) {
         return false;
      }
      if (p[len] == '\0') {
         return true;
      }
      p += len + 1;
   }
}

static bool
check_template(const relay_opt_t *opt, const char *text, const char *what, bson_error_t *error)
{
   bool topic = !strcmp(opt->name, "topic");
   const char *known = "{db}, {collection}, {id}, {type}, {partition}";
   if (!*text) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: must not be empty", what);
      return false;
   }
   if (topic && strpbrk(text, "+#")) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: + and # are MQTT wildcards and cannot be published to, got '%s'", what,
                     text);
      return false;
   }
   for (const char *p = text; (p = strpbrk(p, "{}")); p++) {
      const char *close = *p == '{' ? strchr(p, '}') : NULL;
      if (!close) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: unbalanced '%c' in '%s' (placeholders: %s)", what, *p, text, known);
         return false;
      }
      size_t len = (size_t)(close - p + 1);
      bool ok = (len == 4 && !strncmp(p, "{db}", 4)) ||
                (len == 12 && !strncmp(p, "{collection}", 12)) ||
                (len == 4 && !strncmp(p, "{id}", 4)) || (len == 6 && !strncmp(p, "{type}", 6)) ||
                (len == 11 && !strncmp(p, "{partition}", 11));
      if (!ok) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: unknown placeholder '%.*s' (known: %s)", what, (int)len, p, known);
         return false;
      }
      p = close;
   }
   return true;
}

static bool
check_mongodb_uri(const char *text, const char *what, bson_error_t *error)
{
   bson_error_t uri_error;
   mongoc_uri_t *uri = mongoc_uri_new_with_error(text, &uri_error);
   if (!uri) {
      /* The URI itself is not quoted, and mongoc's message may quote its password
       * (`Password "..." must not have unescaped chars`): cut it out. */
      char *shown = relay_redact_message(uri_error.message, text);
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: not a valid MongoDB connection string: %s", what, shown);
      bson_free(shown);
      return false;
   }
   mongoc_uri_destroy(uri);
   return true;
}

/* paho takes "user:pw@" for part of the host name (and prints it in its traces), so
 * credentials in the URI are refused, naming the options that carry them. */
static bool
check_mqtt_userinfo(const char *text, const char *authority, const char *what, bson_error_t *error)
{
   size_t len = strcspn(authority, "/?#");
   if (!memchr(authority, '@', len)) {
      return true;
   }
   char *shown = relay_redact_uri(text);
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                  "%s: a user name or password in the MQTT URI is not supported; give them "
                  "with --mqtt-username and --mqtt-password-file (or OUTBOX_MQTT_PASSWORD, or "
                  "\"mqtt-password\" in the config file), got '%s'",
                  what, shown);
   bson_free(shown);
   return false;
}

bool
_relay_mqtt_scheme(const char *uri, size_t *len)
{
   static const char *const schemes[] = {"tcp://",   "ssl://", "mqtt://",
                                         "mqtts://", "ws://",  "wss://"};
   for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
      size_t n = strlen(schemes[i]);
      if (!strncasecmp(uri, schemes[i], n)) {
         *len = n;
         return true;
      }
   }
   return false;
}

static bool
check_mqtt_uri(const char *text, const char *what, bson_error_t *error)
{
   size_t n;
   if (_relay_mqtt_scheme(text, &n) && text[n] && text[n] != ':' && text[n] != '/') {
      return check_mqtt_userinfo(text, text + n, what, error) &&
             _relay_mqtt_uri_check_address(text, n, what, error);
   }
   char *shown = relay_redact_uri(text);
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                  "%s: expected tcp://, ssl://, mqtt://, mqtts://, ws:// or wss:// and a host, "
                  "got '%s'",
                  what, shown);
   bson_free(shown);
   return false;
}

static bool
check_listen(const char *text, const char *what, bson_error_t *error)
{
   if (!*text || !strcasecmp(text, "off")) {
      return true;
   }
   const char *colon = strrchr(text, ':');
   long long port;
   bool host_ok = colon && colon > text && (text[0] != '[' || colon[-1] == ']');
   if (!host_ok || !parse_ll(colon + 1, &port) || port < 0 || port > 65535) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: expected HOST:PORT (e.g. 127.0.0.1:9464, [::1]:9464) or 'off', got '%s'",
                     what, text);
      return false;
   }
   return true;
}

static bool
check_file(const char *text, const char *what, bson_error_t *error)
{
   if (access(text, R_OK) != 0) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: cannot read '%s': %s",
                     what, text, strerror(errno));
      return false;
   }
   return true;
}

void
_relay_warn_readable(const char *what, const char *path, unsigned mode)
{
   if (mode & S_IROTH) {
      relay_log(RELAY_LOG_WARNING, "config",
                "%s '%s' is readable by other users (mode %04o) and holds a password: "
                "chmod o-r '%s'",
                what, path, mode & 07777u, path);
   }
}

char *
_relay_read_secret_file(const char *path, const char *what, bson_error_t *error)
{
   FILE *f = fopen(path, "r");
   struct stat st;
   if (!f) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: cannot read '%s': %s",
                     what, path, strerror(errno));
      return NULL;
   }
   if (fstat(fileno(f), &st) == 0) {
      char *file_what = bson_strdup_printf("%s: the file", what);
      _relay_warn_readable(file_what, path, (unsigned)st.st_mode);
      bson_free(file_what);
   }
   char buf[4097];
   size_t n = fread(buf, 1, sizeof buf - 1, f);
   bool too_long = n == sizeof buf - 1 && fgetc(f) != EOF;
   fclose(f);
   if (too_long) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: '%s' is longer than 4096 bytes", what, path);
      return NULL;
   }
   buf[n] = '\0';
   /* Files written by editors and `echo` end in a newline that is not part of the secret. */
   if (n > 0 && buf[n - 1] == '\n') {
      buf[--n] = '\0';
      if (n > 0 && buf[n - 1] == '\r') {
         buf[--n] = '\0';
      }
   }
   if (strlen(buf) != n) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: '%s' contains a NUL byte",
                     what, path);
      return NULL;
   }
   return bson_strdup(buf);
}

/* The two secrets a file may hold: each OPT_SECRET has an OPT_SECRET_FILE that fills it. */
static char **
secret_of(relay_config_t *cfg, const relay_opt_t *opt, char ***file)
{
   bool key = opt->offset == offsetof(relay_config_t, mqtt_key_password) ||
              opt->offset == offsetof(relay_config_t, mqtt_key_password_file);
   *file = key ? &cfg->mqtt_key_password_file : &cfg->mqtt_password_file;
   return key ? &cfg->mqtt_key_password : &cfg->mqtt_password;
}

static bool
apply_secret_file(relay_config_t *cfg, const relay_opt_t *opt, const char *text, const char *what,
                  bson_error_t *error)
{
   char **file;
   char **secret = secret_of(cfg, opt, &file);
   char *value = _relay_read_secret_file(text, what, error);
   if (!value) {
      return false;
   }
   bson_free(*secret);
   *secret = value;
   set_string(cfg, opt, text);
   return true;
}

static bool
apply_enum(relay_config_t *cfg, const relay_opt_t *opt, const char *text, const char *what,
           bson_error_t *error)
{
   bool ok = false;
   const char *expected = "";
   if (opt->type == OPT_LEVEL) {
      relay_log_level_t level;
      expected = "error, warning, info, debug or trace";
      if ((ok = relay_log_level_parse(text, &level))) {
         *FIELD(cfg, opt, relay_log_level_t) = level;
      }
   } else if (opt->type == OPT_FORMAT) {
      relay_log_format_t format;
      expected = "text or json";
      if ((ok = relay_log_format_parse(text, &format))) {
         *FIELD(cfg, opt, relay_log_format_t) = format;
      }
   } else if (opt->type == OPT_PAYLOAD) {
      expected = "structured or binary";
      ok = !strcasecmp(text, "structured") || !strcasecmp(text, "binary");
      if (ok) {
         *FIELD(cfg, opt, relay_payload_mode_t) =
            strcasecmp(text, "binary") ? RELAY_PAYLOAD_STRUCTURED : RELAY_PAYLOAD_BINARY;
      }
   } else if (opt->type == OPT_QOS) {
      expected = "0, 1 or 2";
      ok = strlen(text) == 1 && text[0] >= '0' && text[0] <= '2';
      if (ok) {
         *FIELD(cfg, opt, int) = text[0] - '0';
      }
   } else if (opt->type == OPT_MQTT_VERSION) {
      expected = "5 (MQTT 5) or 4 (MQTT 3.1.1)";
      int v = !strcmp(text, "5") || !strcmp(text, "5.0")     ? 5
              : !strcmp(text, "4") || !strcmp(text, "3.1.1") ? 4
                                                             : 0;
      if ((ok = v != 0)) {
         *FIELD(cfg, opt, int) = v;
      }
   }
   if (!ok) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: expected %s, got '%s'",
                     what, expected, text);
   }
   return ok;
}

static bool
check_string(const relay_opt_t *opt, const char *text, const char *what, bson_error_t *error)
{
   switch (opt->type) {
   case OPT_STRING:
   case OPT_SECRET:
      if ((long long)strlen(text) < opt->min) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: must not be empty",
                        what);
         return false;
      }
      return true;
   case OPT_URI_MONGODB:
      return check_mongodb_uri(text, what, error);
   case OPT_URI_MQTT:
      return check_mqtt_uri(text, what, error);
   case OPT_TEMPLATE:
      return check_template(opt, text, what, error);
   case OPT_NAME:
      return check_name(opt, text, what, error);
   case OPT_FILE:
      return check_file(text, what, error);
   case OPT_LISTEN:
      return check_listen(text, what, error);
   default:
      return true;
   }
}

/* Schemes are case-insensitive (RFC 3986), paho's are not: "SSL://" passed the check and
 * then failed at start, so the stored URI gets its scheme in lower case. */
static void
lower_scheme(char *uri)
{
   size_t n;
   if (_relay_mqtt_scheme(uri, &n)) {
      for (size_t i = 0; i < n; i++) {
         uri[i] = (char)tolower((unsigned char)uri[i]);
      }
   }
}

bool
_relay_opt_apply(relay_config_t *cfg, const relay_opt_t *opt, const char *text, const char *what,
                 bool append, bson_error_t *error)
{
   switch (opt->type) {
   case OPT_INT:
   case OPT_SIZE:
      return parse_int(cfg, opt, text, what, error);
   case OPT_BOOL:
      if (!parse_bool(text, FIELD(cfg, opt, bool))) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: expected true or false, got '%s'", what, text);
         return false;
      }
      return true;
   case OPT_LIST:
      return parse_list(cfg, opt, text, what, append, error);
   case OPT_LEVEL:
   case OPT_FORMAT:
   case OPT_PAYLOAD:
   case OPT_QOS:
   case OPT_MQTT_VERSION:
      return apply_enum(cfg, opt, text, what, error);
   case OPT_SECRET_FILE:
      return apply_secret_file(cfg, opt, text, what, error);
   case OPT_PROPS:
      return _relay_user_props_parse(text, FIELD(cfg, opt, unsigned), what, error);
   case OPT_SECRET:
      if (!check_string(opt, text, what, error)) {
         return false;
      }
      set_string(cfg, opt, text);
      /* A password given directly replaces one read from a file, so the dump never names a
       * file that is not where the password came from. */
      char **file;
      secret_of(cfg, opt, &file);
      bson_free(*file);
      *file = NULL;
      return true;
   default:
      if (!check_string(opt, text, what, error)) {
         return false;
      }
      set_string(cfg, opt, text);
      if (opt->type == OPT_URI_MQTT) {
         lower_scheme(*FIELD(cfg, opt, char *));
      }
      return true;
   }
}

static char *
join_list(const relay_config_t *cfg, const relay_opt_t *opt)
{
   char **const items = *RELAY_OPT_CITEMS(cfg, opt);
   size_t n = *RELAY_OPT_CCOUNT(cfg, opt);
   if (n == 0) {
      return NULL;
   }
   bson_string_t *s = bson_string_new(NULL);
   for (size_t i = 0; i < n; i++) {
      bson_string_append_printf(s, "%s%s", i ? "," : "", items[i]);
   }
   return bson_string_free(s, false);
}

char *
_relay_opt_value_text(const relay_config_t *cfg, const relay_opt_t *opt)
{
   switch (opt->type) {
   case OPT_INT:
   case OPT_QOS:
   case OPT_MQTT_VERSION:
      return bson_strdup_printf("%d", *CFIELD(cfg, opt, int));
   case OPT_SIZE:
      return bson_strdup_printf("%zu", *CFIELD(cfg, opt, size_t));
   case OPT_BOOL:
      return bson_strdup(*CFIELD(cfg, opt, bool) ? "true" : "false");
   case OPT_LIST:
      return join_list(cfg, opt);
   case OPT_LEVEL:
      return bson_strdup(relay_log_level_name(*CFIELD(cfg, opt, relay_log_level_t)));
   case OPT_FORMAT:
      return bson_strdup(relay_log_format_name(*CFIELD(cfg, opt, relay_log_format_t)));
   case OPT_PAYLOAD:
      return bson_strdup(
         *CFIELD(cfg, opt, relay_payload_mode_t) == RELAY_PAYLOAD_BINARY ? "binary" : "structured");
   case OPT_PROPS:
      return _relay_user_props_text(*CFIELD(cfg, opt, unsigned));
   case OPT_SECRET:
      return *CFIELD(cfg, opt, char *) ? bson_strdup("***") : NULL;
   case OPT_URI_MONGODB:
   case OPT_URI_MQTT:
      return relay_redact_uri(*CFIELD(cfg, opt, char *));
   default: {
      const char *s = *CFIELD(cfg, opt, char *);
      return s ? bson_strdup(s) : NULL;
   }
   }
}

static bool
same_string(const char *a, const char *b)
{
   return a == b || (a && b && !strcmp(a, b));
}

bool
_relay_opt_equal(const relay_config_t *a, const relay_config_t *b, const relay_opt_t *opt)
{
   switch (opt->type) {
   case OPT_INT:
   case OPT_QOS:
   case OPT_MQTT_VERSION:
      return *CFIELD(a, opt, int) == *CFIELD(b, opt, int);
   case OPT_SIZE:
      return *CFIELD(a, opt, size_t) == *CFIELD(b, opt, size_t);
   case OPT_BOOL:
      return *CFIELD(a, opt, bool) == *CFIELD(b, opt, bool);
   case OPT_LEVEL:
      return *CFIELD(a, opt, relay_log_level_t) == *CFIELD(b, opt, relay_log_level_t);
   case OPT_FORMAT:
      return *CFIELD(a, opt, relay_log_format_t) == *CFIELD(b, opt, relay_log_format_t);
   case OPT_PAYLOAD:
      return *CFIELD(a, opt, relay_payload_mode_t) == *CFIELD(b, opt, relay_payload_mode_t);
   case OPT_PROPS:
      return *CFIELD(a, opt, unsigned) == *CFIELD(b, opt, unsigned);
   case OPT_LIST:
      if (*RELAY_OPT_CCOUNT(a, opt) != *RELAY_OPT_CCOUNT(b, opt)) {
         return false;
      }
      for (size_t i = 0; i < *RELAY_OPT_CCOUNT(a, opt); i++) {
         if (strcmp((*RELAY_OPT_CITEMS(a, opt))[i], (*RELAY_OPT_CITEMS(b, opt))[i])) {
            return false;
         }
      }
      return true;
   default: /* every string kind, secrets and URIs in full (the dump redacts them) */
      return same_string(*CFIELD(a, opt, char *), *CFIELD(b, opt, char *));
   }
}
