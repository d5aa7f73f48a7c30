/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Keeping secrets out of what the relay prints (redact.h). The registry of secrets is under its
 * mutex; any thread.
 */
#include "util/redact.h"

#include <pthread.h>
#include <string.h>
#include <strings.h>

#include <bson/bson.h>

typedef struct {
   const char *p;
   size_t len;
} span_t;

/* A URI holds at most one password and a few secret query values. */
#define MAX_URI_SECRETS 8

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static char **registry; /* guarded by registry_mutex */
static size_t n_registry;

/* Query parameters whose values are secrets: any name or value mentioning one of these
 * (tlsCertificateKeyFilePassword, authMechanismProperties=AWS_SESSION_TOKEN:...). */
static bool
looks_secret(const char *s, size_t len)
{
   static const char *const words[] = {"password", "secret", "token"};
   for (size_t w = 0; w < 3; w++) {
      size_t wl = strlen(words[w]);
      for (size_t i = 0; i + wl <= len; i++) {
         if (!strncasecmp(s + i, words[w], wl)) {
            return true;
         }
      }
   }
   return false;
}

/* Where the user info of @uri ends: the last '@' before the query, so that an unescaped '@'
 * or '/' in a password still counts as part of it (over-redacting is the safe mistake). */
static const char *
userinfo_end(const char *authority, const char *end)
{
   const char *at = NULL;
   for (const char *p = authority; p < end; p++) {
      if (*p == '@') {
         at = p;
      }
   }
   return at;
}

/* Fills @out with the secrets of @uri; returns how many. */
static size_t
uri_secrets(const char *uri, span_t *out)
{
   size_t n = 0;
   const char *scheme_end = strstr(uri, "://");
   const char *authority = scheme_end ? scheme_end + 3 : uri;
   const char *query = strchr(authority, '?');
   const char *end = query ? query : authority + strlen(authority);
   const char *at = userinfo_end(authority, end);
   const char *colon = at ? memchr(authority, ':', (size_t)(at - authority)) : NULL;

   if (colon && colon + 1 < at) {
      out[n++] = (span_t){colon + 1, (size_t)(at - colon - 1)};
   }
   for (const char *p = query ? query + 1 : end; *p && n < MAX_URI_SECRETS;) {
      size_t len = strcspn(p, "&;");
      const char *eq = memchr(p, '=', len);
      if (eq && looks_secret(p, len) && eq + 1 < p + len) {
         out[n++] = (span_t){eq + 1, (size_t)(p + len - eq - 1)};
      }
      p += len;
      p += *p ? 1 : 0;
   }
   return n;
}

static int
hex_value(char c)
{
   return c >= '0' && c <= '9'   ? c - '0'
          : c >= 'a' && c <= 'f' ? c - 'a' + 10
          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                 : -1;
}

/* @s percent-decoded (a '%' not followed by two hex digits stays as it is). */
static char *
percent_decode(const char *s, size_t len)
{
   char *out = bson_malloc(len + 1);
   size_t o = 0;
   for (size_t i = 0; i < len; i++) {
      int hi = s[i] == '%' && i + 2 < len ? hex_value(s[i + 1]) : -1;
      int lo = hi >= 0 ? hex_value(s[i + 2]) : -1;
      if (lo >= 0) {
         out[o++] = (char)(hi * 16 + lo);
         i += 2;
      } else {
         out[o++] = s[i];
      }
   }
   out[o] = '\0';
   return out;
}

/* Replaces every occurrence of @secret in *@text by "***" (in place: *@text is replaced).
 * Returns true if anything was replaced. */
static bool
cut(char **text, const char *secret, size_t len)
{
   if (len == 0 || !strstr(*text, secret)) {
      return false;
   }
   bson_string_t *out = bson_string_new(NULL);
   const char *p = *text, *hit;
   while ((hit = strstr(p, secret))) {
      bson_string_append_printf(out, "%.*s***", (int)(hit - p), p);
      p = hit + len;
   }
   bson_string_append(out, p);
   bson_free(*text);
   *text = bson_string_free(out, false);
   return true;
}

/* mongoc 1.23 quotes the password as written when it holds a character that must be
 * percent-encoded: `Password "pa:ss" must not have unescaped chars. ...`. The password may
 * hold a quote, so the quote that ends it is the one before the last such sentence. */
static bool
cut_mongoc_password(char **text)
{
   static const char open[] = "Password \"";
   static const char close[] = "\" must not have unescaped chars";
   char *start = strstr(*text, open);
   char *last = NULL;
   if (!start) {
      return false;
   }
   start += strlen(open);
   for (char *p = start; (p = strstr(p, close)); p++) {
      last = p;
   }
   if (!last) {
      last = start + strlen(start); /* cut to the end rather than leak */
   }
   char *out = bson_strdup_printf("%.*s***%s", (int)(start - *text), *text, last);
   bson_free(*text);
   *text = out;
   return true;
}

