/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The topic alias table of --topic-aliases (aliases.h). Main thread only.
 */
#include "mqtt/aliases.h"

#include <string.h>

#include <bson/bson.h>

typedef struct {
   char *topic;       /* NULL: alias free */
   uint64_t last_use; /* for choosing the one to reassign */
} slot_t;

struct relay_aliases_t {
   unsigned gen;  /* the connection the aliases were defined on */
   unsigned max;  /* aliases usable on it */
   uint64_t tick; /* counts uses */
   slot_t slots[RELAY_ALIASES_MAX];
};

relay_aliases_t *
relay_aliases_new(void)
{
   return bson_malloc0(sizeof(relay_aliases_t));
}

static void
forget(relay_aliases_t *a)
{
   for (unsigned i = 0; i < RELAY_ALIASES_MAX; i++) {
      bson_free(a->slots[i].topic);
      a->slots[i] = (slot_t){0};
   }
}

void
relay_aliases_destroy(relay_aliases_t *a)
{
   if (a) {
      forget(a);
      bson_free(a);
   }
}

uint16_t
relay_aliases_use(relay_aliases_t *a, unsigned gen, unsigned broker_max, const char *topic,
                  bool *known)
{
   unsigned max = broker_max < RELAY_ALIASES_MAX ? broker_max : RELAY_ALIASES_MAX;
   unsigned victim = 0;

   *known = false;
   if (gen != a->gen || max != a->max) {
      forget(a); /* a new connection: the broker knows none of them */
      a->gen = gen;
      a->max = max;
   }
   if (max == 0) {
      return 0;
   }
   a->tick++;
   for (unsigned i = 0; i < max; i++) {
      slot_t *s = &a->slots[i];
      if (s->topic && !strcmp(s->topic, topic)) {
         s->last_use = a->tick;
         *known = true;
         return (uint16_t)(i + 1);
      }
      if (!s->topic || (a->slots[victim].topic && s->last_use < a->slots[victim].last_use)) {
         victim = i; /* a free one, else the least recently used */
      }
   }
   bson_free(a->slots[victim].topic);
   a->slots[victim] = (slot_t){bson_strdup(topic), a->tick};
   return (uint16_t)(victim + 1);
}
