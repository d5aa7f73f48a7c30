/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The endpoints. Each checks everything it can before touching storage, so bad input writes
 * nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/* With If-Match: *, how often a change is made again after someone else's change won. */
#define ANY_VERSION_ATTEMPTS 20

/* Reads every If-Match field (several lines make one list) for PUT, PATCH and DELETE after
 * checking the id; returns true to go on, false after answering. */
static bool
begin_change(call_t *call, const char *id, if_match_t *im, enum MHD_Result *ret)
{
   if (!repository_id_valid(id)) {
      *ret = bad_id(call);
      return false;
   }
   if_match_read(call->conn, im);
   if (im->kind == IF_MATCH_MISSING) {
      *ret = http_fail(call, MHD_HTTP_PRECONDITION_REQUIRED, "precondition-required", NULL,
                       "send If-Match with the ETag of your last GET, e.g. If-Match: \"1\"", 0);
      return false;
   }
   if (im->kind == IF_MATCH_BAD) {
      *ret = http_fail(call, MHD_HTTP_BAD_REQUEST, "invalid-request", "If-Match",
                       "If-Match must be *, or entity tags such as \"3\" separated by commas", 0);
      return false;
   }
   return true;
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

/* Loads a live contact and checks the precondition against its version. A missing contact
 * answers 404 whatever If-Match says: RFC 9110 13.2.1 has a server ignore preconditions when
 * the request without them would fail with a status other than 2xx or 412. */
static bool
load_for_change(call_t *call, const char *id, const if_match_t *im, contact_t **c, int64_t *version,
                enum MHD_Result *ret)
{
   bson_error_t error;
   repo_status_t st = get_live(call, id, c, version, &error);

   if (st != REPO_OK) {
      contact_destroy(*c);
      *ret = http_fail_repo(call, st, 0, &error);
      return false;
   }
   if (!if_match_holds(im, *version)) {
      contact_destroy(*c);
      *ret = http_fail_repo(call, REPO_CONFLICT, *version, &error);
      return false;
   }
   return true;
}

/* Applies a change to a loaded contact in memory; returns false after answering (400). */
typedef bool (*apply_fn)(call_t *call, contact_t *c, void *ctx, enum MHD_Result *ret);

/* Read, change, write, answer. The write holds the version that was read, so it is atomic:
 * if someone else's change came in between, it fails instead of overwriting it. With a list
 * of tags that means 412 (the version matched is gone). With "*" (RFC 9110: true while the
 * contact exists, whatever its version) the change is made again from the new version: no
 * update is lost, and none is refused for being late (47 of 100 parallel PUTs with * were
 * refused with 412 before). */
static enum MHD_Result
change(call_t *call, const char *id, const if_match_t *im, apply_fn apply, void *ctx, bool deleting)
{
   for (int attempt = 1;; attempt++) {
      bson_error_t error;
      int64_t version;
      contact_t *c;
      enum MHD_Result ret;
      repo_status_t st;

      if (!load_for_change(call, id, im, &c, &version, &ret))
         return ret;
      if (!apply(call, c, ctx, &ret)) {
         contact_destroy(c);
         return ret;
      }
      st = repository_save(call->repo, c, &call->trace, &version, &error);
      if (st == REPO_CONFLICT && im->kind == IF_MATCH_ANY && attempt < ANY_VERSION_ATTEMPTS) {
         contact_destroy(c);
         continue;
      }
      if (st == REPO_CONFLICT && im->kind == IF_MATCH_ANY)
         ret = http_fail(call, MHD_HTTP_SERVICE_UNAVAILABLE, "busy", NULL,
                         "the contact kept changing while this request was applied; retry", 0);
      else if (st != REPO_OK)
         ret = http_fail_repo(call, st, version, &error);
      else if (deleting)
         ret = http_respond(call, MHD_HTTP_NO_CONTENT, NULL, 0, NULL);
      else
         ret = respond_contact(call, MHD_HTTP_OK, c, version, NULL);
      contact_destroy(c);
      return ret;
   }
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
   st = repository_add(call->repo, c, &call->trace, &version, &error);
   snprintf(location, sizeof location, "/contacts/%s", id);
   ret = st == REPO_OK ? respond_contact(call, MHD_HTTP_CREATED, c, version, location)
                       : http_fail_repo(call, st, 0, &error);
   contact_destroy(c);
   return ret;
}

/* GET and HEAD (libmicrohttpd leaves the body of a HEAD answer out). */
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

static bool
apply_replace(call_t *call, contact_t *c, void *ctx, enum MHD_Result *ret)
{
   contact_error_t why;

   if (!contact_replace(c, ctx, &why)) {
      *ret = bad_request(call, &why);
      return false;
   }
   return true;
}

enum MHD_Result
handle_put(call_t *call, const char *id)
{
   contact_input_t in;
   contact_error_t why;
   bson_t holder;
   if_match_t im;
   enum MHD_Result ret;

   if (!begin_change(call, id, &im, &ret))
      return ret;
   if (!json_content_type(call))
      return unsupported_type(call);
   if (!representation_parse(call->body, call->len, &holder, &in, &why)) {
      bson_destroy(&holder);
      return bad_request(call, &why);
   }
   ret = change(call, id, &im, apply_replace, &in, false);
   bson_destroy(&holder);
   return ret;
}

/* Applies the merge patch to the contact's current representation. */
static bool
apply_patch(call_t *call, contact_t *c, void *ctx, enum MHD_Result *ret)
{
   bson_t current = BSON_INITIALIZER, merged;
   contact_input_t in;
   contact_error_t why;
   bool ok;

   contact_append_fields(c,
                         CONTACT_CHANGED_NAME | CONTACT_CHANGED_DESCRIPTION |
                            CONTACT_CHANGED_EMAIL | CONTACT_CHANGED_COMPANY,
                         &current);
   ok = representation_merge_patch(&current, ctx, &merged, &why) &&
        representation_read(&merged, &in, &why) && contact_replace(c, &in, &why);
   if (!ok)
      *ret = bad_request(call, &why);
   bson_destroy(&merged);
   bson_destroy(&current);
   return ok;
}

enum MHD_Result
handle_patch(call_t *call, const char *id)
{
   contact_error_t why;
   if_match_t im;
   enum MHD_Result ret;
   bson_t patch;

   if (!begin_change(call, id, &im, &ret))
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
   ret = change(call, id, &im, apply_patch, &patch, false);
   bson_destroy(&patch);
   return ret;
}

static bool
apply_delete(call_t *call, contact_t *c, void *ctx, enum MHD_Result *ret)
{
   contact_error_t why;

   if (!contact_delete(c, &why)) {
      *ret = http_fail(call, MHD_HTTP_NOT_FOUND, "not-found", NULL, why.message, 0);
      return false;
   }
   return true;
}

enum MHD_Result
handle_delete(call_t *call, const char *id)
{
   if_match_t im;
   enum MHD_Result ret;

   if (!begin_change(call, id, &im, &ret))
      return ret;
   return change(call, id, &im, apply_delete, NULL, true);
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
