/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The token bucket of --max-publish-rate (pacer.h). Pure; its state is the caller's.
 */
#include "publish/pacer.h"

void
relay_pacer_init(relay_pacer_t *p, int per_second, int64_t now_us)
{
   p->rate = per_second > 0 ? per_second / 1e6 : 0;
   p->capacity = per_second / 20.0 > 1 ? per_second / 20.0 : 1;
   p->tokens = 1;
   p->last_us = now_us;
}

static void
refill(relay_pacer_t *p, int64_t now_us)
{
   if (now_us > p->last_us) {
      p->tokens += (double)(now_us - p->last_us) * p->rate;
      if (p->tokens > p->capacity) {
         p->tokens = p->capacity;
      }
      p->last_us = now_us;
   }
}

bool
relay_pacer_ready(relay_pacer_t *p, int64_t now_us)
{
   if (p->rate == 0) {
      return true;
   }
   refill(p, now_us);
   return p->tokens >= 1;
}

void
relay_pacer_spend(relay_pacer_t *p)
{
   if (p->rate > 0) {
      p->tokens -= 1;
   }
}

int64_t
relay_pacer_wait_us(const relay_pacer_t *p, int64_t now_us)
{
   if (p->rate == 0) {
      return 0;
   }
   double tokens = p->tokens + (double)(now_us > p->last_us ? now_us - p->last_us : 0) * p->rate;
   return tokens >= 1 ? 0 : (int64_t)((1 - tokens) / p->rate) + 1;
}
