/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The JSON config file: read, parsed by libbson, checked as a whole (unknown and repeated
 * keys), then applied key by key through the same parsers as flags and variables.
 *
 * JSON allows what a config file should not: a key given twice (which one wins is a guess)
 * and "\u0000" inside a string (libbson keeps the NUL, and every C string cut the value
 * there: "name": "a\u0000b" became "a"). Both are refused. Numbers are quoted in messages as
 * they were written ("1234567.5", not libbson's double printed back as "1.23457e+06"), so
 * this file keeps the text of each top-level value next to the parsed document.
 *
 * Runs on the thread that loads the configuration (main at start-up, the signal thread on
 * SIGHUP); it touches only the relay_config_t it is given, never a running one.
 */
#include "config/config-private.h"
#include "util/error.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "util/redact.h"

#define MAX_CONFIG_FILE_BYTES (1024 * 1024)
/* More top-level keys than options means a repeat anyway: stop recording there. */
#define MAX_MEMBERS 128

typedef struct {
   const char *p;
   size_t len;
} span_t;

static char *
read_file(const char *path, size_t *len, unsigned *mode, bson_error_t *error)
{
   FILE *f = fopen(path, "rb");
   struct stat st;
   if (!f) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "config file '%s': %s", path,
                     strerror(errno));
      return NULL;
   }
   *mode = fstat(fileno(f), &st) == 0 ? (unsigned)st.st_mode : 0;
   char *data = bson_malloc(MAX_CONFIG_FILE_BYTES + 1);
   *len = fread(data, 1, MAX_CONFIG_FILE_BYTES + 1, f);
   bool failed = ferror(f);
   fclose(f);
   if (failed || *len > MAX_CONFIG_FILE_BYTES) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "config file '%s': %s", path,
                     failed ? "read error" : "larger than 1 MiB");
      bson_free(data);
      return NULL;
   }
   data[*len] = '\0';
   return data;
}

/* ---- the text of each top-level value ------------------------------------------------ */

static const char *
skip_ws(const char *p, const char *end)
{
   while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) {
      p++;
   }
   return p;
}

/* @p is at a '"': returns the position after the closing quote (or @end). */
static const char *
skip_string(const char *p, const char *end)
{
   for (p++; p < end && *p != '"'; p++) {
      if (*p == '\\') {
         p++;
      }
   }
   return p < end ? p + 1 : end;
}

static const char *
skip_value(const char *p, const char *end)
{
   int depth = 0;
   if (*p == '"') {
      return skip_string(p, end);
   }
   if (*p != '{' && *p != '[') {
      /* A number, true, false or null: until the next delimiter. */
      while (p < end && !strchr(",}] \t\r\n", *p)) {
         p++;
      }
      return p;
   }
   while (p < end) {
      if (*p == '"') {
         p = skip_string(p, end);
         continue;
      }
      depth += (*p == '{' || *p == '[') - (*p == '}' || *p == ']');
      p++;
      if (depth == 0) {
         return p;
      }
   }
   return end;
}

/* Records the text of each member's value of the JSON object in @data (already accepted by
 * libbson, so only its shape is followed). Returns the number of members, or -1 if the text
 * could not be followed (then no value is quoted from it). */
static int
scan_members(const char *data, size_t len, span_t *spans)
{
   const char *end = data + len;
   const char *p = skip_ws(data, end);
   int n = 0;
   if (p == end || *p != '{') {
      return -1;
   }
   p = skip_ws(p + 1, end);
   while (p < end && *p == '"' && n < MAX_MEMBERS) {
      p = skip_ws(skip_string(p, end), end);
      if (p == end || *p != ':') {
         return -1;
      }
      p = skip_ws(p + 1, end);
      if (p == end) {
         return -1;
      }
      const char *v = p;
      p = skip_value(p, end);
      spans[n++] = (span_t){v, (size_t)(p - v)};
      p = skip_ws(p, end);
      if (p < end && *p == ',') {
         p = skip_ws(p + 1, end);
      }
   }
   return n;
}

/* ---- values -------------------------------------------------------------------------- */

static bool
takes_string(relay_opt_type_t t)
{
   return t != OPT_INT && t != OPT_SIZE && t != OPT_BOOL && t != OPT_QOS && t != OPT_LIST &&
          t != OPT_MQTT_VERSION;
}

static bool
is_numeric(relay_opt_type_t t)
{
   return t == OPT_INT || t == OPT_SIZE || t == OPT_QOS || t == OPT_MQTT_VERSION;
}