/* Cuts @span and its percent-decoded form. */
static bool
cut_span(char **text, span_t span)
{
   bool changed = false;
   if (span.len >= RELAY_REDACT_MIN_LEN) {
      char *raw = bson_strndup(span.p, span.len);
      char *decoded = percent_decode(span.p, span.len);
      changed = cut(text, raw, span.len);
      changed = cut(text, decoded, strlen(decoded)) || changed;
      bson_free(raw);
      bson_free(decoded);
   }
   return changed;
}

static bool
cut_registered(char **text)
{
   bool changed = false;
   pthread_mutex_lock(&registry_mutex);
   for (size_t i = 0; i < n_registry; i++) {
      changed = cut(text, registry[i], strlen(registry[i])) || changed;
   }
   pthread_mutex_unlock(&registry_mutex);
   return changed;
}

char *
relay_redact_message(const char *message, const char *uri)
{
   span_t spans[MAX_URI_SECRETS];
   size_t n = uri ? uri_secrets(uri, spans) : 0;
   char *text;

   if (!message) {
      return NULL;
   }
   text = bson_strdup(message);
   cut_mongoc_password(&text);
   for (size_t i = 0; i < n; i++) {
      cut_span(&text, spans[i]);
   }
   cut_registered(&text);
   return text;
}

char *
relay_redact_known(const char *message)
{
   char *text = bson_strdup(message ? message : "");
   bool changed = cut_mongoc_password(&text);
   changed = cut_registered(&text) || changed;
   if (!changed) {
      bson_free(text);
      return NULL;
   }
   return text;
}

void
relay_redact_register(const char *secret)
{
   if (!secret || strlen(secret) < RELAY_REDACT_MIN_LEN) {
      return;
   }
   pthread_mutex_lock(&registry_mutex);
   bool known = false;
   for (size_t i = 0; i < n_registry && !known; i++) {
      known = !strcmp(registry[i], secret);
   }
   if (!known) {
      registry = bson_realloc(registry, (n_registry + 1) * sizeof *registry);
      registry[n_registry++] = bson_strdup(secret);
   }
   pthread_mutex_unlock(&registry_mutex);
}

void
relay_redact_register_uri(const char *uri)
{
   span_t spans[MAX_URI_SECRETS];
   size_t n = uri ? uri_secrets(uri, spans) : 0;
   for (size_t i = 0; i < n; i++) {
      char *raw = bson_strndup(spans[i].p, spans[i].len);
      char *decoded = percent_decode(spans[i].p, spans[i].len);
      relay_redact_register(raw);
      relay_redact_register(decoded);
      bson_free(raw);
      bson_free(decoded);
   }
}

void
relay_redact_forget_all(void)
{
   pthread_mutex_lock(&registry_mutex);
   for (size_t i = 0; i < n_registry; i++) {
      bson_free(registry[i]);
   }
   bson_free(registry);
   registry = NULL;
   n_registry = 0;
   pthread_mutex_unlock(&registry_mutex);
}

static void
redact_query(bson_string_t *out, const char *query)
{
   const char *p = query;
   while (*p) {
      size_t len = strcspn(p, "&;");
      const char *eq = memchr(p, '=', len);
      if (eq && looks_secret(p, len)) {
         bson_string_append_printf(out, "%.*s***", (int)(eq - p + 1), p);
      } else {
         bson_string_append_printf(out, "%.*s", (int)len, p);
      }
      p += len;
      if (*p) {
         bson_string_append_c(out, *p++);
      }
   }
}

char *
relay_redact_uri(const char *uri)
{
   if (!uri) {
      return NULL;
   }
   bson_string_t *out = bson_string_new(NULL);
   const char *scheme_end = strstr(uri, "://");
   const char *authority = scheme_end ? scheme_end + 3 : uri;
   const char *query = strchr(authority, '?');
   const char *end = query ? query : authority + strlen(authority);
   const char *at = userinfo_end(authority, end);

   bson_string_append_printf(out, "%.*s", (int)(authority - uri), uri);
   if (at) {
      const char *colon = memchr(authority, ':', (size_t)(at - authority));
      size_t user_len = (size_t)((colon ? colon : at) - authority);
      bson_string_append_printf(out, "%.*s%s@", (int)user_len, authority, colon ? ":***" : "");
      authority = at + 1;
   }
   bson_string_append_printf(out, "%.*s", (int)(end - authority), authority);
   if (query) {
      redact_query(out, query);
   }
   return bson_string_free(out, false);
}
