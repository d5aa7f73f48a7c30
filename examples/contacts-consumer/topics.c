/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Topic filters per partition (topics.h).
 */
#include "topics.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bson/bson.h>

#define PLACEHOLDER "{partition}"

static bool
read_number(const char **p, long *v)
{
   char *end;

   if (**p < '0' || **p > '9')
      return false;
   errno = 0;
   *v = strtol(*p, &end, 10);
   *p = end;
   return !errno && *v < TOPICS_MAX_PARTITIONS;
}

/* Marks the partitions of `set` in `in`; false on a malformed set or a repeated partition. */
static bool
parse_set(const char *set, bool *in)
{
   const char *p = set;

   do {
      long lo, hi;
      if (!read_number(&p, &lo))
         return false;
      hi = lo;
      if (*p == '-') {
         p++;
         if (!read_number(&p, &hi) || hi < lo)
            return false;
      }
      for (long i = lo; i <= hi; i++) {
         if (in[i])
            return false;
         in[i] = true;
      }
   } while (*p++ == ',');
   return p[-1] == '\0';
}

/* `filter` with its first "{partition}" replaced by `part`. */
static char *
one_filter(const char *filter, long part)
{
   const char *at = strstr(filter, PLACEHOLDER);
   return bson_strdup_printf("%.*s%ld%s", (int)(at - filter), filter, part,
                             at + strlen(PLACEHOLDER));
}

char **
topics_expand(const char *filter, const char *set, size_t *n, char *err, size_t errlen)
{
   bool *in;
   char **out;
   const char *at = strstr(filter, PLACEHOLDER);

   *n = 0;
   if (!set) {
      if (at) {
         snprintf(err, errlen, "the topic filter holds {partition}: give --partitions too");
         return NULL;
      }
      out = bson_malloc0(2 * sizeof *out);
      out[(*n)++] = bson_strdup(filter);
      return out;
   }
   if (!at || strstr(at + 1, PLACEHOLDER)) {
      snprintf(err, errlen,
               "--partitions needs a topic filter with one {partition}, e.g. "
               "outbox/contacts/{partition}/#");
      return NULL;
   }
   in = bson_malloc0(TOPICS_MAX_PARTITIONS * sizeof *in);
   if (!parse_set(set, in)) {
      snprintf(err, errlen,
               "--partitions '%s': expected numbers and ranges below %d, each "
               "once, e.g. 0-7 or 0,2,5-6",
               set, TOPICS_MAX_PARTITIONS);
      bson_free(in);
      return NULL;
   }
   out = bson_malloc0((TOPICS_MAX_PARTITIONS + 1) * sizeof *out);
   for (long i = 0; i < TOPICS_MAX_PARTITIONS; i++) {
      if (in[i])
         out[(*n)++] = one_filter(filter, i);
   }
   bson_free(in);
   return out;
}

void
topics_free(char **topics)
{
   for (size_t i = 0; topics && topics[i]; i++)
      bson_free(topics[i]);
   bson_free(topics);
}
