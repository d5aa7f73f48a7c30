/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing and validating update documents and arrayFilters.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "update-private.h"

static const struct {
   const char *name;
   tm_uop_t op;
} uops[] = {
   {"$set", TM_U_SET},
   {"$setOnInsert", TM_U_SET_ON_INSERT},
   {"$unset", TM_U_UNSET},
   {"$inc", TM_U_INC},
   {"$mul", TM_U_MUL},
   {"$min", TM_U_MIN},
   {"$max", TM_U_MAX},
   {"$currentDate", TM_U_CURRENT_DATE},
   {"$rename", TM_U_RENAME},
   {"$push", TM_U_PUSH},
   {"$addToSet", TM_U_ADD_TO_SET},
   {"$pull", TM_U_PULL},
   {"$pullAll", TM_U_PULL_ALL},
   {"$pop", TM_U_POP},
   {"$bit", TM_U_BIT},
};

bool
tm_uop_creates(tm_uop_t op)
{
   return op != TM_U_UNSET && op != TM_U_PULL && op != TM_U_PULL_ALL && op != TM_U_POP;
}

static bool parse_filters(tm_update_t *u, const bson_t *array_filters, bson_error_t *error);

tm_update_t *
tm_update_new(const bson_t *update, const bson_t *array_filters, bson_error_t *error)
{
   tm_update_t *u = bson_malloc0(sizeof *u);
   bson_iter_t it;

   u->spec = update ? bson_copy(update) : bson_new();
   if (!parse_filters(u, array_filters, error)) {
      goto fail;
   }
   if (!bson_iter_init(&it, u->spec) || !bson_iter_next(&it)) {
      u->replacement = true; /* {} replaces the document by an empty one */
      return u;
   }
   if (strcmp(bson_iter_key(&it), "0") == 0 && BSON_ITER_HOLDS_DOCUMENT(&it)) {
      if (u->n_filters) {
         tm_error_set(error, 72, "arrayFilters may not be specified for pipeline-style updates");
         goto fail;
      }
      u->pipeline = true;
      if (!tm_update_parse_pipeline(u, error)) {
         goto fail;
      }
      return u;
   }
   if (bson_iter_key(&it)[0] != '$') {
      u->replacement = true;
      while (bson_iter_next(&it)) {
         if (bson_iter_key(&it)[0] == '$') {
            tm_error_set(error, 52,
                         "The dollar ($) prefixed field '%s' in '%s' is not allowed in the "
                         "context of an update's replacement document. Consider using an "
                         "aggregation pipeline with $replaceWith.",
                         bson_iter_key(&it), bson_iter_key(&it));
            goto fail;
         }
      }
      return u;
   }
   if (!tm_update_parse_ops(u, error)) {
      goto fail;
   }
   return u;
fail:
   tm_update_destroy(u);
   return NULL;
}

tm_update_t *
tm_update_new_pipeline(const bson_t *pipeline, const bson_t *array_filters, bson_error_t *error)
{
   tm_update_t *u;

   if (array_filters && !bson_empty(array_filters)) {
      tm_error_set(error, 72, "arrayFilters may not be specified for pipeline-style updates");
      return NULL;
   }
   u = bson_malloc0(sizeof *u);
   u->spec = pipeline ? bson_copy(pipeline) : bson_new();
   u->filters = bson_malloc0(sizeof(tm_array_filter_t));
   u->pipeline = true;
   if (!tm_update_parse_pipeline(u, error)) {
      tm_update_destroy(u);
      return NULL;
   }
   return u;
}

void
tm_update_destroy(tm_update_t *update)
{
   if (!update) {
      return;
   }
   for (size_t i = 0; i < update->n; i++) {
      tm_path_destroy(&update->actions[i].path);
      tm_path_destroy(&update->actions[i].from);
      tm_sort_destroy(update->actions[i].sort_by);
      tm_mnode_destroy(update->actions[i].cond);
   }
   bson_free(update->actions);
   for (size_t i = 0; i < update->n_filters; i++) {
      bson_free(update->filters[i].id);
      tm_matcher_destroy(update->filters[i].matcher);
   }
   bson_free(update->filters);
   tm_pipeline_destroy(update->pipe);
   bson_destroy(update->spec);
   bson_free(update);
}

bool
tm_update_is_replacement(const tm_update_t *update)
{
   return update->replacement;
}

