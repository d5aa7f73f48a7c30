/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Balancing (balance.h): the plan for one tick of one member, a pure function. Called by
 * the lease thread only; it keeps no state.
 */
#include "group/balance.h"

#include <string.h>

#include "base/str.h"

/* Whether member @id owns at least one lease and every one of them has expired. */
static bool
all_leases_expired(const relay_balance_input_t *in, const char *id)
{
   bool any = false;
   for (int p = 0; p < in->n; p++) {
      if (relay_str_same(in->leases[p].owner, id)) {
         if (in->leases[p].live) {
            return false;
         }
         any = true;
      }
   }
   return any;
}

static int
count_members(const relay_balance_input_t *in)
{
   int m = in->eligible ? 1 : 0;
   for (size_t i = 0; i < in->n_members; i++) {
      const char *id = in->members[i];
      if (!relay_str_same(id, in->me) && !all_leases_expired(in, id)) {
         m++;
      }
   }
   return m;
}

static bool
takeable(const relay_balance_input_t *in, int p)
{
   const relay_lease_view_t *l = &in->leases[p];
   bool reserved_for_other =
      l->reserved_for && !relay_str_same(l->reserved_for, in->me) && l->reservation_live;
   return (!l->owner || !l->live) && !relay_str_same(l->owner, in->me) && !reserved_for_other &&
          !l->malformed;
}

/* Free and expired leases up to hi, those reserved for this member first (always taken:
 * they are the handoffs it asked for). */
static void
plan_acquire(const relay_balance_input_t *in, relay_balance_plan_t *plan)
{
   int room = plan->hi - plan->owned;

   for (int p = 0; p < in->n; p++) {
      if (takeable(in, p) && relay_str_same(in->leases[p].reserved_for, in->me)) {
         plan->acquire[plan->n_acquire++] = p;
         room--;
      }
   }
   for (int i = 0; i < in->n && room > 0; i++) {
      int p = (int)((in->rotate + (uint32_t)i) % (uint32_t)in->n);
      if (takeable(in, p) && !relay_str_same(in->leases[p].reserved_for, in->me)) {
         plan->acquire[plan->n_acquire++] = p;
         room--;
      }
   }
}

/* Asks the most loaded member for half the difference, if it owns two or more above us. */
static void
plan_handoffs(const relay_balance_input_t *in, relay_balance_plan_t *plan, int have)
{
   const char *owners[64];
   int counts[64];
   int n_owners = 0, top = -1, want;

   for (int p = 0; p < in->n; p++) {
      const char *owner = in->leases[p].owner;
      int i = 0;
      if (!owner || !in->leases[p].live || in->leases[p].malformed ||
          relay_str_same(owner, in->me)) {
         continue;
      }
      while (i < n_owners && !relay_str_same(owners[i], owner)) {
         i++;
      }
      if (i == n_owners) {
         if (n_owners == 64) {
            continue; /* a group this large balances through the others first */
         }
         owners[n_owners] = owner;
         counts[n_owners++] = 0;
      }
      counts[i]++;
   }
   for (int i = 0; i < n_owners; i++) {
      if (top < 0 || counts[i] > counts[top]) {
         top = i;
      }
   }
   if (top < 0 || counts[top] < have + 2) {
      return;
   }
   want = (counts[top] - have) / 2;
   if (want > plan->hi - have) {
      want = plan->hi - have;
   }
   for (int p = in->n - 1; p >= 0 && want > 0; p--) {
      const relay_lease_view_t *l = &in->leases[p];
      if (relay_str_same(l->owner, owners[top]) && l->live && !l->handoff_to && !l->malformed) {
         plan->handoff[plan->n_handoff++] = p;
         want--;
      }
   }
}

void
relay_balance_plan(const relay_balance_input_t *in, relay_balance_plan_t *plan)
{
   int incoming = 0, have;

   plan->n_acquire = plan->n_handoff = plan->members = plan->hi = plan->lo = plan->owned = 0;
   for (int p = 0; p < in->n; p++) {
      const relay_lease_view_t *l = &in->leases[p];
      plan->owned += relay_str_same(l->owner, in->me);
      incoming += relay_str_same(l->handoff_to, in->me) && l->owner && l->live &&
                  !relay_str_same(l->owner, in->me);
   }
   plan->members = count_members(in);
   if (!in->eligible || plan->members == 0) {
      return;
   }
   plan->hi = (in->n + plan->members - 1) / plan->members;
   plan->lo = in->n / plan->members;
   plan_acquire(in, plan);
   have = plan->owned + plan->n_acquire + incoming;
   for (int p = 0; p < in->n; p++) {
      if (takeable(in, p)) {
         bool chosen = false;
         for (int i = 0; i < plan->n_acquire; i++) {
            chosen = chosen || plan->acquire[i] == p;
         }
         if (!chosen) {
            return; /* free leases remain: no handoffs while anything is free */
         }
      }
   }
   if (have < plan->hi) {
      plan_handoffs(in, plan, have);
   }
}
