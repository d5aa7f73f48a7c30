/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The $group stage: group keys and accumulators ($sum $avg $min $max $first $last $push
 * $addToSet $count $mergeObjects).
 */
#include <string.h>

#include "expr.h"
#include "pipeline-private.h"

typedef enum {
   A_SUM,
   A_AVG,
   A_MIN,
   A_MAX,
   A_FIRST,
   A_LAST,
   A_PUSH,
   A_ADD_TO_SET,
   A_MERGE,
} acc_kind_t;

typedef struct {
   const char *field;
   acc_kind_t kind;
   tm_expr_t *expr;
} acc_t;

typedef struct {
   long double sum;
   bson_type_t type; /* widest numeric type summed */
   int64_t count;
   bool has;
   bson_value_t val;
   bson_t arr;
   uint32_t arr_n;
} state_t;

typedef struct {
   bson_value_t key;
   state_t *states;
} group_t;

static const struct {
   const char *name;
   acc_kind_t kind;
} acc_names[] = {
   {"$sum", A_SUM},     {"$avg", A_AVG},
   {"$min", A_MIN},     {"$max", A_MAX},
   {"$first", A_FIRST}, {"$last", A_LAST},
   {"$push", A_PUSH},   {"$addToSet", A_ADD_TO_SET},
   {"$count", A_SUM},   {"$mergeObjects", A_MERGE},
};

static bool
parse_acc(acc_t *a, const char *field, const bson_value_t *spec, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   static const bson_value_t one = {.value_type = BSON_TYPE_INT32, .value.v_int32 = 1};

   a->field = field;
   if (strchr(field, '.')) {
      return tm_error_set(error, 40235, "The field name '%s' cannot contain '.'", field);
   }
   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc) ||
       bson_count_keys(&doc) != 1) {
      return tm_error_set(error, 40234, "The field '%s' must be an accumulator object", field);
   }
   bson_iter_init(&it, &doc);
   bson_iter_next(&it);
   for (size_t i = 0; i < sizeof acc_names / sizeof acc_names[0]; i++) {
      if (strcmp(acc_names[i].name, bson_iter_key(&it)) == 0) {
         a->kind = acc_names[i].kind;
         /* {$count: {}} counts like {$sum: 1}. */
         a->expr = tm_expr_parse(
            strcmp(acc_names[i].name, "$count") == 0 ? &one : bson_iter_value(&it), error);
         return a->expr != NULL;
      }
   }
   return tm_error_set(error, 15952, "unknown group operator '%s'", bson_iter_key(&it));
}

static void
acc_sum(state_t *s, const bson_value_t *v)
{
   bson_type_t t = v->value_type;

   if (!tm_value_is_number(v)) {
      return; /* $sum and $avg skip non-numbers */
   }
   s->sum +=
      t == BSON_TYPE_INT64 ? (long double)v->value.v_int64 : (long double)tm_value_as_double(v);
   s->count++;
   if (s->type == BSON_TYPE_DECIMAL128 || t == BSON_TYPE_DECIMAL128) {
      s->type = BSON_TYPE_DECIMAL128;
   } else if (s->type == BSON_TYPE_DOUBLE || t == BSON_TYPE_DOUBLE) {
      s->type = BSON_TYPE_DOUBLE;
   } else if (s->type == BSON_TYPE_INT64 || t == BSON_TYPE_INT64) {
      s->type = BSON_TYPE_INT64;
   } else {
      s->type = BSON_TYPE_INT32;
   }
}

static void
acc_keep(state_t *s, const bson_value_t *v)
{
   if (s->has) {
      bson_value_destroy(&s->val);
   }
   tm_value_dup(v, &s->val);
   s->has = true;
}