/* The identifier of an array filter: the first component of every top-level path. */
static bool
filter_ident(const bson_t *filter, char **ident, bson_error_t *error)
{
   bson_iter_t it;

   bson_iter_init(&it, filter);
   while (bson_iter_next(&it)) {
      const char *key = bson_iter_key(&it);
      const char *dot = strchr(key, '.');
      char *id;
      if (strcmp(key, "$and") == 0 || strcmp(key, "$or") == 0 || strcmp(key, "$nor") == 0) {
         bson_iter_t arr;
         bson_t sub;
         if (!BSON_ITER_HOLDS_ARRAY(&it) || !bson_iter_recurse(&it, &arr)) {
            return tm_error_set(error, 2, "%s must be an array", key);
         }
         while (bson_iter_next(&arr)) {
            if (!tm_value_as_bson(bson_iter_value(&arr), &sub) ||
                !filter_ident(&sub, ident, error)) {
               return false;
            }
         }
         continue;
      }
      id = dot ? bson_strndup(key, (size_t)(dot - key)) : bson_strdup(key);
      if (*ident && strcmp(*ident, id) != 0) {
         tm_error_set(error, 9,
                      "Error parsing array filter :: caused by :: Expected a single top-level "
                      "field name, found '%s' and '%s'",
                      *ident, id);
         bson_free(id);
         return false;
      }
      bson_free(*ident);
      *ident = id;
   }
   return true;
}

static bool
valid_ident(const char *id)
{
   if (!islower((unsigned char)id[0])) {
      return false;
   }
   for (const char *c = id; *c; c++) {
      if (!isalnum((unsigned char)*c)) {
         return false;
      }
   }
   return true;
}

static bool
parse_filters(tm_update_t *u, const bson_t *array_filters, bson_error_t *error)
{
   bson_iter_t it;
   size_t n = array_filters ? bson_count_keys(array_filters) : 0;

   u->filters = bson_malloc0((n + 1) * sizeof(tm_array_filter_t));
   if (!n) {
      return true;
   }
   bson_iter_init(&it, array_filters);
   while (bson_iter_next(&it)) {
      tm_array_filter_t *f = &u->filters[u->n_filters];
      bson_t doc;
      if (!BSON_ITER_HOLDS_DOCUMENT(&it) || !tm_value_as_bson(bson_iter_value(&it), &doc)) {
         return tm_error_set(error, 2, "arrayFilters entries must be objects");
      }
      if (!filter_ident(&doc, &f->id, error)) {
         bson_free(f->id);
         return false;
      }
      if (!f->id) {
         return tm_error_set(error, 2,
                             "Cannot use an expression without a top-level field name in "
                             "arrayFilters");
      }
      u->n_filters++;
      if (!valid_ident(f->id)) {
         return tm_error_set(error, 2,
                             "Error parsing array filter :: caused by :: The top-level field "
                             "name must be an alphanumeric string beginning with a lowercase "
                             "letter, found '%s'",
                             f->id);
      }
      for (size_t i = 0; i + 1 < u->n_filters; i++) {
         if (strcmp(u->filters[i].id, f->id) == 0) {
            return tm_error_set(error, 9,
                                "Found multiple array filters with the same top-level field "
                                "name %s",
                                f->id);
         }
      }
      f->matcher = tm_matcher_new(&doc, error);
      if (!f->matcher) {
         return false;
      }
   }
   return true;
}

/* Validates the components of an update path: positional forms and known identifiers. */
static bool
check_path(tm_update_t *u, const char *field, tm_path_t *path, bson_error_t *error)
{
   int dollars = 0;

   if (!tm_path_parse(field, path)) {
      return tm_error_set(error, 56,
                          "The update path '%s' contains an empty field name, which is not "
                          "allowed.",
                          field);
   }
   for (size_t i = 0; i < path->n; i++) {
      const char *c = path->parts[i];
      size_t len = strlen(c);
      if (c[0] != '$') {
         continue;
      }
      if (strcmp(c, "$") == 0) {
         if (++dollars > 1) {
            return tm_error_set(
               error, 2, "Too many positional (i.e. '$') elements found in path '%s'", field);
         }
      } else if (strncmp(c, "$[", 2) == 0 && c[len - 1] == ']') {
         bool found = len == 3;
         for (size_t f = 0; !found && f < u->n_filters; f++) {
            if (strlen(u->filters[f].id) == len - 3 &&
                strncmp(u->filters[f].id, c + 2, len - 3) == 0) {
               u->filters[f].used = found = true;
            }
         }
         if (!found) {
            return tm_error_set(error, 2,
                                "No array filter found for identifier '%.*s' in path '%s'",
                                (int)(len - 3), c + 2, field);
         }
      } else if (i == 0) {
         return tm_error_set(error, 52,
                             "The dollar ($) prefixed field '%s' in '%s' is not allowed in the "
                             "context of an update's replacement document. Consider using an "
                             "aggregation pipeline with $replaceWith.",
                             c, field);
      }
   }
   return true;
}

