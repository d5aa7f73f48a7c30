/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Operands of single query operators: regular expressions, $in lists, $type codes, $size,
 * $mod. Split from match-parse.c, which builds the tree.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "match-private.h"

/* Rewrites a PCRE-flavoured pattern for glibc's ERE, which knows \w \s \b but not \d; with
 * `extended` (option x) unescaped whitespace and #-comments are dropped. */
static char *
translate(const char *pattern, bool extended)
{
   char *buf = bson_malloc(strlen(pattern) * 6 + 1);
   char *o = buf;

   for (const char *c = pattern; *c; c++) {
      if (c[0] == '\\' && (c[1] == 'd' || c[1] == 'D')) {
         const char *rep = c[1] == 'd' ? "[0-9]" : "[^0-9]";
         memcpy(o, rep, strlen(rep));
         o += strlen(rep);
         c++;
      } else if (c[0] == '\\' && c[1]) {
         *o++ = *c++;
         *o++ = *c;
      } else if (extended && (*c == ' ' || *c == '\t' || *c == '\n' || *c == '\r')) {
         continue;
      } else if (extended && *c == '#') {
         while (c[1] && c[1] != '\n') {
            c++;
         }
      } else {
         *o++ = *c;
      }
   }
   *o = '\0';
   return buf;
}

bool
tm_regex_compile(regex_t *re, const char *pattern, const char *options, bson_error_t *error)
{
   int flags = REG_EXTENDED | REG_NOSUB;
   bool extended = false;
   char *buf;
   int rc;

   for (const char *c = options ? options : ""; *c; c++) {
      if (*c == 'i') {
         flags |= REG_ICASE;
      } else if (*c == 'm') {
         flags |= REG_NEWLINE;
      } else if (*c == 'x') {
         extended = true;
      } else if (*c != 's' && *c != 'u') {
         return tm_error_set(error, 51108, "invalid flag in regex options: %c", *c);
      }
   }
   /* A leading (?i) is PCRE's inline form of the i option. */
   if (strncmp(pattern, "(?i)", 4) == 0) {
      flags |= REG_ICASE;
      buf = translate(pattern + 4, extended);
   } else {
      buf = translate(pattern, extended);
   }
   rc = regcomp(re, buf, flags);
   bson_free(buf);
   if (rc != 0) {
      return tm_error_set(error, 51091, "Regular expression is invalid: %s", pattern);
   }
   return true;
}

regex_t *
tm_regex_new(const char *pattern, const char *options, bson_error_t *error)
{
   regex_t *re = bson_malloc0(sizeof *re);

   if (!tm_regex_compile(re, pattern, options, error)) {
      bson_free(re);
      return NULL;
   }
   return re;
}

/* Orders strings and symbols (one bracket, one layout) as tm_value_compare does. */
int
tm_string_order(const void *a, const void *b)
{
   const bson_value_t *x = a, *y = b;
   uint32_t lx = x->value.v_utf8.len, ly = y->value.v_utf8.len;
   int r = memcmp(x->value.v_utf8.str, y->value.v_utf8.str, lx < ly ? lx : ly);
   return r != 0 ? r : (lx < ly ? -1 : lx > ly);
}

/* Keeps the string operands of $in sorted, so that matching a string is a binary search:
 * the relay clears events with {$pull: {events: {id: {$in: [ids]}}}}, which compared every
 * element of the array with every id. */
static void
sort_in_strings(tm_mnode_t *n)
{
   n->in_strs = bson_malloc0((n->in_n + 1) * sizeof(bson_value_t));
   for (size_t i = 0; i < n->in_n; i++) {
      if (tm_type_bracket(n->in_vals[i].value_type) == TM_BRACKET_STRING) {
         n->in_strs[n->in_strs_n++] = n->in_vals[i];
      }
   }
   qsort(n->in_strs, n->in_strs_n, sizeof(bson_value_t), tm_string_order);
}

bool
tm_match_parse_in(tm_mnode_t *n, const char *op, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;
   size_t i = 0;

   if (n->operand.value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(&n->operand, &arr)) {
      return tm_error_set(error, 2, "%s needs an array", op);
   }
   n->in_n = bson_count_keys(&arr);
   n->in_vals = bson_malloc0((n->in_n + 1) * sizeof(bson_value_t));
   n->in_re = bson_malloc0((n->in_n + 1) * sizeof(regex_t *));
   bson_iter_init(&it, &arr);
   for (; bson_iter_next(&it) && i < n->in_n; i++) {
      n->in_vals[i] = *bson_iter_value(&it);
      if (BSON_ITER_HOLDS_DOCUMENT(&it)) {
         bson_iter_t sub;
         if (bson_iter_recurse(&it, &sub) && bson_iter_next(&sub) &&
             bson_iter_key(&sub)[0] == '$') {
            return tm_error_set(error, 2, "cannot nest $ under %s", op);
         }
      }
      if (BSON_ITER_HOLDS_REGEX(&it)) {
         n->in_re[i] = tm_regex_new(n->in_vals[i].value.v_regex.regex,
                                    n->in_vals[i].value.v_regex.options, error);
         if (!n->in_re[i]) {
            return false;
         }
         n->in_n_re++;
      }
   }
   sort_in_strings(n);
   return true;
}

