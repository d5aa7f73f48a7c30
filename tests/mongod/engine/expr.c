/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Parsing and evaluating aggregation expressions (see expr.h).
 */
#include <string.h>

#include "expr.h"

void
tm_value_dup(const bson_value_t *v, bson_value_t *out)
{
   if (v->value_type == BSON_TYPE_EOD) {
      memset(out, 0, sizeof *out);
      return;
   }
   bson_value_copy(v, out);
}

void
tm_value_from_bson(bson_t *b, bson_type_t type, bson_value_t *out)
{
   uint32_t len = b->len;
   uint8_t *data = bson_destroy_with_steal(b, true, &len);

   out->value_type = type;
   out->value.v_doc.data = data;
   out->value.v_doc.data_len = len;
}

bool
tm_value_truthy(const bson_value_t *v)
{
   switch (v->value_type) {
   case BSON_TYPE_EOD:
   case BSON_TYPE_NULL:
   case BSON_TYPE_UNDEFINED:
      return false;
   case BSON_TYPE_BOOL:
      return v->value.v_bool;
   case BSON_TYPE_INT32:
   case BSON_TYPE_INT64:
   case BSON_TYPE_DOUBLE:
   case BSON_TYPE_DECIMAL128:
      return tm_value_as_double(v) != 0;
   default:
      return true;
   }
}

void
tm_expr_destroy(tm_expr_t *e)
{
   if (!e) {
      return;
   }
   for (size_t i = 0; i < e->n_args; i++) {
      tm_expr_destroy(e->args[i]);
      if (e->keys) {
         bson_free(e->keys[i]);
      }
   }
   bson_free(e->args);
   bson_free(e->keys);
   bson_free(e->var);
   tm_path_destroy(&e->path);
   bson_free(e);
}

tm_expr_t *
tm_expr_new(int kind)
{
   tm_expr_t *e = bson_malloc0(sizeof *e);

   e->kind = (ekind_t)kind;
   return e;
}

void
tm_expr_add_arg(tm_expr_t *e, tm_expr_t *arg, const char *key)
{
   e->args = bson_realloc(e->args, (e->n_args + 1) * sizeof(tm_expr_t *));
   if (key) {
      e->keys = bson_realloc(e->keys, (e->n_args + 1) * sizeof(char *));
      e->keys[e->n_args] = bson_strdup(key);
   }
   e->args[e->n_args++] = arg;
}

static tm_expr_t *
parse_string(const bson_value_t *spec, bson_error_t *error)
{
   const char *s = spec->value.v_utf8.str;
   tm_expr_t *e;

   if (s[0] != '$') {
      e = tm_expr_new(E_LITERAL);
      e->literal = *spec;
      return e;
   }
   if (strcmp(s, "$$REMOVE") == 0) {
      return tm_expr_new(E_REMOVE);
   }
   e = tm_expr_new(E_FIELD);
   if (strncmp(s, "$$", 2) == 0) {
      const char *rest = strchr(s, '.');
      size_t len = rest ? (size_t)(rest - s) : strlen(s);
      if (len == 5 && strncmp(s, "$$NOW", 5) == 0) {
         e->sysvar = TM_SYSVAR_NOW;
      } else if (len == 14 && strncmp(s, "$$CLUSTER_TIME", 14) == 0) {
         e->sysvar = TM_SYSVAR_CLUSTER_TIME;
      } else if (tm_vars_is_declared(s + 2, len - 2)) {
         e->kind = E_VAR;
         e->var = bson_strndup(s + 2, len - 2);
      } else if (!((len == 6 && strncmp(s, "$$ROOT", 6) == 0) ||
                   (len == 9 && strncmp(s, "$$CURRENT", 9) == 0))) {
         tm_error_set(error, 17276, "Use of undefined variable: %.*s", (int)len - 2, s + 2);
         tm_expr_destroy(e);
         return NULL;
      }
      if (rest) {
         tm_path_parse(rest + 1, &e->path);
      }
      return e;
   }
   if (!tm_path_parse(s + 1, &e->path)) {
      tm_error_set(error, 15998, "FieldPath field names may not be empty strings.");
      tm_expr_destroy(e);
      return NULL;
   }
   return e;
}

