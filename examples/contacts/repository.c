/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Contacts stored through liboutbox.
 */
#include "repository.h"

#include <ctype.h>
#include <string.h>

#include <outbox/outbox.h>

#define COLLECTION "contacts"

struct _repository_t {
   mongoc_client_pool_t *pool;
   char *db;
   outbox_collection_t *contacts;
};

repository_t *
repository_new(mongoc_client_pool_t *pool, const char *db, bson_error_t *error)
{
   repository_t *repo = bson_malloc0(sizeof *repo);

   repo->pool = pool;
   repo->db = bson_strdup(db);
   repo->contacts = outbox_collection_new(pool, db, COLLECTION, NULL, error);
   if (!repo->contacts) {
      repository_destroy(repo);
      return NULL;
   }
   return repo;
}

void
repository_destroy(repository_t *repo)
{
   if (!repo)
      return;
   outbox_collection_destroy(repo->contacts);
   bson_free(repo->db);
   bson_free(repo);
}

bool
repository_ensure_indexes(repository_t *repo, bson_error_t *error)
{
   return outbox_collection_ensure_indexes(repo->contacts, error);
}

bool
repository_id_valid(const char *id)
{
   if (!id || strlen(id) != 24)
      return false;
   for (const char *p = id; *p; p++) {
      if (!isxdigit((unsigned char)*p))
         return false;
   }
   return true;
}

void
repository_new_id(char id[25])
{
   bson_oid_t oid;

   bson_oid_init(&oid, NULL);
   bson_oid_to_string(&oid, id);
}

static void
id_value(const char *id, bson_oid_t *oid, bson_value_t *value)
{
   bson_oid_init_from_string(oid, id);
   memset(value, 0, sizeof *value);
   value->value_type = BSON_TYPE_OID;
   value->value.v_oid = *oid;
}

/* Maps liboutbox's and mongoc's errors onto what the HTTP layer distinguishes. */
static repo_status_t
status_of(const bson_error_t *error)
{
   if (error->domain == OUTBOX_ERROR_DOMAIN) {
      switch (error->code) {
      case OUTBOX_ERROR_NOT_FOUND:
         return REPO_NOT_FOUND;
      case OUTBOX_ERROR_CONFLICT:
         return REPO_CONFLICT;
      case OUTBOX_ERROR_LIMIT_PENDING:
         return REPO_BUSY;
      case OUTBOX_ERROR_UNKNOWN_OUTCOME:
         /* Lost connection or election mid-commit (503 as before): a client's retry with
          * If-Match is safe, a change that did land makes it 412. */
         return REPO_UNAVAILABLE;
      default:
         return REPO_ERROR;
      }
   }
   if (error->domain == MONGOC_ERROR_SERVER_SELECTION || error->domain == MONGOC_ERROR_STREAM)
      return REPO_UNAVAILABLE;
   return REPO_ERROR;
}

/* The contact's pending domain events as liboutbox events (n <= CONTACT_EVENT_KINDS), each
 * with the request's trace context. The HTTP layer checked the context already, so a refusal
 * here is a bug: the events then go without it rather than the change failing. */
static size_t
make_events(const contact_t *c, const repo_trace_t *trace,
            outbox_event_t *events[CONTACT_EVENT_KINDS])
{
   size_t n = contact_event_count(c);

   for (size_t i = 0; i < n; i++) {
      events[i] = outbox_event_new(contact_event_type(c, i), contact_event_data(c, i));
      if (trace && trace->traceparent[0])
         (void)outbox_event_set_trace_context(events[i], trace->traceparent, trace->tracestate,
                                              NULL);
   }
   return n;
}

static void
free_events(outbox_event_t *events[CONTACT_EVENT_KINDS], size_t n)
{
   for (size_t i = 0; i < n; i++)
      outbox_event_destroy(events[i]);
}

repo_status_t
repository_add(repository_t *repo, const contact_t *c, const repo_trace_t *trace, int64_t *version,
               bson_error_t *error)
{
   outbox_event_t *events[CONTACT_EVENT_KINDS];
   bson_t fields = BSON_INITIALIZER;
   outbox_commit_t res;
   bson_value_t id;
   bson_oid_t oid;
   size_t n;
   bool ok;

   id_value(contact_id(c), &oid, &id);
   contact_append_fields(c, 0, &fields);
   n = make_events(c, trace, events);
   ok = outbox_collection_create(repo->contacts, &id, &fields, events, n, &res, error);
   free_events(events, n);
   bson_destroy(&fields);
   *version = ok ? res.version : 0;
   return ok ? REPO_OK : status_of(error);
}

