/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Namespace patterns (namespace.h): parsing, matching, the server-side filter and choosing
 * the state database. Pure functions; a built set is immutable and owned by its creator.
 */
#include "config/namespace.h"

#include <string.h>

#include "config/config.h"
#include "util/error.h"

struct relay_nsset_t {
   relay_nspat_t *pats;
   size_t n;
   /* The relay's own collections in the state database: never watched. */
   const char *own_db;
   const char *own[3];
};

bool
relay_glob_match(const char *glob, const char *s)
{
   /* Iterative with one backtrack point: the last `*` seen. Linear enough for names. */
   const char *star = NULL, *resume = NULL;
   while (*s) {
      if (*glob == '*') {
         star = glob++;
         resume = s;
      } else if (*glob == *s) {
         glob++;
         s++;
      } else if (star) {
         glob = star + 1;
         s = ++resume;
      } else {
         return false;
      }
   }
   while (*glob == '*') {
      glob++;
   }
   return *glob == '\0';
}

bool
relay_ns_reserved(const char *db, const char *coll)
{
   return !strcmp(db, "admin") || !strcmp(db, "config") || !strcmp(db, "local") ||
          (coll && !strncmp(coll, "system.", 7));
}

static bool
fail(bson_error_t *error, const char *what, const char *text, const char *why)
{
   bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG, "%s: %s, got '%s'", what, why,
                  text);
   return false;
}

bool
relay_nspat_parse(const char *text, const char *what, relay_nspat_t *out, bson_error_t *error)
{
   const char *dot = strchr(text, '.');

   memset(out, 0, sizeof *out);
   if (!dot || dot == text || !dot[1]) {
      return fail(error, what, text, "expected DB.COLL (`*` globs allowed in either part)");
   }
   size_t dblen = (size_t)(dot - text);
   if (strcspn(text, "/\\ \"$") < dblen) {
      return fail(error, what, text, "a database name cannot contain any of / \\ space \" $");
   }
   if (strchr(dot + 1, '$')) {
      return fail(error, what, text, "a collection name cannot contain $");
   }
   out->db = bson_strndup(text, dblen);
   out->coll = bson_strdup(dot + 1);
   out->db_glob = strchr(out->db, '*') != NULL;
   out->coll_glob = strchr(out->coll, '*') != NULL;
   if ((!out->db_glob && relay_ns_reserved(out->db, NULL)) ||
       (!out->coll_glob && relay_ns_reserved("", out->coll))) {
      relay_nspat_clear(out);
      return fail(error, what, text,
                  "admin, config, local and system.* are never watched (globs skip them)");
   }
   return true;
}

void
relay_nspat_clear(relay_nspat_t *p)
{
   bson_free(p->db);
   bson_free(p->coll);
   memset(p, 0, sizeof *p);
}

static bool
own_collection(const relay_nsset_t *set, const char *db, const char *coll)
{
   if (!set->own_db || strcmp(db, set->own_db)) {
      return false;
   }
   for (size_t i = 0; i < 3; i++) {
      if (set->own[i] && !strcmp(coll, set->own[i])) {
         return true;
      }
   }
   return false;
}

relay_nsset_t *
relay_nsset_new(const relay_config_t *cfg, bson_error_t *error)
{
   relay_nsset_t *set = bson_malloc0(sizeof *set);

   set->own_db = cfg->state_database;
   set->own[0] = cfg->state_collection;
   set->own[1] = cfg->lease_collection;
   set->own[2] = cfg->archive_collection;
   set->pats = bson_malloc0((cfg->n_watch + 1) * sizeof *set->pats);
   for (size_t i = 0; i < cfg->n_watch; i++) {
      relay_nspat_t *p = &set->pats[set->n];
      if (!relay_nspat_parse(cfg->watch[i], "--namespace", p, error)) {
         relay_nsset_destroy(set);
         return NULL;
      }
      set->n++;
      if (!p->db_glob && !p->coll_glob && own_collection(set, p->db, p->coll)) {
         bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                        "--namespace: '%s' is the relay's own state, lease or archive "
                        "collection and cannot be watched",
                        cfg->watch[i]);
         relay_nsset_destroy(set);
         return NULL;
      }
   }
   return set;
}

void
relay_nsset_destroy(relay_nsset_t *set)
{
   if (!set) {
      return;
   }
   for (size_t i = 0; i < set->n; i++) {
      relay_nspat_clear(&set->pats[i]);
   }
   bson_free(set->pats);
   bson_free(set);
}

static bool
part_match(const char *pat, bool glob, const char *s)
{
   return glob ? relay_glob_match(pat, s) : !strcmp(pat, s);
}

int
relay_nsset_which(const relay_nsset_t *set, const char *db, const char *coll)
{
   if (!db || !coll || relay_ns_reserved(db, coll) || own_collection(set, db, coll)) {
      return -1;
   }
   for (size_t i = 0; i < set->n; i++) {
      const relay_nspat_t *p = &set->pats[i];
      if (part_match(p->db, p->db_glob, db) && part_match(p->coll, p->coll_glob, coll)) {
         return (int)i;
      }
   }
   return -1;
}

bool
relay_nsset_match(const relay_nsset_t *set, const char *db, const char *coll)
{
   return relay_nsset_which(set, db, coll) >= 0;
}

bool
relay_nsset_match_db(const relay_nsset_t *set, const char *db)
{
   if (!db || relay_ns_reserved(db, NULL)) {
      return false;
   }
   for (size_t i = 0; i < set->n; i++) {
      if (part_match(set->pats[i].db, set->pats[i].db_glob, db)) {
         return true;
      }
   }
   return false;
}