/* {$cond: {if, then, else}} is the same as {$cond: [if, then, else]}. */
static bool
parse_cond_doc(tm_expr_t *e, const bson_value_t *arg, bson_error_t *error)
{
   static const char *parts[] = {"if", "then", "else"};
   bson_t doc;

   tm_value_as_bson(arg, &doc);
   for (size_t i = 0; i < 3; i++) {
      bson_iter_t it;
      tm_expr_t *sub;
      if (!tm_bson_find(&doc, parts[i], &it)) {
         return tm_error_set(error, 17080, "Missing '%s' parameter to $cond", parts[i]);
      }
      if (!(sub = tm_expr_parse(bson_iter_value(&it), error))) {
         return false;
      }
      tm_expr_add_arg(e, sub, NULL);
   }
   return true;
}

static tm_expr_t *
parse_operator(const char *name, const bson_value_t *arg, bson_error_t *error)
{
   tm_expr_t *e = tm_expr_new(E_OP);
   int min = 0, max = -1;
   size_t n = 0;

   e->op = name;
   if (tm_expr_is_disabled(name)) {
      tm_error_set(error, 168, "Unrecognized expression '%s'", name);
      goto fail;
   }
   if (strcmp(name, "$literal") == 0) {
      e->kind = E_LITERAL;
      e->literal = *arg;
      return e;
   }
   if (tm_expr_is_scoped(name)) {
      tm_expr_destroy(e);
      return tm_expr_parse_scoped(name, arg, error);
   }
   e->fn = tm_expr_op_lookup(name, &min, &max);
   if (!e->fn) {
      e->fn = tm_expr_op_lookup_more(name, &min, &max);
   }
   if (!e->fn && strcmp(name, "$cond") != 0 && strcmp(name, "$and") != 0 &&
       strcmp(name, "$or") != 0 && strcmp(name, "$ifNull") != 0) {
      if (tm_expr_op_known_to_mongodb(name)) {
         tm_error_set(error, 2, "Expression %s is not supported by test-mongod", name);
      } else {
         tm_error_set(error, 168, "Unrecognized expression '%s'", name);
      }
      goto fail;
   }
   if (strcmp(name, "$cond") == 0 && arg->value_type == BSON_TYPE_DOCUMENT) {
      if (!parse_cond_doc(e, arg, error)) {
         goto fail;
      }
      return e;
   }
   if (strcmp(name, "$cond") == 0) {
      min = max = 3;
   }
   if (arg->value_type == BSON_TYPE_ARRAY) {
      bson_t arr;
      bson_iter_t it;
      tm_value_as_bson(arg, &arr);
      bson_iter_init(&it, &arr);
      while (bson_iter_next(&it)) {
         tm_expr_t *sub = tm_expr_parse(bson_iter_value(&it), error);
         if (!sub) {
            goto fail;
         }
         tm_expr_add_arg(e, sub, NULL);
         n++;
      }
   } else {
      tm_expr_t *sub = tm_expr_parse(arg, error);
      if (!sub) {
         goto fail;
      }
      tm_expr_add_arg(e, sub, NULL);
      n = 1;
   }
   if ((int)n < min || (max >= 0 && (int)n > max)) {
      if (min == max) {
         tm_error_set(error, 16020,
                      "Expression %s takes exactly %d arguments. %zu were passed "
                      "in.",
                      name, min, n);
      } else if (max < 0) {
         tm_error_set(error, 16020,
                      "Expression %s takes at least %d arguments. %zu were passed "
                      "in.",
                      name, min, n);
      } else {
         tm_error_set(error, 28667,
                      "Expression %s takes at least %d arguments, and at most %d, "
                      "but %zu were passed in.",
                      name, min, max, n);
      }
      goto fail;
   }
   return e;
fail:
   tm_expr_destroy(e);
   return NULL;
}

