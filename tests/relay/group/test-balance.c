/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Balancing, on a simulated group: members tick in turn against one lease table, handoffs
 * are carried out by the owner on its next tick, dead members' leases expire. Checked: the
 * shares converge to within one lease of each other, then nothing moves any more; a live
 * lease is never taken; a member that is not eligible takes nothing.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include <math.h>

#include "group/balance.h"
#include "group/lease-store.h"

#define MAXM 8

typedef struct {
   int n;
   relay_lease_view_t leases[RELAY_PARTITIONS_MAX];
   char ids[MAXM][16];
   bool alive[MAXM], eligible[MAXM], present[MAXM];
   int moves; /* leases that changed owner since the last reset */
} sim_t;

static void
sim_init(sim_t *s, int n)
{
   memset(s, 0, sizeof *s);
   s->n = n;
   for (int i = 0; i < MAXM; i++) {
      snprintf(s->ids[i], sizeof s->ids[i], "m%d", i);
      s->eligible[i] = true;
   }
}

static void
join(sim_t *s, int m)
{
   s->present[m] = s->alive[m] = true;
}

/* kill -9: its member document and leases stop being renewed (expired at the next read). */
static void
kill9(sim_t *s, int m)
{
   s->alive[m] = false;
   s->present[m] = false;
   for (int p = 0; p < s->n; p++) {
      if (s->leases[p].owner == s->ids[m]) {
         s->leases[p].live = false;
      }
   }
}

/* SIGTERM: leases released at once. */
static void
term(sim_t *s, int m)
{
   kill9(s, m);
   for (int p = 0; p < s->n; p++) {
      if (s->leases[p].owner == s->ids[m]) {
         s->leases[p].owner = NULL;
      }
   }
}

static int
owned(const sim_t *s, int m)
{
   int c = 0;
   for (int p = 0; p < s->n; p++) {
      c += s->leases[p].owner == s->ids[m];
   }
   return c;
}

/* One tick of member @m: it hands over what was asked of it, then plans and acts. */
static void
tick(sim_t *s, int m)
{
   const char *members[MAXM];
   size_t nm = 0;
   relay_balance_input_t in;
   relay_balance_plan_t plan;

   for (int p = 0; p < s->n; p++) {
      relay_lease_view_t *l = &s->leases[p];
      if (l->owner == s->ids[m] && l->handoff_to) {
         l->reserved_for = l->handoff_to;
         l->reservation_live = true;
         l->owner = NULL;
         l->handoff_to = NULL;
         l->live = false;
      }
   }
   for (int i = 0; i < MAXM; i++) {
      if (s->present[i] && s->eligible[i]) {
         members[nm++] = s->ids[i];
      }
   }
   in = (relay_balance_input_t){s->n, s->ids[m],      s->leases,          members,
                                nm,   s->eligible[m], (uint32_t)m * 7919u};
   relay_balance_plan(&in, &plan);
   for (int i = 0; i < plan.n_acquire; i++) {
      relay_lease_view_t *l = &s->leases[plan.acquire[i]];
      cr_assert(!l->owner || !l->live, "%s took the live lease %d of %s", s->ids[m],
                plan.acquire[i], l->owner);
      l->owner = s->ids[m];
      l->epoch++;
      l->live = true;
      l->reserved_for = NULL;
      l->handoff_to = NULL;
      s->moves++;
   }
   for (int i = 0; i < plan.n_handoff; i++) {
      relay_lease_view_t *l = &s->leases[plan.handoff[i]];
      cr_assert(l->live && l->owner && l->owner != s->ids[m] && !l->handoff_to);
      l->handoff_to = s->ids[m];
   }
}

static void
round_all(sim_t *s)
{
   for (int m = 0; m < MAXM; m++) {
      if (s->alive[m]) {
         tick(s, m);
      }
   }
}

/* Runs rounds until the shares are within one of each other with nothing free; returns
 * the rounds it took (fails past @limit). */
static int
settle(sim_t *s, int limit)
{
   for (int r = 1; r <= limit; r++) {
      int lo = 1 << 30, hi = -1, total = 0;
      round_all(s);
      for (int m = 0; m < MAXM; m++) {
         if (s->alive[m] && s->eligible[m]) {
            int c = owned(s, m);
            lo = c < lo ? c : lo;
            hi = c > hi ? c : hi;
            total += c;
         }
      }
      if (total == s->n && hi - lo <= 1) {
         return r;
      }
   }
   cr_assert_fail("did not settle within %d rounds", limit);
   return limit;
}

/* After settling, further rounds move nothing (no flapping). */
static void
check_stable(sim_t *s)
{
   s->moves = 0;
   for (int r = 0; r < 20; r++) {
      round_all(s);
   }
   cr_assert_eq(s->moves, 0, "%d leases moved after the group had settled", s->moves);
}

Test(balance, lone_member_takes_everything)
{
   sim_t s;
   sim_init(&s, 32);
   join(&s, 0);
   cr_assert_eq(settle(&s, 1), 1);
   cr_assert_eq(owned(&s, 0), 32);
   check_stable(&s);
}