const char *
relay_nsset_single_db(const relay_nsset_t *set)
{
   for (size_t i = 0; i < set->n; i++) {
      if (set->pats[i].db_glob || strcmp(set->pats[i].db, set->pats[0].db)) {
         return NULL;
      }
   }
   return set->n ? set->pats[0].db : NULL;
}

bool
relay_nsset_literal(const relay_nsset_t *set)
{
   for (size_t i = 0; i < set->n; i++) {
      if (set->pats[i].db_glob || set->pats[i].coll_glob) {
         return false;
      }
   }
   return true;
}

size_t
relay_nsset_count(const relay_nsset_t *set)
{
   return set->n;
}

const relay_nspat_t *
relay_nsset_at(const relay_nsset_t *set, size_t i)
{
   return i < set->n ? &set->pats[i] : NULL;
}

char *
relay_glob_regex(const char *glob)
{
   bson_string_t *s = bson_string_new("^");
   for (const char *p = glob; *p; p++) {
      if (*p == '*') {
         bson_string_append(s, ".*");
      } else {
         if (strchr(".[]()+?{}|^$\\", *p)) {
            bson_string_append_c(s, '\\');
         }
         bson_string_append_c(s, *p);
      }
   }
   bson_string_append_c(s, '$');
   return bson_string_free(s, false);
}

/* {path: "literal"} or {path: {$regex: "^...$"}}; nothing for a lone `*` (any name). */
static void
append_part(bson_t *doc, const char *path, const char *pat, bool glob)
{
   if (!glob) {
      BSON_APPEND_UTF8(doc, path, pat);
   } else if (strcmp(pat, "*")) {
      char *re = relay_glob_regex(pat);
      bson_t sub;
      BSON_APPEND_DOCUMENT_BEGIN(doc, path, &sub);
      BSON_APPEND_UTF8(&sub, "$regex", re);
      bson_append_document_end(doc, &sub);
      bson_free(re);
   }
}

void
relay_nsset_append_filter(const relay_nsset_t *set, bson_t *doc)
{
   relay_nsset_append_filter_at(set, "ns", doc);
}

void
relay_nsset_append_filter_at(const relay_nsset_t *set, const char *field, bson_t *doc)
{
   bson_t or, branch;
   char key[16], db[16], coll[16];
   const char *k;

   bson_snprintf(db, sizeof db, "%s.db", field);
   bson_snprintf(coll, sizeof coll, "%s.coll", field);
   BSON_APPEND_ARRAY_BEGIN(doc, "$or", & or);
   for (size_t i = 0; i < set->n; i++) {
      const relay_nspat_t *p = &set->pats[i];
      bson_uint32_to_string((uint32_t)i, &k, key, sizeof key);
      BSON_APPEND_DOCUMENT_BEGIN(& or, k, &branch);
      append_part(&branch, db, p->db, p->db_glob);
      if (!strcmp(p->coll, "*")) {
         /* Any collection, but there must be one (a dropDatabase has none). */
         bson_t ex;
         BSON_APPEND_DOCUMENT_BEGIN(&branch, coll, &ex);
         BSON_APPEND_BOOL(&ex, "$exists", true);
         bson_append_document_end(&branch, &ex);
      } else {
         append_part(&branch, coll, p->coll, p->coll_glob);
      }
      bson_append_document_end(& or, &branch);
   }
   bson_append_array_end(doc, & or);
}

static void
watch_add(relay_config_t *cfg, char *pattern)
{
   cfg->watch = bson_realloc(cfg->watch, (cfg->n_watch + 1) * sizeof(char *));
   cfg->watch[cfg->n_watch++] = pattern;
}

/* The state database when none is given: --database, else the one the patterns name. */
static bool
choose_state_database(relay_config_t *cfg, const relay_nsset_t *set, bson_error_t *error)
{
   const char *db = cfg->database ? cfg->database : relay_nsset_single_db(set);
   if (cfg->state_database) {
      return true;
   }
   if (!db) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "--state-database (OUTBOX_STATE_DATABASE) is required when the "
                     "--namespace patterns span databases (it holds the relay's state, leases "
                     "and archive)");
      return false;
   }
   cfg->state_database = bson_strdup(db);
   return true;
}

bool
relay_config_resolve_namespaces(relay_config_t *cfg, bson_error_t *error)
{
   if (cfg->n_collections > 0 && !cfg->database) {
      bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                     "--collection needs --database (OUTBOX_DATABASE); or give --namespace "
                     "DB.COLL instead");
      return false;
   }
   for (size_t i = 0; i < cfg->n_collections; i++) {
      watch_add(cfg, bson_strdup_printf("%s.%s", cfg->database, cfg->collections[i]));
   }
   for (size_t i = 0; i < cfg->n_namespaces; i++) {
      for (size_t j = 0; j < cfg->n_watch; j++) {
         if (!strcmp(cfg->watch[j], cfg->namespaces[i])) {
            bson_set_error(error, RELAY_ERROR_DOMAIN, RELAY_ERROR_CONFIG,
                           "--namespace: '%s' is already watched (--database + --collection)",
                           cfg->namespaces[i]);
            return false;
         }
      }
      watch_add(cfg, bson_strdup(cfg->namespaces[i]));
   }
   /* The set is built once with no own collections known, to find the state database, and
    * once more to refuse patterns naming the relay's own collections literally. */
   relay_nsset_t *set = relay_nsset_new(cfg, error);
   bool ok = set && choose_state_database(cfg, set, error);
   relay_nsset_destroy(set);
   if (ok) {
      set = relay_nsset_new(cfg, error);
      ok = set != NULL;
      relay_nsset_destroy(set);
   }
   return ok;
}