static tm_expr_t *
parse_document(const bson_value_t *spec, bson_error_t *error)
{
   bson_t doc;
   bson_iter_t it;
   tm_expr_t *e;

   tm_value_as_bson(spec, &doc);
   bson_iter_init(&it, &doc);
   if (bson_iter_next(&it) && bson_iter_key(&it)[0] == '$') {
      if (bson_count_keys(&doc) != 1) {
         tm_error_set(error, 15983,
                      "an expression specification must contain exactly one field, the name "
                      "of the expression. Found %u fields",
                      bson_count_keys(&doc));
         return NULL;
      }
      return parse_operator(bson_iter_key(&it), bson_iter_value(&it), error);
   }
   e = tm_expr_new(E_OBJECT);
   bson_iter_init(&it, &doc);
   while (bson_iter_next(&it)) {
      tm_expr_t *sub;
      if (strchr(bson_iter_key(&it), '.') || bson_iter_key(&it)[0] == '$') {
         bool dollar = bson_iter_key(&it)[0] == '$';
         tm_error_set(error, dollar ? 16410 : 16412, "FieldPath field names may not %s.",
                      dollar ? "start with '$'" : "contain '.'");
         tm_expr_destroy(e);
         return NULL;
      }
      if (!(sub = tm_expr_parse(bson_iter_value(&it), error))) {
         tm_expr_destroy(e);
         return NULL;
      }
      tm_expr_add_arg(e, sub, bson_iter_key(&it));
   }
   return e;
}

tm_expr_t *
tm_expr_parse(const bson_value_t *spec, bson_error_t *error)
{
   tm_expr_t *e;

   switch (spec->value_type) {
   case BSON_TYPE_UTF8:
      return parse_string(spec, error);
   case BSON_TYPE_DOCUMENT:
      return parse_document(spec, error);
   case BSON_TYPE_ARRAY: {
      bson_t arr;
      bson_iter_t it;
      e = tm_expr_new(E_ARRAY);
      tm_value_as_bson(spec, &arr);
      bson_iter_init(&it, &arr);
      while (bson_iter_next(&it)) {
         tm_expr_t *sub = tm_expr_parse(bson_iter_value(&it), error);
         if (!sub) {
            tm_expr_destroy(e);
            return NULL;
         }
         tm_expr_add_arg(e, sub, NULL);
      }
      return e;
   }
   default:
      e = tm_expr_new(E_LITERAL);
      e->literal = *spec;
      return e;
   }
}

static void
path_eval(const bson_value_t *v, const tm_path_t *p, size_t i, bson_value_t *out)
{
   bson_t view;
   bson_iter_t it;

   memset(out, 0, sizeof *out);
   if (i == p->n) {
      tm_value_dup(v, out);
      return;
   }
   if (v->value_type == BSON_TYPE_DOCUMENT && tm_value_as_bson(v, &view)) {
      if (tm_bson_find(&view, p->parts[i], &it)) {
         path_eval(bson_iter_value(&it), p, i + 1, out);
      }
      return;
   }
   if (v->value_type == BSON_TYPE_ARRAY && tm_value_as_bson(v, &view)) {
      /* A path through an array yields the array of what each element yields. */
      bson_t arr = BSON_INITIALIZER;
      uint32_t k = 0;
      bson_iter_init(&it, &view);
      while (bson_iter_next(&it)) {
         bson_value_t sub;
         path_eval(bson_iter_value(&it), p, i, &sub);
         if (sub.value_type != BSON_TYPE_EOD) {
            char buf[16];
            const char *key;
            bson_uint32_to_string(k++, &key, buf, sizeof buf);
            bson_append_value(&arr, key, -1, &sub);
            bson_value_destroy(&sub);
         }
      }
      tm_value_from_bson(&arr, BSON_TYPE_ARRAY, out);
   }
}