Test(balance, second_member_gets_half_by_handoff)
{
   sim_t s;
   sim_init(&s, 32);
   join(&s, 0);
   settle(&s, 1);
   join(&s, 1);
   settle(&s, 5);
   cr_assert_eq(owned(&s, 0), 16);
   cr_assert_eq(owned(&s, 1), 16);
   check_stable(&s);
}

Test(balance, one_four_two)
{
   sim_t s;
   sim_init(&s, 32);
   join(&s, 0);
   settle(&s, 1);
   for (int m = 1; m < 4; m++) {
      join(&s, m);
   }
   settle(&s, 10);
   for (int m = 0; m < 4; m++) {
      cr_assert_eq(owned(&s, m), 8);
   }
   check_stable(&s);
   term(&s, 1);
   kill9(&s, 2);
   settle(&s, 10);
   cr_assert_eq(owned(&s, 0), 16);
   cr_assert_eq(owned(&s, 3), 16);
   check_stable(&s);
}

Test(balance, uneven_counts_differ_by_at_most_one)
{
   sim_t s;
   sim_init(&s, 32);
   for (int m = 0; m < 3; m++) {
      join(&s, m);
   }
   settle(&s, 10);
   check_stable(&s);
   cr_assert_eq(owned(&s, 0) + owned(&s, 1) + owned(&s, 2), 32);
}

Test(balance, ineligible_member_takes_nothing)
{
   sim_t s;
   sim_init(&s, 16);
   s.eligible[1] = false;
   join(&s, 0);
   join(&s, 1);
   settle(&s, 3);
   cr_assert_eq(owned(&s, 1), 0);
   cr_assert_eq(owned(&s, 0), 16);
}

Test(balance, random_joins_and_kills_always_settle)
{
   sim_t s;
   srand(4242);
   for (int run = 0; run < 200; run++) {
      sim_init(&s, 1 + rand() % 64);
      for (int step = 0; step < 6; step++) {
         int m = rand() % MAXM;
         int alive = 0;
         for (int i = 0; i < MAXM; i++) {
            alive += s.alive[i];
         }
         if (!s.alive[m]) {
            join(&s, m);
         } else if (alive > 1) {
            (rand() % 2 ? term : kill9)(&s, m);
         }
         settle(&s, 20);
      }
      check_stable(&s);
   }
}

/* A malformed lease (issue 29, 4) is neither planned for acquisition nor asked for, and the
 * others are planned as usual. */
Test(balance, malformed_lease_is_left_alone)
{
   relay_lease_view_t leases[4] = {{0}};
   const char *members[] = {"me", "other"};
   relay_balance_input_t in = {4, "me", leases, members, 2, true, 0};
   relay_balance_plan_t plan;

   leases[1].malformed = true;
   relay_balance_plan(&in, &plan);
   cr_assert_eq(plan.n_acquire, 2);
   for (int i = 0; i < plan.n_acquire; i++) {
      cr_assert_neq(plan.acquire[i], 1);
   }
   /* Owned by the other member and live: still not asked for. */
   for (int p = 0; p < 4; p++) {
      leases[p].owner = "other";
      leases[p].live = true;
   }
   relay_balance_plan(&in, &plan);
   cr_assert_eq(plan.n_handoff, 1); /* half of the 3 well-formed ones */
   for (int i = 0; i < plan.n_handoff; i++) {
      cr_assert_neq(plan.handoff[i], 1);
   }
}

static bool
epoch_of(const bson_t *doc, int64_t *epoch)
{
   bson_iter_t it;
   cr_assert(bson_iter_init_find(&it, doc, "epoch"));
   return relay_lease_epoch_read(&it, epoch);
}

/* Epochs are read only when they are integers in range: never a conversion of a double
 * outside int64 (undefined behaviour), never a string taken as 0. */
Test(balance, epoch_read_checks_ranges)
{
   int64_t e = -1;
   bson_t *ok32 = BCON_NEW("epoch", BCON_INT32(7)), *ok64 = BCON_NEW("epoch", BCON_INT64(9));
   bson_t *okd = BCON_NEW("epoch", BCON_DOUBLE(12.0)), *str = BCON_NEW("epoch", "x");
   bson_t *big = BCON_NEW("epoch", BCON_INT64(INT64_MAX));
   bson_t *over = BCON_NEW("epoch", BCON_DOUBLE(9.3e18)),
          *frac = BCON_NEW("epoch", BCON_DOUBLE(2.5));
   bson_t *neg = BCON_NEW("epoch", BCON_INT64(-1)), *nan_ = BCON_NEW("epoch", BCON_DOUBLE(NAN));

   cr_assert(epoch_of(ok32, &e) && e == 7);
   cr_assert(epoch_of(ok64, &e) && e == 9);
   cr_assert(epoch_of(okd, &e) && e == 12);
   cr_assert_not(epoch_of(str, &e));
   cr_assert_not(epoch_of(big, &e));
   cr_assert_not(epoch_of(over, &e));
   cr_assert_not(epoch_of(frac, &e));
   cr_assert_not(epoch_of(neg, &e));
   cr_assert_not(epoch_of(nan_, &e));
   cr_assert_eq(e, 12);
   bson_destroy(ok32), bson_destroy(ok64), bson_destroy(okd), bson_destroy(str);
   bson_destroy(big), bson_destroy(over), bson_destroy(frac), bson_destroy(neg);
   bson_destroy(nan_);
}
