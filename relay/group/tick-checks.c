/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What a tick of the lease thread checks in what it read of the group (issue 29): lease
 * documents deleted or malformed by someone else (re-created, repaired), members whose
 * settings differ (and the settings string members compare), and partitions that have no
 * owner for long (the gauges and /healthz).
 * Lease thread only, called from tick.c. Of relay_lease_t it writes the snapshot it reads
 * (snap) and these fields alone: malformed_seen, mismatch_logged, elsewhere, stalled,
 * unowned_since_ns and fatal (it reads joined); a server error goes to tick.c's
 * _relay_lease_note_down(), a member that cannot join to the queue (_relay_lease_post_fatal()).
 */
#include "group/lease-private.h"

#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "util/log.h"
#include "base/str.h"

static int
compare_names(const void *a, const void *b)
{
   return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What the members of a group must share (lease-store.h): the watched collections (sorted),
 * where the group's documents are, and the lease time. */
char *
_relay_lease_settings(const relay_config_t *cfg)
{
   bson_string_t *s = bson_string_new("collections=");
   char **names = bson_malloc(sizeof(char *) * (cfg->n_collections + 1));

   memcpy(names, cfg->collections, sizeof(char *) * cfg->n_collections);
   qsort(names, cfg->n_collections, sizeof(char *), compare_names);
   for (size_t i = 0; i < cfg->n_collections; i++) {
      bson_string_append_printf(s, "%s%s", i ? "," : "", names[i]);
   }
   bson_string_append_printf(
      s, " state-collection=%s lease-collection=%s lease-ttl-ms=%d", cfg->state_collection,
      cfg->lease_collection ? cfg->lease_collection : cfg->state_collection, cfg->lease_ttl_ms);
   bson_free(names);
   return bson_string_free(s, false);
}

/* Reads the group. Lease documents deleted while the group runs (or their collection
 * dropped) are re-created as at start, so their partitions are free and taken again instead
 * of staying unowned; the group document too when it went with them. */
bool
_relay_lease_read_group(relay_lease_t *l)
{
   bson_error_t error;

   relay_group_snapshot_cleanup(l->snap);
   if (!relay_lease_store_snapshot(&l->st, l->snap, &error)) {
      _relay_lease_note_down(l, "reading the group", &error);
      return false;
   }
   if (l->snap->n_leases >= l->cfg->partitions) {
      return true;
   }
   relay_log(RELAY_LOG_WARNING, "group",
             "%d of the group's %d lease documents are missing (deleted, or %s dropped): "
             "re-creating them",
             l->cfg->partitions - l->snap->n_leases, l->cfg->partitions,
             mongoc_collection_get_name(l->st.leases));
   relay_metrics_add(l->metrics, RELAY_M_LEASE_RECREATIONS, 1);
   if (relay_lease_store_init(&l->st, &error) != RELAY_GROUP_OK) {
      _relay_lease_note_down(l, "re-creating the lease documents", &error);
      return false;
   }
   relay_group_snapshot_cleanup(l->snap);
   if (!relay_lease_store_snapshot(&l->st, l->snap, &error)) {
      _relay_lease_note_down(l, "reading the group", &error);
      return false;
   }
   return true;
}

/* Malformed leases (an epoch that is not a number in range, written by someone else) hold up
 * only their own partition: named once each, repaired once free or expired, then taken as
 * usual (balance.c never plans them). */
void
_relay_lease_repair_malformed(relay_lease_t *l)
{
   relay_partset_t bad;
   bson_error_t error;

   relay_partset_clear(&bad);
   for (int p = 0; p < l->cfg->partitions; p++) {
      const relay_lease_view_t *v = &l->snap->leases[p];
      if (!v->malformed) {
         l->malformed_seen[p] = false;
         continue;
      }
      relay_partset_add(&bad, p);
      if (!l->malformed_seen[p]) {
         l->malformed_seen[p] = true;
         relay_metrics_add(l->metrics, RELAY_M_LEASE_REPAIRS, 1);
         relay_log(RELAY_LOG_WARNING, "group",
                   "the lease of partition %d has a malformed epoch (not an integer from 0 to "
                   "2^53; written by something other than a relay?): nobody can take it; it "
                   "is reset to epoch 0 once free or expired%s%s",
                   p, v->owner && v->live ? ", after its owner's lease time: " : "",
                   v->owner && v->live ? v->owner : "");
      }
   }
   if (relay_partset_count(&bad, l->cfg->partitions) > 0 &&
       !relay_lease_store_repair(&l->st, &bad, &error)) {
      _relay_lease_note_down(l, "repairing malformed leases", &error);
   }
}

/* Members of one group that watch other collections, keep the group elsewhere or use another
 * lease time would publish some events twice or never. Found on the first read of the group,
 * this member refuses to join (it leaves, and stops with EX_CONFIG); found later (a member
 * that started at the same moment), both are warned about and flagged in the gauge and
 * /healthz. False when this member must stop. */
/* A group of this name created in another collection after this one started (two members
 * with different --state-collection started at the same moment): each publishes everything.
 * Said once; flagged until it goes. */
static void
check_elsewhere(relay_lease_t *l)
{
   bson_error_t error;
   relay_group_init_t rc = relay_lease_store_find_elsewhere(&l->st, &error);

   if (rc == RELAY_GROUP_RETRY) {
      return;
   }
   if (rc == RELAY_GROUP_MISMATCH && !l->elsewhere) {
      relay_log(RELAY_LOG_ERROR, "group",
                "%s; this group runs in collection '%s' meanwhile: both publish every event",
                error.message, l->cfg->state_collection);
   }
   l->elsewhere = rc == RELAY_GROUP_MISMATCH;
}

bool
_relay_lease_check_settings(relay_lease_t *l)
{
   const char *other = NULL, *theirs = NULL;
   bson_error_t error;

   if (l->ticks % 10 == 0) {
      check_elsewhere(l);
   }
   for (size_t i = 0; i < l->snap->n_members && !other; i++) {
      const char *s = l->snap->member_settings[i];
      if (s && !relay_str_same(l->snap->member_ids[i], l->me) && strcmp(s, l->settings) != 0) {
         other = l->snap->member_ids[i];
         theirs = s;
      }
   }
   relay_metrics_set(l->metrics, RELAY_G_GROUP_MISMATCH, other || l->elsewhere ? 1 : 0);
   if (!other) {
      l->mismatch_logged = false;
      return true;
   }
   if (!l->joined) {
      char *msg = bson_strdup_printf(
         "cannot join group '%s': member %s runs with %s; this relay was started with %s: "
         "give every member the same --collection list, --state-collection, "
         "--lease-collection and --lease-ttl-ms, or another --name",
         l->cfg->name, other, theirs, l->settings);
      l->fatal = true;
      if (!relay_lease_store_leave(&l->st, &error)) {
         relay_log(RELAY_LOG_DEBUG, "group", "deleting the member document failed: %s",
                   error.message);
      }
      _relay_lease_post_fatal(l, EX_CONFIG, msg);
      bson_free(msg);
      return false;
   }
   if (!l->mismatch_logged) {
      relay_log(RELAY_LOG_ERROR, "group",
                "member %s of group '%s' runs with %s; this one with %s: events may be "
                "published twice or never until one of them stops",
                other, l->cfg->name, theirs, l->settings);
      l->mismatch_logged = true;
   }
   return true;
}

static bool
is_live_member(const relay_lease_t *l, const char *id)
{
   for (size_t i = 0; i < l->snap->n_members; i++) {
      if (relay_str_same(l->snap->member_ids[i], id)) {
         return true;
      }
   }
   return false;
}

/* Partitions without a live owner, as read this tick (those just acquired are owned; a lease
 * held by something that is not a live member, e.g. forged far into the future, counts as
 * unowned): the gauges and, after two lease times, /healthz (a partition nobody can own, or
 * a member that takes nothing while partitions are free). */
void
_relay_lease_watch_unowned(relay_lease_t *l)
{
   int unowned = 0;
   int64_t now = relay_boot_ns();
   bool stalled;

   for (int p = 0; p < l->cfg->partitions; p++) {
      const relay_lease_view_t *v = &l->snap->leases[p];
      bool owned = v->owner && v->live && !v->malformed &&
                   (relay_str_same(v->owner, l->me) || is_live_member(l, v->owner));
      unowned += !owned && !relay_partset_has(&l->owned, p);
   }
   if (unowned == 0) {
      l->unowned_since_ns = 0;
   } else if (l->unowned_since_ns == 0) {
      l->unowned_since_ns = now;
   }
   stalled = unowned > 0 && now - l->unowned_since_ns > 2 * l->cfg->lease_ttl_ms * 1000000LL;
   if (stalled && !l->stalled) {
      relay_log(RELAY_LOG_ERROR, "group",
                "%d partition%s of group '%s' %s had no owner for more than two lease times: "
                "their events wait",
                unowned, unowned == 1 ? "" : "s", l->cfg->name, unowned == 1 ? "has" : "have");
   }
   relay_metrics_set(l->metrics, RELAY_G_PARTITIONS_UNOWNED, (double)unowned);
   l->stalled = stalled;
   relay_metrics_set(l->metrics, RELAY_G_GROUP_STALLED, stalled ? 1 : 0);
}
