/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Error reporting and small shared helpers of the engine.
 */
#include <stdarg.h>
#include <stdio.h>

#include "engine-private.h"

bool
tm_error_set(bson_error_t *error, int32_t code, const char *fmt, ...)
{
   va_list ap;

   if (!error) {
      return false;
   }
   error->domain = TM_ERROR_DOMAIN;
   error->code = (uint32_t)code;
   va_start(ap, fmt);
   vsnprintf(error->message, sizeof error->message, fmt, ap);
   va_end(ap);
   return false;
}

bool
tm_error_add_context(bson_error_t *error, const char *context)
{
   char msg[sizeof error->message];

   if (!error) {
      return false;
   }
   bson_strncpy(msg, error->message, sizeof msg);
   bson_snprintf(error->message, sizeof error->message, "%s :: caused by :: %s", context, msg);
   return false;
}

void
tm_docs_free(bson_t **docs, size_t n)
{
   if (!docs) {
      return;
   }
   for (size_t i = 0; i < n; i++) {
      bson_destroy(docs[i]);
   }
   bson_free(docs);
}
