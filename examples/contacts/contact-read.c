/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Reading a contact: accessors and the pending events in the order they were raised.
 */
#include "contact-private.h"

const char *
contact_id(const contact_t *c)
{
   return c->id;
}

bool
contact_is_deleted(const contact_t *c)
{
   return c->deleted;
}

int64_t
contact_created_at(const contact_t *c)
{
   return c->created_at;
}

const char *
contact_email(const contact_t *c)
{
   return c->email;
}

const char *
contact_first_name(const contact_t *c)
{
   return c->first_name;
}

const char *
contact_last_name(const contact_t *c)
{
   return c->last_name;
}

unsigned
contact_changes(const contact_t *c)
{
   return c->changes;
}

const char *
contact_event_kind_name(contact_event_kind_t kind)
{
   return kind < CONTACT_EVENT_KINDS ? _contact_kind_names[kind] : "";
}

size_t
contact_event_count(const contact_t *c)
{
   size_t n = 0;

   for (int k = 0; k < CONTACT_EVENT_KINDS; k++)
      n += c->events[k].pending;
   return n;
}

/* The kind of the i-th pending event in raise order (at most five kinds: a scan is fine). */
static int
nth_kind(const contact_t *c, size_t i)
{
   int best = -1;
   size_t rank;

   for (int k = 0; k < CONTACT_EVENT_KINDS; k++) {
      if (!c->events[k].pending)
         continue;
      rank = 0;
      for (int j = 0; j < CONTACT_EVENT_KINDS; j++)
         rank += c->events[j].pending && c->events[j].order < c->events[k].order;
      if (rank == i)
         best = k;
   }
   return best;
}

const char *
contact_event_type(const contact_t *c, size_t i)
{
   int k = nth_kind(c, i);

   return k < 0 ? NULL : _contact_kind_names[k];
}

const bson_t *
contact_event_data(const contact_t *c, size_t i)
{
   int k = nth_kind(c, i);

   return k < 0 ? NULL : &c->events[k].data;
}