/* Component-wise prefix test: is `a` a prefix of (or equal to) `b`? */
static bool
path_prefix(const tm_path_t *a, const tm_path_t *b)
{
   if (a->n > b->n) {
      return false;
   }
   for (size_t i = 0; i < a->n; i++) {
      if (strcmp(a->parts[i], b->parts[i]) != 0) {
         return false;
      }
   }
   return true;
}

static bool
check_conflict(const tm_update_t *u, const tm_path_t *p, bson_error_t *error)
{
   for (size_t i = 0; i < u->n; i++) {
      const tm_path_t *others[2] = {&u->actions[i].path, &u->actions[i].from};
      for (size_t k = 0; k < 2; k++) {
         const tm_path_t *o = others[k];
         if (!o->parts || o == p) {
            continue;
         }
         if (path_prefix(o, p) || path_prefix(p, o)) {
            return tm_error_set(error, 40, "Updating the path '%s' would create a conflict at '%s'",
                                p->dotted, o->n < p->n ? o->dotted : p->dotted);
         }
      }
   }
   return true;
}

static int
action_cmp(const void *x, const void *y)
{
   const tm_action_t *a = x, *b = y;

   for (size_t i = 0; i < a->path.n && i < b->path.n; i++) {
      int r = strcmp(a->path.parts[i], b->path.parts[i]);
      if (r != 0) {
         return r;
      }
   }
   return a->path.n < b->path.n ? -1 : (a->path.n > b->path.n ? 1 : 0);
}

static bool
parse_field(tm_update_t *u, tm_uop_t op, const char *op_name, bson_iter_t *field,
            bson_error_t *error)
{
   tm_action_t *a = &u->actions[u->n];
   const char *key = bson_iter_key(field);

   memset(a, 0, sizeof *a);
   a->op = op;
   a->op_name = op_name;
   a->operand = *bson_iter_value(field);
   u->n++;
   if (!check_path(u, key, &a->path, error)) {
      return false;
   }
   if (op == TM_U_RENAME) {
      tm_path_t tmp;
      if (!BSON_ITER_HOLDS_UTF8(field)) {
         return tm_error_set(error, 2, "The 'to' field for $rename must be a string: %s: ...", key);
      }
      /* $rename's action lives at the destination; the source is kept in `from`. */
      tmp = a->path;
      a->from = tmp;
      if (!check_path(u, bson_iter_utf8(field, NULL), &a->path, error)) {
         return false;
      }
   }
   if (!tm_action_parse_operand(a, key, error)) {
      return false;
   }
   if (!check_conflict(u, &a->path, error)) {
      return false;
   }
   return a->from.parts ? check_conflict(u, &a->from, error) : true;
}

bool
tm_update_parse_ops(tm_update_t *u, bson_error_t *error)
{
   bson_iter_t it, fields;
   size_t total = 0;

   bson_iter_init(&it, u->spec);
   while (bson_iter_next(&it)) {
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_t sub;
         tm_value_as_bson(bson_iter_value(&it), &sub);
         total += bson_count_keys(&sub);
      }
   }
   u->actions = bson_malloc0((total + 1) * sizeof(tm_action_t));
   bson_iter_init(&it, u->spec);
   while (bson_iter_next(&it)) {
      const char *name = bson_iter_key(&it);
      size_t k = 0;
      while (k < sizeof uops / sizeof uops[0] && strcmp(uops[k].name, name) != 0) {
         k++;
      }
      if (k == sizeof uops / sizeof uops[0]) {
         return tm_error_set(error, 9,
                             "Unknown modifier: %s. Expected a valid update modifier or "
                             "pipeline-style update specified as an array",
                             name);
      }
      if (!BSON_ITER_HOLDS_DOCUMENT(&it)) {
         return tm_error_set(error, 9,
                             "Modifiers operate on fields but we found type %s instead. For "
                             "example: {$mod: {<field>: ...}} not {%s: ...}",
                             tm_type_name(bson_iter_type(&it)), name);
      }
      bson_iter_recurse(&it, &fields);
      while (bson_iter_next(&fields)) {
         if (!parse_field(u, uops[k].op, uops[k].name, &fields, error)) {
            return false;
         }
      }
   }
   for (size_t f = 0; f < u->n_filters; f++) {
      if (!u->filters[f].used) {
         char *json = bson_as_relaxed_extended_json(u->spec, NULL);
         tm_error_set(error, 9,
                      "The array filter for identifier '%s' was not used in the update %s",
                      u->filters[f].id, json);
         bson_free(json);
         return false;
      }
   }
   /* Since MongoDB 5.0 the fields of an update apply in lexicographic order of their paths,
    * so new fields are appended in that order whatever the order of the request. */
   qsort(u->actions, u->n, sizeof(tm_action_t), action_cmp);
   return true;
}
