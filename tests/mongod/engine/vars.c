/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * User variables of aggregation expressions ($$name): the names in scope while an
 * expression is parsed (MongoDB refuses an undefined variable at parse time, 17276), and
 * their values while it is evaluated. Scopes nest strictly (an expression's `as` / `vars`,
 * a $lookup's `let` around its sub-pipeline), so each is a small stack. The stacks are
 * per thread and hold only borrowed pointers that live for one parse or one evaluation
 * call: they cross the matcher and pipeline layers (a $lookup sub-pipeline's $match $expr
 * reading the $lookup's `let`) without threading a context through every function.
 */
#include <string.h>

#include "expr.h"

#define MAX_DEPTH 128

typedef struct {
   const char *name;
   const bson_value_t *value;
} binding_t;

static _Thread_local const char *declared[MAX_DEPTH];
static _Thread_local size_t n_declared;
static _Thread_local binding_t bound[MAX_DEPTH];
static _Thread_local size_t n_bound;

static bool
too_deep(bson_error_t *error)
{
   return tm_error_set(error, 2,
                       "variables nested more than %d deep are not supported by "
                       "test-mongod",
                       MAX_DEPTH);
}

bool
tm_vars_check_name(const char *name, bson_error_t *error)
{
   const unsigned char *s = (const unsigned char *)name;
   if (!*s) {
      return tm_error_set(error, 16869, "empty variable names are not allowed");
   }
   if (!((*s >= 'a' && *s <= 'z') || *s >= 0x80)) {
      return tm_error_set(error, 16870,
                          "'%s' starts with an invalid character for a user "
                          "variable name",
                          name);
   }
   for (s++; *s; s++) {
      if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
            *s == '_' || *s >= 0x80)) {
         return tm_error_set(error, 16871,
                             "'%s' contains an invalid character for a variable "
                             "name: '%c'",
                             name, *s);
      }
   }
   return true;
}

bool
tm_vars_declare(const char *name, bson_error_t *error)
{
   if (n_declared == MAX_DEPTH) {
      return too_deep(error);
   }
   declared[n_declared++] = name;
   return true;
}

void
tm_vars_undeclare(size_t count)
{
   n_declared = count > n_declared ? 0 : n_declared - count;
}

bool
tm_vars_is_declared(const char *name, size_t len)
{
   for (size_t i = n_declared; i-- > 0;) {
      if (strlen(declared[i]) == len && memcmp(declared[i], name, len) == 0) {
         return true;
      }
   }
   return false;
}

bool
tm_vars_bind(const char *name, const bson_value_t *value, bson_error_t *error)
{
   if (n_bound == MAX_DEPTH) {
      return too_deep(error);
   }
   bound[n_bound].name = name;
   bound[n_bound].value = value;
   n_bound++;
   return true;
}

void
tm_vars_unbind(size_t count)
{
   n_bound = count > n_bound ? 0 : n_bound - count;
}

const bson_value_t *
tm_vars_lookup(const char *name)
{
   for (size_t i = n_bound; i-- > 0;) {
      if (strcmp(bound[i].name, name) == 0) {
         return bound[i].value;
      }
   }
   return NULL;
}