static bool
eval_lazy(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bson_value_t v;
   bool is_and = strcmp(e->op, "$and") == 0;

   if (strcmp(e->op, "$cond") == 0) {
      if (!tm_expr_eval(e->args[0], root, &v, error)) {
         return false;
      }
      bool t = tm_value_truthy(&v);
      bson_value_destroy(&v);
      return tm_expr_eval(e->args[t ? 1 : 2], root, out, error);
   }
   if (strcmp(e->op, "$ifNull") == 0) {
      for (size_t i = 0; i < e->n_args; i++) {
         if (!tm_expr_eval(e->args[i], root, out, error)) {
            return false;
         }
         if (i + 1 == e->n_args ||
             (out->value_type != BSON_TYPE_EOD && out->value_type != BSON_TYPE_NULL &&
              out->value_type != BSON_TYPE_UNDEFINED)) {
            return true;
         }
         bson_value_destroy(out);
      }
      return true;
   }
   /* $and / $or short-circuit. */
   out->value_type = BSON_TYPE_BOOL;
   out->value.v_bool = is_and;
   for (size_t i = 0; i < e->n_args; i++) {
      if (!tm_expr_eval(e->args[i], root, &v, error)) {
         return false;
      }
      bool t = tm_value_truthy(&v);
      bson_value_destroy(&v);
      if (t != is_and) {
         out->value.v_bool = !is_and;
         break;
      }
   }
   return true;
}

static bool
eval_op(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bson_value_t *vals;
   bool ok = true;
   size_t done = 0;

   if (!e->fn) {
      return eval_lazy(e, root, out, error);
   }
   vals = bson_malloc0((e->n_args + 1) * sizeof(bson_value_t));
   for (; done < e->n_args && ok; done++) {
      ok = tm_expr_eval(e->args[done], root, &vals[done], error);
   }
   if (ok) {
      ok = e->fn(vals, e->n_args, out, error);
   }
   for (size_t i = 0; i < done; i++) {
      bson_value_destroy(&vals[i]);
   }
   bson_free(vals);
   return ok;
}

static bool
eval_container(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bson_t b = BSON_INITIALIZER;
   char buf[16];
   const char *key;

   for (size_t i = 0; i < e->n_args; i++) {
      bson_value_t v;
      if (!tm_expr_eval(e->args[i], root, &v, error)) {
         bson_destroy(&b);
         return false;
      }
      if (e->kind == E_OBJECT) {
         if (v.value_type != BSON_TYPE_EOD) {
            bson_append_value(&b, e->keys[i], -1, &v);
         }
      } else {
         bson_uint32_to_string((uint32_t)i, &key, buf, sizeof buf);
         if (v.value_type == BSON_TYPE_EOD) {
            bson_append_null(&b, key, -1);
         } else {
            bson_append_value(&b, key, -1, &v);
         }
      }
      bson_value_destroy(&v);
   }
   tm_value_from_bson(&b, e->kind == E_OBJECT ? BSON_TYPE_DOCUMENT : BSON_TYPE_ARRAY, out);
   return true;
}

bool
tm_expr_eval(const tm_expr_t *e, const bson_t *root, bson_value_t *out, bson_error_t *error)
{
   bson_value_t r;
   bool ok = true;

   memset(out, 0, sizeof *out);
   switch (e->kind) {
   case E_LITERAL:
      tm_value_dup(&e->literal, out);
      break;
   case E_REMOVE:
      break;
   case E_FIELD:
      r.value_type = BSON_TYPE_DOCUMENT;
      r.value.v_doc.data = (uint8_t *)bson_get_data(root);
      r.value.v_doc.data_len = root->len;
      if (e->sysvar == TM_SYSVAR_NOW) {
         tm_expr_now(&r);
      } else if (e->sysvar == TM_SYSVAR_CLUSTER_TIME && !tm_expr_cluster_time(&r, error)) {
         ok = false;
         break;
      }
      path_eval(&r, &e->path, 0, out);
      break;
   case E_VAR: {
      const bson_value_t *v = tm_vars_lookup(e->var);
      if (v) {
         path_eval(v, &e->path, 0, out);
      }
      break;
   }
   case E_SCOPED:
      ok = tm_expr_eval_scoped(e, root, out, error);
      break;
   case E_OBJECT:
   case E_ARRAY:
      ok = eval_container(e, root, out, error);
      break;
   default:
      ok = eval_op(e, root, out, error);
      break;
   }
   if (!ok) {
      bson_value_destroy(out);
      memset(out, 0, sizeof *out);
   }
   return ok;
}