/* The string at @it, or NULL with an error when it holds a NUL ("\u0000"). */
static const char *
string_without_nul(const bson_iter_t *it, const char *what, bson_error_t *error)
{
   uint32_t len;
   const char *s = bson_iter_utf8(it, &len);
   if (strlen(s) != len) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "%s: a string must not contain a NUL character (\\u0000)", what);
      return NULL;
   }
   return s;
}

static const char *
json_type_name(bson_type_t t)
{
   return t == BSON_TYPE_UTF8       ? "a string"
          : t == BSON_TYPE_BOOL     ? "a boolean"
          : t == BSON_TYPE_ARRAY    ? "an array"
          : t == BSON_TYPE_DOCUMENT ? "an object"
          : t == BSON_TYPE_NULL     ? "null"
                                    : "a number";
}

/* Converts a JSON value to the text the other sources would give, or fails with a message
 * saying which JSON type was expected. */
static char *
file_value_text(const relay_opt_t *opt, const bson_iter_t *it, const char *what,
                bson_error_t *error)
{
   bson_type_t t = bson_iter_type(it);
   bool numeric = is_numeric(opt->type);
   if (t == BSON_TYPE_UTF8 &&
       (takes_string(opt->type) || opt->type == OPT_LIST || opt->type == OPT_MQTT_VERSION)) {
      const char *s = string_without_nul(it, what, error);
      return s ? bson_strdup(s) : NULL;
   }
   if (t == BSON_TYPE_BOOL && opt->type == OPT_BOOL) {
      return bson_strdup(bson_iter_bool(it) ? "true" : "false");
   }
   if (numeric && (t == BSON_TYPE_INT32 || t == BSON_TYPE_INT64)) {
      return bson_strdup_printf("%" PRId64, bson_iter_as_int64(it));
   }
   if (numeric && t == BSON_TYPE_DOUBLE) {
      /* Let the option's parser reject fractions with its usual message. A double outside
       * int64's range (or NaN) is not cast, which would be undefined (found with the fuzz
       * targets). */
      double d = bson_iter_double(it);
      bool integral =
         d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(int64_t)d;
      return integral ? bson_strdup_printf("%" PRId64, (int64_t)d) : bson_strdup_printf("%g", d);
   }
   const char *expected = numeric                 ? "a number"
                          : opt->type == OPT_BOOL ? "true or false"
                          : opt->type == OPT_LIST ? "a string or an array of strings"
                                                  : "a string";
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: expected %s, got %s", what,
                  expected, json_type_name(t));
   return NULL;
}

/* The parsers quote the value they were given ("got '1.23457e+06'"): quote the number as
 * the file has it instead. */
static void
requote(bson_error_t *error, const char *text, const span_t *raw)
{
   char *quoted = bson_strdup_printf("got '%s'", text);
   char *at = strstr(error->message, quoted);
   if (at && raw->len < 64) {
      char *msg = bson_strdup_printf("%.*sgot '%.*s'%s", (int)(at - error->message), error->message,
                                     (int)raw->len, raw->p, at + strlen(quoted));
      bson_strncpy(error->message, msg, sizeof error->message);
      bson_free(msg);
   }
   bson_free(quoted);
}

static bool
apply_file_array(relay_config_t *cfg, const relay_opt_t *opt, bson_iter_t *it, const char *what,
                 bson_error_t *error)
{
   bson_iter_t child;
   bool first = true;
   bson_iter_recurse(it, &child);
   while (bson_iter_next(&child)) {
      const char *s = BSON_ITER_HOLDS_UTF8(&child) ? string_without_nul(&child, what, error) : NULL;
      if (!BSON_ITER_HOLDS_UTF8(&child)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "%s: expected an array of strings", what);
      }
      if (!s || !_relay_opt_apply(cfg, opt, s, what, !first, error)) {
         return false;
      }
      first = false;
   }
   return true;
}

static bool
apply_file_value(relay_config_t *cfg, const relay_opt_t *opt, bson_iter_t *it, const span_t *raw,
                 const char *what, bson_error_t *error)
{
   if (opt->type == OPT_LIST && BSON_ITER_HOLDS_ARRAY(it)) {
      return apply_file_array(cfg, opt, it, what, error);
   }
   char *text = file_value_text(opt, it, what, error);
   bool ok = text && _relay_opt_apply(cfg, opt, text, what, false, error);
   if (text && !ok && raw && is_numeric(opt->type) && !BSON_ITER_HOLDS_UTF8(it)) {
      requote(error, text, raw);
   }
   bson_free(text);
   return ok;
}

