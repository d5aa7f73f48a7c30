/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The endpoints. Each checks everything it can before touching storage, so bad input writes
 * nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http-private.h"
#include "representation.h"

#define PAGE_DEFAULT 20
#define PAGE_MAX 100

static int64_t
now_ms(void)
{
   struct timespec ts;

   clock_gettime(CLOCK_REALTIME, &ts);
   return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static enum MHD_Result
bad_request(call_t *call, const contact_error_t *why)
{
   char msg[400];

   if (why->field[0])
      snprintf(msg, sizeof msg, "%s %s", why->field, why->message);
   else
      snprintf(msg, sizeof msg, "%s", why->message);
   return http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", why->field, msg, 0);
}

static enum MHD_Result
bad_id(call_t *call)
{
   return http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-id", NULL,
                    "a contact id is 24 hexadecimal characters", 0);
}

/* `type`, optionally with parameters such as charset. */
static bool
content_type_is(call_t *call, const char *type)
{
   const char *ct =
       MHD_lookup_connection_value(call->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
   size_t n = strlen(type);

   return ct && !strncasecmp(ct, type, n) && (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

static bool
json_content_type(call_t *call)
{
   return content_type_is(call, "application/json");
}

static enum MHD_Result
unsupported_type(call_t *call)
{
   return http_fail(call, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", NULL,
                    "send the contact as JSON with Content-Type: application/json", 0);
}

static enum MHD_Result
respond_contact(call_t *call, unsigned status, const contact_t *c, int64_t version,
                const char *location)
{
   bson_string_t *out = bson_string_new(NULL);

   representation_write(c, out);
   bson_string_append_c(out, '\n');
   return http_respond(call, status, out, version, location);
}

/* ---- preconditions ------------------------------------------------------------------------ */

typedef enum { IF_MATCH_MISSING, IF_MATCH_BAD, IF_MATCH_ANY, IF_MATCH_VERSION } if_match_t;

/* Reads If-Match: "*" or one strong entity tag "N". A weak tag (W/"N") never matches under
 * If-Match's strong comparison, so it is reported as version 0. */
static if_match_t
read_if_match(call_t *call, int64_t *version)
{
   const char *v = MHD_lookup_connection_value(call->conn, MHD_HEADER_KIND, "If-Match");
   char *end;

   *version = 0;
   if (!v)
      return IF_MATCH_MISSING;
   while (*v == ' ')
      v++;
   if (!strcmp(v, "*"))
      return IF_MATCH_ANY;
   if (!strncmp(v, "W/\"", 3))
      return IF_MATCH_VERSION;
   if (v[0] != '"' || !isdigit((unsigned char)v[1]))
      return IF_MATCH_BAD;
   errno = 0;
   *version = strtoll(v + 1, &end, 10);
   if (errno || *version <= 0 || end[0] != '"' || end[1 + strspn(end + 1, " ")] != '\0')
      return IF_MATCH_BAD;
   return IF_MATCH_VERSION;
}

/* Checks If-Match for PUT and DELETE; returns true to go on, false after answering. */
static bool
precondition(call_t *call, if_match_t *kind, int64_t *expected, enum MHD_Result *ret)
{
   *kind = read_if_match(call, expected);
   if (*kind == IF_MATCH_MISSING) {
      *ret = http_fail(call, MHD_HTTP_PRECONDITION_REQUIRED, "precondition-required", NULL,
                       "send If-Match with the ETag of your last GET, e.g. If-Match: \"1\"", 0);
      return false;
   }
   if (*kind == IF_MATCH_BAD) {
      *ret = http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", "If-Match",
                       "If-Match must be an entity tag such as \"3\", or *", 0);
      return false;
   }
   return true;
}

/* Reads If-Match for PUT, PATCH and DELETE after checking the id; returns true to go on,
 * false after answering. */
static bool
begin_change(call_t *call, const char *id, if_match_t *kind, int64_t *expected,
             enum MHD_Result *ret)
{
   if (!repository_id_valid(id)) {
      *ret = bad_id(call);
      return false;
   }
   return precondition(call, kind, expected, ret);
}

/* repository_get() for a contact that is not deleted: a deleted one is REPO_NOT_FOUND. */
static repo_status_t
get_live(call_t *call, const char *id, contact_t **c, int64_t *version, bson_error_t *error)
{
   repo_status_t st = repository_get(call->repo, id, c, version, error);

   if (st == REPO_OK && contact_is_deleted(*c))
      st = REPO_NOT_FOUND;
   return st;
}

/* Stores a changed contact; returns true, or false after answering. *version is updated. */
static bool
save(call_t *call, contact_t *c, int64_t *version, enum MHD_Result *ret)
{
   bson_error_t error;
   repo_status_t st = repository_save(call->repo, c, version, &error);

   if (st != REPO_OK)
      *ret = http_fail_repo(call, st, *version, &error);
   return st == REPO_OK;
}

/* Loads a live contact and checks the precondition against its version. */
static bool
load_for_change(call_t *call, const char *id, if_match_t kind, int64_t expected, contact_t **c,
                int64_t *version, enum MHD_Result *ret)
{
   bson_error_t error;
   repo_status_t st = get_live(call, id, c, version, &error);

   if (st != REPO_OK) {
      contact_destroy(*c);
      *ret = http_fail_repo(call, st, 0, &error);
      return false;
   }
   if (kind == IF_MATCH_VERSION && expected != *version) {
      contact_destroy(*c);
      *ret = http_fail_repo(call, REPO_CONFLICT, *version, &error);
      return false;
   }
   return true;
}

/* ---- endpoints ---------------------------------------------------------------------------- */

enum MHD_Result
handle_create(call_t *call)
{
   contact_input_t in;
   contact_error_t why;
   bson_error_t error;
   bson_t holder;
   char id[25], location[64];
   int64_t version;
   contact_t *c = NULL;
   enum MHD_Result ret;
   repo_status_t st;

   if (!json_content_type(call))
      return unsupported_type(call);
   repository_new_id(id);
   if (representation_parse(call->body, call->len, &holder, &in, &why))
      c = contact_create(id, &in, now_ms(), &why);
   bson_destroy(&holder); /* the contact copied what it needs */
   if (!c)
      return bad_request(call, &why);
   st = repository_add(call->repo, c, &version, &error);
   snprintf(location, sizeof location, "/contacts/%s", id);
   ret = st == REPO_OK ? respond_contact(call, MHD_HTTP_CREATED, c, version, location)
                       : http_fail_repo(call, st, 0, &error);
   contact_destroy(c);
   return ret;
}

enum MHD_Result
handle_get(call_t *call, const char *id)
{
   bson_error_t error;
   int64_t version;
   contact_t *c;
   enum MHD_Result ret;
   repo_status_t st;

   if (!repository_id_valid(id))
      return bad_id(call);
   st = get_live(call, id, &c, &version, &error);
   ret = st == REPO_OK ? respond_contact(call, MHD_HTTP_OK, c, version, NULL)
                       : http_fail_repo(call, st, 0, &error);
   contact_destroy(c);
   return ret;
}

enum MHD_Result
handle_put(call_t *call, const char *id)
{
   contact_input_t in;
   contact_error_t why;
   bson_t holder;
   int64_t expected, version;
   contact_t *c;
   if_match_t kind;
   enum MHD_Result ret;

   if (!begin_change(call, id, &kind, &expected, &ret))
      return ret;
   if (!json_content_type(call))
      return unsupported_type(call);
   if (!representation_parse(call->body, call->len, &holder, &in, &why)) {
      bson_destroy(&holder);
      return bad_request(call, &why);
   }
   if (!load_for_change(call, id, kind, expected, &c, &version, &ret)) {
      bson_destroy(&holder);
      return ret;
   }
   if (!contact_replace(c, &in, &why))
      ret = bad_request(call, &why);
   else if (save(call, c, &version, &ret))
      ret = respond_contact(call, MHD_HTTP_OK, c, version, NULL);
   bson_destroy(&holder);
   contact_destroy(c);
   return ret;
}

/* Applies the patched representation to a loaded contact and stores it. */
static enum MHD_Result
patch_and_save(call_t *call, contact_t *c, int64_t version, const bson_t *patch)
{
   bson_t current = BSON_INITIALIZER, merged;
   contact_input_t in;
   contact_error_t why;
   enum MHD_Result ret;

   contact_append_fields(c,
                         CONTACT_CHANGED_NAME | CONTACT_CHANGED_DESCRIPTION |
                             CONTACT_CHANGED_EMAIL | CONTACT_CHANGED_COMPANY,
                         &current);
   if (!representation_merge_patch(&current, patch, &merged, &why) ||
       !representation_read(&merged, &in, &why) || !contact_replace(c, &in, &why))
      ret = bad_request(call, &why);
   else if (save(call, c, &version, &ret))
      ret = respond_contact(call, MHD_HTTP_OK, c, version, NULL);
   bson_destroy(&merged);
   bson_destroy(&current);
   return ret;
}

enum MHD_Result
handle_patch(call_t *call, const char *id)
{
   contact_error_t why;
   int64_t expected, version;
   contact_t *c;
   if_match_t kind;
   enum MHD_Result ret;
   bson_t patch;

   if (!begin_change(call, id, &kind, &expected, &ret))
      return ret;
   if (!content_type_is(call, "application/merge-patch+json") && !json_content_type(call))
      return http_fail(call, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", NULL,
                       "send a JSON merge patch with Content-Type: "
                       "application/merge-patch+json",
                       0);
   if (!representation_parse_json(call->body, call->len, &patch, &why)) {
      bson_destroy(&patch);
      return bad_request(call, &why);
   }
   if (load_for_change(call, id, kind, expected, &c, &version, &ret)) {
      ret = patch_and_save(call, c, version, &patch);
      contact_destroy(c);
   }
   bson_destroy(&patch);
   return ret;
}

enum MHD_Result
handle_delete(call_t *call, const char *id)
{
   contact_error_t why;
   int64_t expected, version;
   contact_t *c;
   if_match_t kind;
   enum MHD_Result ret;

   if (!begin_change(call, id, &kind, &expected, &ret))
      return ret;
   if (!load_for_change(call, id, kind, expected, &c, &version, &ret))
      return ret;
   if (!contact_delete(c, &why))
      ret = http_fail(call, MHD_HTTP_NOT_FOUND, "not-found", NULL, why.message, 0);
   else if (save(call, c, &version, &ret))
      ret = http_respond(call, MHD_HTTP_NO_CONTENT, NULL, 0, NULL);
   contact_destroy(c);
   return ret;
}

/* ---- listing ------------------------------------------------------------------------------ */

typedef struct {
   const char *unknown;
} args_check_t;

static enum MHD_Result
check_arg(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
   args_check_t *check = cls;

   if (strcmp(key, "pageSize") != 0 && strcmp(key, "continuationToken") != 0) {
      check->unknown = key;
      return MHD_NO;
   }
   return MHD_YES;
}

/* Reads pageSize and continuationToken; answers 400 itself and returns false when bad. */
static bool
list_args(call_t *call, int *size, const char **after, enum MHD_Result *ret)
{
   const char *ps = MHD_lookup_connection_value(call->conn, MHD_GET_ARGUMENT_KIND, "pageSize");
   args_check_t check = {NULL};
   char msg[200];
   char *end;
   long n;

   MHD_get_connection_values(call->conn, MHD_GET_ARGUMENT_KIND, check_arg, &check);
   if (check.unknown) {
      snprintf(msg, sizeof msg,
               "unknown query parameter '%.80s' (use pageSize, "
               "continuationToken)",
               check.unknown);
      *ret = http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", check.unknown, msg, 0);
      return false;
   }
   *size = PAGE_DEFAULT;
   if (ps) {
      errno = 0;
      n = strtol(ps, &end, 10);
      if (errno || !*ps || *end || n < 1 || n > PAGE_MAX) {
         *ret = http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", "pageSize",
                          "pageSize must be an integer from 1 to 100", 0);
         return false;
      }
      *size = (int)n;
   }
   *after = MHD_lookup_connection_value(call->conn, MHD_GET_ARGUMENT_KIND, "continuationToken");
   if (*after && !repository_id_valid(*after)) {
      *ret = http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", "continuationToken",
                       "continuationToken is not one this service issued", 0);
      return false;
   }
   return true;
}

enum MHD_Result
handle_list(call_t *call)
{
   bson_string_t *out;
   bson_error_t error;
   contact_t **items;
   const char *after;
   size_t n;
   bool more;
   int size;
   enum MHD_Result ret;
   repo_status_t st;

   if (!list_args(call, &size, &after, &ret))
      return ret;
   st = repository_list(call->repo, after, size, &items, &n, &more, &error);
   if (st != REPO_OK) {
      bson_free(items);
      return http_fail_repo(call, st, 0, &error);
   }
   out = bson_string_new("{\"items\":[");
   for (size_t i = 0; i < n; i++) {
      if (i)
         bson_string_append_c(out, ',');
      representation_write(items[i], out);
   }
   bson_string_append(out, "],\"continuationToken\":");
   /* The token is the last id of this page: the next page starts after it, so contacts
    * created or deleted meanwhile never shift what a client has not seen yet. */
   if (more && n)
      json_append_string(out, contact_id(items[n - 1]));
   else
      bson_string_append(out, "null");
   bson_string_append(out, "}\n");
   for (size_t i = 0; i < n; i++)
      contact_destroy(items[i]);
   bson_free(items);
   return http_respond(call, MHD_HTTP_OK, out, 0, NULL);
}