static const struct {
   const char *name;
   int32_t code;
} type_aliases[] = {
   {"double", 1},      {"string", 2},     {"object", 3},
   {"array", 4},       {"binData", 5},    {"undefined", 6},
   {"objectId", 7},    {"bool", 8},       {"date", 9},
   {"null", 10},       {"regex", 11},     {"dbPointer", 12},
   {"javascript", 13}, {"symbol", 14},    {"javascriptWithScope", 15},
   {"int", 16},        {"timestamp", 17}, {"long", 18},
   {"decimal", 19},    {"minKey", -1},    {"maxKey", 127},
   {"number", 0},
};

bool
tm_type_alias(const char *name, int32_t *code)
{
   for (size_t i = 0; i < sizeof type_aliases / sizeof type_aliases[0]; i++) {
      if (strcmp(type_aliases[i].name, name) == 0) {
         *code = type_aliases[i].code;
         return true;
      }
   }
   return false;
}

static bool
add_type(tm_mnode_t *n, const bson_value_t *v, bson_error_t *error)
{
   if (n->n_types == sizeof n->types / sizeof n->types[0]) {
      return tm_error_set(error, 2, "too many types in $type");
   }
   if (v->value_type == BSON_TYPE_UTF8) {
      if (!tm_type_alias(v->value.v_utf8.str, &n->types[n->n_types])) {
         return tm_error_set(error, 2, "Unknown type name alias: %s", v->value.v_utf8.str);
      }
      n->n_types++;
      return true;
   }
   if (tm_value_is_number(v)) {
      double d = tm_value_as_double(v);
      if (d != floor(d) || ((d < 1 || d > 19) && d != -1 && d != 127)) {
         return tm_error_set(error, 2, "Invalid numerical type code: %g", d);
      }
      n->types[n->n_types++] = (int32_t)d;
      return true;
   }
   return tm_error_set(error, 14, "type must be represented as a number or a string");
}

bool
tm_match_parse_type(tm_mnode_t *n, bson_error_t *error)
{
   bson_t arr;
   bson_iter_t it;

   if (n->operand.value_type != BSON_TYPE_ARRAY) {
      return add_type(n, &n->operand, error);
   }
   if (!tm_value_as_bson(&n->operand, &arr) || !bson_iter_init(&it, &arr)) {
      return tm_error_set(error, 2, "bad $type array");
   }
   while (bson_iter_next(&it)) {
      if (!add_type(n, bson_iter_value(&it), error)) {
         return false;
      }
   }
   return true;
}

bool
tm_match_parse_size(tm_mnode_t *n, bson_error_t *error)
{
   double d;

   if (!tm_value_is_number(&n->operand)) {
      return tm_error_set(error, 2, "$size needs a number");
   }
   d = tm_value_as_double(&n->operand);
   if (d != floor(d)) {
      return tm_error_set(error, 2, "$size must be a whole number");
   }
   if (d < 0) {
      return tm_error_set(error, 2, "$size may not be negative");
   }
   n->size_or_divisor = (int64_t)d;
   return true;
}

bool
tm_match_parse_mod(tm_mnode_t *n, bson_error_t *error)
{
   bson_t arr;
   bson_value_t d, r;

   if (n->operand.value_type != BSON_TYPE_ARRAY || !tm_value_as_bson(&n->operand, &arr)) {
      return tm_error_set(error, 2, "malformed mod, needs to be an array");
   }
   if (bson_count_keys(&arr) != 2 || !tm_path_get(&arr, "0", &d) || !tm_path_get(&arr, "1", &r) ||
       !tm_value_is_number(&d) || !tm_value_is_number(&r)) {
      return tm_error_set(error, 2, "malformed mod, not enough elements");
   }
   n->size_or_divisor = (int64_t)tm_value_as_double(&d);
   n->remainder = (int64_t)tm_value_as_double(&r);
   if (n->size_or_divisor == 0) {
      return tm_error_set(error, 2, "divisor cannot be 0");
   }
   return true;
}