repo_status_t
repository_get(repository_t *repo, const char *id, contact_t **c, int64_t *version,
               bson_error_t *error)
{
   contact_error_t why;
   char canonical[25];
   bson_value_t value;
   bson_oid_t oid;
   bson_t doc;

   *c = NULL;
   id_value(id, &oid, &value);
   if (!outbox_collection_read(repo->contacts, &value, &doc, version, error)) {
      bson_destroy(&doc);
      return status_of(error);
   }
   /* The canonical (lowercase) spelling, whatever case the client used. */
   bson_oid_to_string(&oid, canonical);
   *c = contact_from_bson(canonical, &doc, &why);
   bson_destroy(&doc);
   if (!*c) {
      bson_set_error(error, 0, 0, "stored contact %s is malformed: %s", id, why.message);
      return REPO_ERROR;
   }
   return REPO_OK;
}

repo_status_t
repository_save(repository_t *repo, const contact_t *c, const repo_trace_t *trace, int64_t *version,
                bson_error_t *error)
{
   outbox_event_t *events[CONTACT_EVENT_KINDS];
   unsigned changes = contact_changes(c);
   outbox_commit_t res;
   bson_value_t id;
   bson_oid_t oid;
   size_t n;
   bool ok;

   if (!changes && !contact_event_count(c))
      return REPO_OK;
   id_value(contact_id(c), &oid, &id);
   n = make_events(c, trace, events);
   if (changes & CONTACT_CHANGED_DELETED) {
      /* Deletion is a commit of its own (the HTTP API never mixes it with other changes). */
      ok = outbox_collection_soft_delete(repo->contacts, &id, *version, n ? events[n - 1] : NULL,
                                         &res, error);
   } else {
      bson_t update = BSON_INITIALIZER, set;

      BSON_APPEND_DOCUMENT_BEGIN(&update, "$set", &set);
      contact_append_fields(c, changes, &set);
      bson_append_document_end(&update, &set);
      ok = outbox_collection_update(repo->contacts, &id, *version, &update, events, n, &res, error);
      bson_destroy(&update);
   }
   free_events(events, n);
   if (ok ||
       (error && error->domain == OUTBOX_ERROR_DOMAIN && error->code == OUTBOX_ERROR_CONFLICT))
      *version = res.version;
   return ok ? REPO_OK : status_of(error);
}

static bool
list_query(const char *after, int limit, bson_t *filter, bson_t *opts)
{
   bson_t cond, sort, proj;
   bson_oid_t oid;

   bson_init(filter);
   bson_init(opts);
   BSON_APPEND_DOCUMENT_BEGIN(filter, "deleted", &cond);
   BSON_APPEND_BOOL(&cond, "$ne", true);
   bson_append_document_end(filter, &cond);
   if (after) {
      bson_oid_init_from_string(&oid, after);
      BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &cond);
      BSON_APPEND_OID(&cond, "$gt", &oid);
      bson_append_document_end(filter, &cond);
   }
   BSON_APPEND_DOCUMENT_BEGIN(opts, "sort", &sort);
   BSON_APPEND_INT32(&sort, "_id", 1);
   bson_append_document_end(opts, &sort);
   /* The pending events can be large and are none of a reader's business. */
   BSON_APPEND_DOCUMENT_BEGIN(opts, "projection", &proj);
   BSON_APPEND_INT32(&proj, "events", 0);
   bson_append_document_end(opts, &proj);
   BSON_APPEND_INT64(opts, "limit", limit + 1);
   return true;
}

repo_status_t
repository_list(repository_t *repo, const char *after, int limit, contact_t ***items, size_t *n,
                bool *more, bson_error_t *error)
{
   mongoc_client_t *client = mongoc_client_pool_pop(repo->pool);
   mongoc_collection_t *coll = mongoc_client_get_collection(client, repo->db, COLLECTION);
   mongoc_cursor_t *cursor;
   const bson_t *doc;
   bson_t filter, opts;
   bson_iter_t it;
   bool failed;

   *items = bson_malloc0(sizeof(contact_t *) * (size_t)(limit + 1));
   *n = 0;
   *more = false;
   list_query(after, limit, &filter, &opts);
   cursor = mongoc_collection_find_with_opts(coll, &filter, &opts, NULL);
   while (mongoc_cursor_next(cursor, &doc)) {
      char id[25];
      contact_t *c;

      if ((int)*n == limit) {
         *more = true;
         break;
      }
      if (!bson_iter_init_find(&it, doc, "_id") || !BSON_ITER_HOLDS_OID(&it))
         continue; /* not ours: ids are ObjectIds */
      bson_oid_to_string(bson_iter_oid(&it), id);
      if ((c = contact_from_bson(id, doc, NULL)))
         (*items)[(*n)++] = c;
   }
   failed = mongoc_cursor_error(cursor, error);
   mongoc_cursor_destroy(cursor);
   mongoc_collection_destroy(coll);
   mongoc_client_pool_push(repo->pool, client);
   bson_destroy(&filter);
   bson_destroy(&opts);
   return failed ? status_of(error) : REPO_OK;
}