static void
acc_push(const acc_t *a, state_t *s, const bson_value_t *v)
{
   char buf[16];
   const char *key;
   bson_iter_t it;

   if (v->value_type == BSON_TYPE_EOD) {
      return;
   }
   if (a->kind == A_ADD_TO_SET && bson_iter_init(&it, &s->arr)) {
      while (bson_iter_next(&it)) {
         if (tm_value_equal(bson_iter_value(&it), v)) {
            return;
         }
      }
   }
   bson_uint32_to_string(s->arr_n++, &key, buf, sizeof buf);
   bson_append_value(&s->arr, key, -1, v);
}

/* $mergeObjects: the documents merged in order (null and missing skipped; others: 40400). */
static bool
acc_merge(state_t *s, const bson_value_t *v, bson_error_t *error)
{
   int min, max;
   tm_expr_op_fn merge = tm_expr_op_lookup_more("$mergeObjects", &min, &max);
   bson_value_t args[2] = {{.value_type = BSON_TYPE_NULL}, *v}, r = {0};
   if (s->has) {
      args[0] = s->val;
   }
   if (!merge(args, 2, &r, error)) {
      return false;
   }
   if (s->has) {
      bson_value_destroy(&s->val);
   }
   s->val = r;
   s->has = true;
   return true;
}

static bool
accumulate(const acc_t *a, state_t *s, const bson_value_t *v, bson_error_t *error)
{
   int r;

   switch (a->kind) {
   case A_MERGE:
      return acc_merge(s, v, error);
   case A_SUM:
   case A_AVG:
      acc_sum(s, v);
      break;
   case A_MIN:
   case A_MAX:
      /* null and missing do not take part in $min / $max */
      if (v->value_type == BSON_TYPE_EOD || v->value_type == BSON_TYPE_NULL) {
         break;
      }
      r = s->has ? tm_value_compare(v, &s->val) : 0;
      if (!s->has || (a->kind == A_MIN ? r < 0 : r > 0)) {
         acc_keep(s, v);
      }
      break;
   case A_FIRST:
      if (!s->has) {
         acc_keep(s, v);
      }
      break;
   case A_LAST:
      acc_keep(s, v);
      break;
   default:
      acc_push(a, s, v);
      break;
   }
   return true;
}

static void
finish(const acc_t *a, state_t *s, bson_t *out)
{
   bson_value_t r = {0};

   switch (a->kind) {
   case A_SUM:
      tm_value_set_number(s->count ? s->type : BSON_TYPE_INT32, s->sum, &r);
      bson_append_value(out, a->field, -1, &r);
      break;
   case A_AVG:
      if (!s->count) {
         bson_append_null(out, a->field, -1);
      } else {
         tm_value_set_number(s->type == BSON_TYPE_DECIMAL128 ? s->type : BSON_TYPE_DOUBLE,
                             s->sum / (long double)s->count, &r);
         bson_append_value(out, a->field, -1, &r);
      }
      break;
   case A_PUSH:
   case A_ADD_TO_SET:
      bson_append_array(out, a->field, -1, &s->arr);
      break;
   default:
      if (s->has && s->val.value_type != BSON_TYPE_EOD) {
         bson_append_value(out, a->field, -1, &s->val);
      } else {
         bson_append_null(out, a->field, -1);
      }
   }
}

static void
group_free(group_t *g, size_t n_acc)
{
   for (size_t i = 0; i < n_acc; i++) {
      if (g->states[i].has) {
         bson_value_destroy(&g->states[i].val);
      }
      bson_destroy(&g->states[i].arr);
   }
   bson_free(g->states);
   bson_value_destroy(&g->key);
}

/* Finds or adds the group of `key` (taken over). Linear: a test server's groups are few. */
static group_t *
group_for(group_t **groups, size_t *n, bson_value_t *key, size_t n_acc)
{
   group_t *g;

   for (size_t i = 0; i < *n; i++) {
      if (tm_value_equal(&(*groups)[i].key, key)) {
         bson_value_destroy(key);
         return &(*groups)[i];
      }
   }
   *groups = bson_realloc(*groups, (*n + 1) * sizeof(group_t));
   g = &(*groups)[(*n)++];
   g->key = *key;
   g->states = bson_malloc0((n_acc + 1) * sizeof(state_t));
   for (size_t i = 0; i < n_acc; i++) {
      bson_init(&g->states[i].arr);
      g->states[i].type = BSON_TYPE_EOD;
   }
   return g;
}

