/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The fuzzer's liboutbox writer: creates one entity per input line with one event, through
 * outbox_collection_create() as a service would, and says what the library did with it.
 *
 * usage: fuzz-writer URI DB COLL < cases
 *
 * Input, one case per line, every value hex-encoded so any byte can be given:
 *   CASE ID-DOC TYPE DATA N [NAME VALUE]... [B BYTES CONTENT-TYPE] [E EXPIRES-MS]
 * ID-DOC is a BSON document whose "_id" is the entity id, DATA the event's data (BSON), TYPE,
 * NAME and VALUE the bytes of the event type and of N headers (C strings: the API takes no
 * NUL inside); "-" stands for an empty value. With "B" the event is made by
 * outbox_event_new_binary() with these bytes as its data and this content type ("*": none);
 * with "E" outbox_event_set_expires_at() gets EXPIRES-MS. Output, one line per case, flushed:
 *   OK CASE EVENT-ID SEQ
 *   REFUSED CASE DOMAIN CODE MESSAGE       (set_header or create refused it; MESSAGE on one line)
 * A failure that is not about the event (the server unreachable) ends the writer with status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <outbox/outbox.h>

#define LINE_MAX_BYTES (8 * 1024 * 1024) /* a case is below 1 MB of hex */

/* Decodes hex `s` in place; returns the length, or -1 on a malformed string. */
static long
unhex(char *s)
{
   size_t n = strlen(s);
   if (!strcmp(s, "-")) { /* the empty string (an empty field would vanish) */
      s[0] = '\0';
      return 0;
   }
   if (n % 2) {
      return -1;
   }
   for (size_t i = 0; i < n / 2; i++) {
      unsigned v;
      if (sscanf(s + 2 * i, "%2x", &v) != 1) {
         return -1;
      }
      s[i] = (char)v;
   }
   s[n / 2] = '\0';
   return (long)(n / 2);
}

static void
refused(const char *c, const bson_error_t *error)
{
   printf("REFUSED %s %u %u ", c, error->domain, error->code);
   for (const char *m = error->message; *m; m++) {
      putchar(*m == '\n' || *m == '\r' ? ' ' : *m);
   }
   putchar('\n');
   fflush(stdout);
}

/* The event of a case: binary data when its extras (from field @k on) hold "B BYTES TYPE". */
static outbox_event_t *
new_event(char **f, int nf, int k, const bson_t *data)
{
   for (; k + 2 < nf; k++) {
      long len;
      if (!strcmp(f[k], "B") && (len = unhex(f[k + 1])) >= 0) {
         bool none = !strcmp(f[k + 2], "*");
         if (!none && unhex(f[k + 2]) < 0) {
            break;
         }
         return outbox_event_new_binary(f[2], (const uint8_t *)f[k + 1], (size_t)len,
                                        none ? NULL : f[k + 2]);
      }
   }
   return outbox_event_new(f[2], data);
}

/* Runs one case; false when the line is malformed or the failure is not about the event. */
static bool
run_case(outbox_collection_t *coll, char **f, int nf)
{
   bson_t id_doc, data;
   bson_iter_t it;
   bson_error_t error;
   long id_len, data_len, nh;
   outbox_event_t *ev;
   bool ok = true;

   if (nf < 5 || (id_len = unhex(f[1])) < 0 || unhex(f[2]) < 0 || (data_len = unhex(f[3])) < 0 ||
       (nh = atol(f[4])) < 0 || nf < 5 + 2 * nh ||
       !bson_init_static(&id_doc, (uint8_t *)f[1], (size_t)id_len) ||
       !bson_init_static(&data, (uint8_t *)f[3], (size_t)data_len) ||
       !bson_iter_init_find(&it, &id_doc, "_id")) {
      fprintf(stderr, "fuzz-writer: malformed case line\n");
      return false;
   }
   ev = new_event(f, nf, 5 + 2 * (int)nh, &data);
   for (long k = 0; k < nh; k++) {
      if (unhex(f[5 + 2 * k]) < 0 || unhex(f[6 + 2 * k]) < 0) {
         outbox_event_destroy(ev);
         return false;
      }
      if (!outbox_event_set_header(ev, f[5 + 2 * k], f[6 + 2 * k], &error)) {
         refused(f[0], &error);
         outbox_event_destroy(ev);
         return true;
      }
   }
   for (int k = 5 + 2 * (int)nh; k + 1 < nf; k++) { /* hex is lowercase: never "E" */
      if (!strcmp(f[k], "E") &&
          !outbox_event_set_expires_at(ev, strtoll(f[k + 1], NULL, 10), &error)) {
         refused(f[0], &error);
         outbox_event_destroy(ev);
         return true;
      }
   }
   if (outbox_collection_create(coll, bson_iter_value(&it), NULL, &ev, 1, NULL, &error)) {
      printf("OK %s %s %" PRId64 "\n", f[0], outbox_event_get_id(ev), outbox_event_get_seq(ev));
      fflush(stdout);
   } else if (error.domain == OUTBOX_ERROR_DOMAIN && (error.code == OUTBOX_ERROR_INVALID_EVENT ||
                                                      error.code == OUTBOX_ERROR_INVALID_ARGUMENT ||
                                                      error.code == OUTBOX_ERROR_LIMIT_SIZE)) {
      refused(f[0], &error);
   } else {
      fprintf(stderr, "fuzz-writer: case %s: %s (domain %u, code %u)\n", f[0], error.message,
              error.domain, error.code);
      ok = false;
   }
   outbox_event_destroy(ev);
   return ok;
}

int
main(int argc, char **argv)
{
   mongoc_client_pool_t *pool;
   outbox_collection_t *coll = NULL;
   mongoc_uri_t *uri;
   bson_error_t error;
   char *line = malloc(LINE_MAX_BYTES);
   int status = 0;

   if (argc != 4) {
      fprintf(stderr, "usage: %s URI DB COLL < cases\n", argv[0]);
      return 64;
   }
   mongoc_init();
   uri = mongoc_uri_new_with_error(argv[1], &error);
   if (!uri) {
      fprintf(stderr, "fuzz-writer: %s\n", error.message);
      return 64;
   }
   mongoc_uri_set_appname(uri, "fuzz-writer");
   pool = mongoc_client_pool_new(uri);
   mongoc_client_pool_set_error_api(pool, MONGOC_ERROR_API_VERSION_2);
   coll = outbox_collection_new(pool, argv[2], argv[3], NULL, &error);
   if (!coll) {
      fprintf(stderr, "fuzz-writer: %s\n", error.message);
      status = 1;
   }
   while (coll && fgets(line, LINE_MAX_BYTES, stdin)) {
      char *f[5 + 2 * 64], *save = NULL;
      int nf = 0;
      for (char *t = strtok_r(line, " \n", &save); t && nf < (int)(sizeof f / sizeof f[0]);
           t = strtok_r(NULL, " \n", &save)) {
         f[nf++] = t;
      }
      if (nf && !run_case(coll, f, nf)) {
         status = 1;
         break;
      }
   }
   free(line);
   outbox_collection_destroy(coll);
   mongoc_client_pool_destroy(pool);
   mongoc_uri_destroy(uri);
   mongoc_cleanup();
   return status;
}