/* ---- the document as a whole --------------------------------------------------------- */

/* Fails listing every unknown and every repeated key at once: a file with several mistakes
 * is fixed in one go. "collection" and "collections" are the same key. */
static bool
check_file_keys(const bson_t *doc, const char *path, bson_error_t *error)
{
   bson_iter_t it;
   bson_string_t *unknown = bson_string_new(NULL);
   bson_string_t *repeated = bson_string_new(NULL);
   bool *seen = bson_malloc0(relay_n_opts * sizeof *seen);
   bson_iter_init(&it, doc);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const relay_opt_t *opt = _relay_opt_find(key, strlen(key));
      if (!opt) {
         bson_string_append_printf(unknown, "%s\"%s\"", unknown->len ? ", " : "", key);
      } else if (seen[opt - relay_opts]) {
         bson_string_append_printf(repeated, "%s\"%s\"", repeated->len ? ", " : "", key);
      } else {
         seen[opt - relay_opts] = true;
      }
   }
   bool ok = unknown->len == 0 && repeated->len == 0;
   if (unknown->len) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "config file '%s': unknown key %s (keys are the long option names, e.g. "
                     "\"mongodb-uri\")",
                     path, unknown->str);
   } else if (repeated->len) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "config file '%s': key %s given more than once (which one should win?)", path,
                     repeated->str);
   }
   bson_free(seen);
   bson_string_free(unknown, true);
   bson_string_free(repeated, true);
   return ok;
}

static bool
both_secrets(const bson_t *doc)
{
   return bson_has_field(doc, "mqtt-password") && bson_has_field(doc, "mqtt-password-file");
}

/* A password, or a connection string with one: the file deserves the care of a key file. */
static bool
holds_secret(const bson_t *doc)
{
   bson_iter_t it;
   if (bson_has_field(doc, "mqtt-password")) {
      return true;
   }
   if (bson_iter_init_find(&it, doc, "mongodb-uri") && BSON_ITER_HOLDS_UTF8(&it)) {
      const char *uri = bson_iter_utf8(&it, NULL);
      char *shown = relay_redact_uri(uri);
      bool secret = strcmp(shown, uri) != 0;
      bson_free(shown);
      return secret;
   }
   return false;
}

static bson_t *
parse(const char *data, size_t len, const char *path, bson_error_t *error)
{
   bson_error_t json_error;
   const char *start = data + strspn(data, " \t\r\n");
   bson_t *doc =
      *start == '{' ? bson_new_from_json((const uint8_t *)data, (ssize_t)len, &json_error) : NULL;
   if (!doc) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "config file '%s': %s", path,
                     *start == '{' ? json_error.message : "expected a JSON object ({...})");
   }
   return doc;
}

static bool
apply_members(relay_config_t *cfg, const bson_t *doc, const span_t *spans, int n_spans,
              const char *path, bson_error_t *error)
{
   bson_iter_t it;
   bool ok = bson_iter_init(&it, doc);
   /* Members come out of libbson in the file's order, so the i-th value is the i-th span. */
   bool have_spans = n_spans >= 0 && (uint32_t)n_spans == bson_count_keys(doc);
   for (int i = 0; ok && bson_iter_next(&it); i++) {
      const char *key = bson_iter_key(&it);
      char *what = bson_strdup_printf("config file '%s': \"%s\"", path, key);
      ok = apply_file_value(cfg, _relay_opt_find(key, strlen(key)), &it,
                            have_spans ? &spans[i] : NULL, what, error);
      bson_free(what);
   }
   return ok;
}

bool
_relay_config_load_file(relay_config_t *cfg, const char *path, bson_error_t *error)
{
   size_t len = 0;
   unsigned mode = 0;
   span_t *spans = NULL;
   char *data = read_file(path, &len, &mode, error);
   bson_t *doc = data ? parse(data, len, path, error) : NULL;
   bool ok = doc && check_file_keys(doc, path, error);
   if (ok && both_secrets(doc)) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "config file '%s': give \"mqtt-password\" or \"mqtt-password-file\", not both",
                     path);
      ok = false;
   }
   if (ok) {
      spans = bson_malloc(MAX_MEMBERS * sizeof *spans);
      ok = apply_members(cfg, doc, spans, scan_members(data, len, spans), path, error);
   }
   if (ok) {
      cfg->config_file = bson_strdup(path);
      if (holds_secret(doc)) {
         _relay_warn_readable("config file", path, mode);
      }
   }
   bson_free(spans);
   bson_destroy(doc);
   bson_free(data);
   return ok;
}