static bool
group_docs(const tm_expr_t *id, const acc_t *accs, size_t n_acc, tm_docs_t *docs, group_t **groups,
           size_t *n_groups, bson_error_t *error)
{
   for (size_t d = 0; d < docs->n; d++) {
      bson_value_t key, v;
      group_t *g;
      if (!tm_expr_eval(id, docs->docs[d], &key, error)) {
         return false;
      }
      if (key.value_type == BSON_TYPE_EOD) {
         key.value_type = BSON_TYPE_NULL; /* a missing key groups with null */
      }
      g = group_for(groups, n_groups, &key, n_acc);
      for (size_t i = 0; i < n_acc; i++) {
         if (!tm_expr_eval(accs[i].expr, docs->docs[d], &v, error)) {
            return false;
         }
         bool ok = accumulate(&accs[i], &g->states[i], &v, error);
         bson_value_destroy(&v);
         if (!ok) {
            return false;
         }
      }
   }
   return true;
}

typedef struct {
   tm_expr_t *id;
   acc_t *accs;
   size_t n_acc;
} group_spec_t;

void
tm_stage_group_destroy(void *state)
{
   group_spec_t *g = state;

   if (!g) {
      return;
   }
   for (size_t i = 0; i < g->n_acc; i++) {
      tm_expr_destroy(g->accs[i].expr);
   }
   bson_free(g->accs);
   tm_expr_destroy(g->id);
   bson_free(g);
}

bool
tm_stage_group_parse(const char *name, const bson_value_t *spec, void **state, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   group_spec_t *g;

   if (spec->value_type != BSON_TYPE_DOCUMENT || !tm_value_as_bson(spec, &doc)) {
      return tm_error_set(error, 15947, "a group's fields must be specified in an object");
   }
   g = bson_malloc0(sizeof *g);
   *state = g;
   g->accs = bson_malloc0((bson_count_keys(&doc) + 1) * sizeof(acc_t));
   bson_iter_init(&it, &doc);
   while (bson_iter_next(&it)) {
      if (strcmp(bson_iter_key(&it), "_id") == 0) {
         if (!(g->id = tm_expr_parse(bson_iter_value(&it), error))) {
            return false;
         }
      } else if (!parse_acc(&g->accs[g->n_acc++], bson_iter_key(&it), bson_iter_value(&it),
                            error)) {
         return false;
      }
   }
   if (!g->id) {
      return tm_error_set(error, 15955, "a group specification must include an _id");
   }
   return true;
}

bool
tm_stage_group_run_from(const void *state, const tm_docs_t *in, tm_docs_t *out, bson_error_t *error)
{
   const group_spec_t *spec = state;
   size_t n_groups = 0;
   group_t *groups = NULL;
   tm_docs_t view = *in; /* group_docs() only reads the documents */
   bool ok = group_docs(spec->id, spec->accs, spec->n_acc, &view, &groups, &n_groups, error);

   if (ok) {
      if (out == in) {
         tm_docs_clear(out);
      }
      for (size_t g = 0; g < n_groups; g++) {
         bson_t *doc = bson_new();
         bson_append_value(doc, "_id", 3, &groups[g].key);
         for (size_t i = 0; i < spec->n_acc; i++) {
            finish(&spec->accs[i], &groups[g].states[i], doc);
         }
         tm_docs_push(out, doc);
      }
   }
   for (size_t g = 0; g < n_groups; g++) {
      group_free(&groups[g], spec->n_acc);
   }
   bson_free(groups);
   return ok;
}

bool
tm_stage_group_run(const void *state, tm_docs_t *docs, bson_error_t *error)
{
   return tm_stage_group_run_from(state, docs, docs, error);
}
