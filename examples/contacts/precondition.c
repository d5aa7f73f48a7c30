/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * If-Match (RFC 9110 13.1.1): "*" or a list of entity tags, possibly over several field lines,
 * compared strongly with the contact's version.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http-private.h"

/* One entity tag at *@p ([W/]"opaque"); advances *@p past it. A strong tag of digits is
 * recorded as a version. */
static bool
read_tag(const char **p, if_match_t *im)
{
   const char *q = *p;
   bool weak = q[0] == 'W' && q[1] == '/';
   char *end;

   q += weak ? 2 : 0;
   if (*q != '"')
      return false;
   const char *tag = ++q;
   /* etagc = %x21 / %x23-7E / obs-text */
   while (*q && *q != '"' && ((unsigned char)*q >= 0x80 || (*q >= 0x21 && *q != 0x7f)))
      q++;
   if (*q != '"' || ++im->n_tags > IF_MATCH_MAX_TAGS)
      return false;
   *p = q + 1;
   if (weak || q == tag || strspn(tag, "0123456789") != (size_t)(q - tag) || q - tag > 18)
      return true; /* valid, but never one of our strong tags */
   errno = 0;
   int64_t v = strtoll(tag, &end, 10);
   if (!errno && v > 0)
      im->versions[im->n++] = v;
   return true;
}

/* One If-Match field line: "*" alone, or entity tags separated by commas (empty list
 * elements are allowed, RFC 9110 5.6.1). */
static void
read_if_match_value(const char *v, if_match_t *im)
{
   const char *p = v + strspn(v, " \t");

   if (*p == '*' && p[1 + strspn(p + 1, " \t")] == '\0' && im->kind == IF_MATCH_MISSING) {
      im->kind = IF_MATCH_ANY;
      return;
   }
   if (im->kind == IF_MATCH_ANY) {
      im->kind = IF_MATCH_BAD; /* "*" cannot be combined with tags */
      return;
   }
   im->kind = IF_MATCH_LIST;
   for (;;) {
      p += strspn(p, " \t,");
      if (!*p)
         return;
      if (!read_tag(&p, im)) {
         im->kind = IF_MATCH_BAD;
         return;
      }
      p += strspn(p, " \t");
      if (*p && *p != ',') {
         im->kind = IF_MATCH_BAD;
         return;
      }
   }
}

static enum MHD_Result
each_if_match(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
   if_match_t *im = cls;

   if (!strcasecmp(key, "If-Match") && im->kind != IF_MATCH_BAD)
      read_if_match_value(value ? value : "", im);
   return MHD_YES;
}

void
if_match_read(struct MHD_Connection *conn, if_match_t *im)
{
   memset(im, 0, sizeof *im);
   MHD_get_connection_values(conn, MHD_HEADER_KIND, each_if_match, im);
}

bool
if_match_holds(const if_match_t *im, int64_t version)
{
   if (im->kind == IF_MATCH_ANY)
      return true;
   for (size_t i = 0; i < im->n; i++) {
      if (im->versions[i] == version)
         return true;
   }
   return false;
}
