/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The headers rules of headers.h. Pure functions: safe from any thread.
 */
#include "mqtt/headers.h"

#include <string.h>
#include <strings.h>

#include "contract-private.h" /* liboutbox's event contract: the rules themselves */

bool
relay_header_is_ce_attribute(const char *name)
{
   size_t len = strlen(name);
   if (len < 1 || len > RELAY_CE_ATTRIBUTE_NAME_MAX || outbox_contract_name_is_reserved(name)) {
      return false;
   }
   for (size_t i = 0; i < len; i++) {
      if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9'))) {
         return false;
      }
   }
   return true;
}

static bool
seen(const relay_headers_t *out, const char *name)
{
   for (size_t i = 0; i < out->n; i++) {
      if (!strcmp(out->items[i].name, name)) {
         return true;
      }
   }
   return false;
}

/* NULL if the header at @it may be published (*@value set), else why not: the contract's
 * header rules (outbox/contract.h), then a repeated name. */
static const char *
check_header(const bson_iter_t *it, const relay_headers_t *out, size_t used, const char **value)
{
   const char *why =
      _outbox_contract_header_check(bson_iter_key(it), bson_iter_key_len(it),
                                    bson_iter_value((bson_iter_t *)it), out->n, used, false);
   if (why) {
      return why;
   }
   *value = bson_iter_utf8(it, NULL);
   if (seen(out, bson_iter_key(it))) {
      return _outbox_contract_row(_OUTBOX_RULE_HEADER_DUPLICATE)->reason;
   }
   return NULL;
}

static void
drop(relay_headers_t *out, const char *reason)
{
   out->dropped++;
   for (size_t i = 0; i < out->n_reasons; i++) {
      if (out->reasons[i].reason == reason) {
         out->reasons[i].n++;
         return;
      }
   }
   if (out->n_reasons < RELAY_HEADERS_REASONS_MAX) {
      out->reasons[out->n_reasons].reason = reason;
      out->reasons[out->n_reasons++].n = 1;
   }
   if (!out->reason) {
      out->reason = reason;
   }
}

void
relay_headers_read(const relay_event_t *ev, relay_headers_t *out)
{
   bson_iter_t it;
   size_t used = 0;

   memset(out, 0, sizeof *out);
   if (ev->headers_bad) {
      drop(out, "headers is not a document");
      return;
   }
   if (!ev->headers) {
      return;
   }
   if (!bson_iter_init_from_data(&it, ev->headers, ev->headers_len)) {
      drop(out, "headers is not valid BSON");
      return;
   }
   while (bson_iter_next(&it)) {
      const char *value = NULL;
      const char *why = check_header(&it, out, used, &value);
      if (why) {
         drop(out, why);
         continue;
      }
      used += bson_iter_key_len(&it) + strlen(value);
      out->items[out->n++] = (relay_header_t){bson_iter_key(&it), value,
                                              relay_header_is_ce_attribute(bson_iter_key(&it))};
   }
   /* A document whose bytes end early stops the walk: what came before is kept. */
   if (it.err_off) {
      drop(out, "headers is not valid BSON");
   }
}

size_t
relay_headers_append_props(const relay_headers_t *h, const char **props, size_t n)
{
   for (size_t i = 0; i < h->n; i++) {
      props[n++] = h->items[i].name;
      props[n++] = h->items[i].value;
   }
   return n;
}
