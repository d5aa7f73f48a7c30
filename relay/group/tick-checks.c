/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What a tick of the lease thread checks in what it read of the group (issue 29): lease
 * documents deleted or malformed by someone else (re-created, repaired), members whose
 * settings differ (and the settings string members compare), and partitions that have no
 * owner for long (the gauges and /healthz).
 * The caller's thread only, called from tick.c. Of relay_tick_t it writes the snapshot it
 * reads (snap) and these fields alone: malformed_seen, mismatch_logged, output_mismatch_with,
 * elsewhere, stalled, unowned_since_ns and fatal (it reads joined); a server error goes to
 * tick-state.c's _relay_tick_note_down(), a member that cannot join to the events
 * (_relay_tick_post_fatal()).
 */
#include "group/tick-private.h"

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

/* What the members of a group must share (lease-store.h): the watched collections (sorted;
 * as before --namespace, so a group upgraded member by member agrees) or, with --namespace,
 * every pattern (sorted) and the state database, where the group's documents are, and the
 * lease time; then, after RELAY_LEASE_OUTPUT_MARK, everything that changes what a
 * partition's events become (archived or not, where, on which topic, with which source,
 * payload, user properties, QoS, MQTT version). The first part must be equal (a member
 * refuses to join otherwise); the second may differ for the time of a rolling change, and is
 * flagged while it does (outbox_relay_group_output_mismatch, a warning in /healthz). An
 * older member writes only the first part. */
char *
relay_tick_settings(const relay_config_t *cfg)
{
   bool patterns = cfg->n_namespaces > 0;
   char *const *list = patterns ? cfg->watch : cfg->collections;
   size_t n = patterns ? cfg->n_watch : cfg->n_collections;
   bson_string_t *s = bson_string_new(patterns ? "namespaces=" : "collections=");
   char **names = bson_malloc(sizeof(char *) * (n + 1));

   memcpy(names, list, sizeof(char *) * n);
   qsort(names, n, sizeof(char *), compare_names);
   for (size_t i = 0; i < n; i++) {
      bson_string_append_printf(s, "%s%s", i ? "," : "", names[i]);
   }
   if (patterns) {
      bson_string_append_printf(s, " state-database=%s", cfg->state_database);
   }
   bson_string_append_printf(
      s, " state-collection=%s lease-collection=%s lease-ttl-ms=%d", cfg->state_collection,
      cfg->lease_collection ? cfg->lease_collection : cfg->state_collection, cfg->lease_ttl_ms);
   bson_string_append_printf(
      s,
      "%sarchive-collection=%s topic=%s source=%s payload-mode=%s user-properties=%u qos=%d "
      "mqtt-version=%d",
      RELAY_LEASE_OUTPUT_MARK, cfg->archive_collection ? cfg->archive_collection : "off",
      cfg->topic_template ? cfg->topic_template : "",
      cfg->source_template ? cfg->source_template : "",
      cfg->payload_mode == RELAY_PAYLOAD_BINARY ? "binary" : "structured", cfg->user_properties,
      cfg->qos, cfg->mqtt_version);
   bson_free(names);
   return bson_string_free(s, false);
}

relay_settings_diff_t
relay_tick_settings_diff(const char *mine, const char *theirs)
{
   const char *m_out = strstr(mine, RELAY_LEASE_OUTPUT_MARK);
   const char *t_out = strstr(theirs, RELAY_LEASE_OUTPUT_MARK);
   size_t m_len = m_out ? (size_t)(m_out - mine) : strlen(mine);
   size_t t_len = t_out ? (size_t)(t_out - theirs) : strlen(theirs);
   if (m_len != t_len || strncmp(mine, theirs, m_len) != 0) {
      return RELAY_SETTINGS_GROUP_DIFFERS;
   }
   /* A member that does not say (an older relay) cannot be compared. */
   if (m_out && t_out && strcmp(m_out, t_out) != 0) {
      return RELAY_SETTINGS_OUTPUT_DIFFERS;
   }
   return RELAY_SETTINGS_SAME;
}

/* Reads the group. Lease documents deleted while the group runs (or their collection
 * dropped) are re-created as at start, so their partitions are free and taken again instead
 * of staying unowned; the group document too when it went with them. */
bool
_relay_tick_read_group(relay_tick_t *t)
{
   bson_error_t error;

   relay_group_snapshot_cleanup(t->snap);
   if (!t->ops->snapshot(t->store, t->snap, &error)) {
      _relay_tick_note_down(t, "reading the group", &error);
      return false;
   }
   if (t->snap->n_leases >= t->cfg->partitions) {
      return true;
   }
   relay_log(RELAY_LOG_WARNING, "group",
             "%d of the group's %d lease documents are missing (deleted, or %s dropped): "
             "re-creating them",
             t->cfg->partitions - t->snap->n_leases, t->cfg->partitions,
             t->cfg->lease_collection ? t->cfg->lease_collection : t->cfg->state_collection);
   relay_metrics_add(t->metrics, RELAY_M_LEASE_RECREATIONS, 1);
   if (t->ops->init(t->store, &error) != RELAY_GROUP_OK) {
      _relay_tick_note_down(t, "re-creating the lease documents", &error);
      return false;
   }
   relay_group_snapshot_cleanup(t->snap);
   if (!t->ops->snapshot(t->store, t->snap, &error)) {
      _relay_tick_note_down(t, "reading the group", &error);
      return false;
   }
   return true;
}

/* Malformed leases (an epoch that is not a number in range, written by someone else) hold up
 * only their own partition: named once each, repaired once free or expired, then taken as
 * usual (balance.c never plans them). */
void
_relay_tick_repair_malformed(relay_tick_t *t)
{
   relay_partset_t bad;
   bson_error_t error;

   relay_partset_clear(&bad);
   for (int p = 0; p < t->cfg->partitions; p++) {
      const relay_lease_view_t *v = &t->snap->leases[p];
      if (!v->malformed) {
         t->malformed_seen[p] = false;
         continue;
      }
      relay_partset_add(&bad, p);
      if (!t->malformed_seen[p]) {
         t->malformed_seen[p] = true;
         relay_metrics_add(t->metrics, RELAY_M_LEASE_REPAIRS, 1);
         relay_log(RELAY_LOG_WARNING, "group",
                   "the lease of partition %d has a malformed epoch (not an integer from 0 to "
                   "2^53; written by something other than a relay?): nobody can take it; it "
                   "is reset to epoch 0 once free or expired%s%s",
                   p, v->owner && v->live ? ", after its owner's lease time: " : "",
                   v->owner && v->live ? v->owner : "");
      }
   }
   if (relay_partset_count(&bad, t->cfg->partitions) > 0 &&
       !t->ops->repair(t->store, &bad, &error)) {
      _relay_tick_note_down(t, "repairing malformed leases", &error);
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
check_elsewhere(relay_tick_t *t)
{
   bson_error_t error;
   relay_group_init_t rc = t->ops->find_elsewhere(t->store, &error);

   if (rc == RELAY_GROUP_RETRY) {
      return;
   }
   if (rc == RELAY_GROUP_MISMATCH && !t->elsewhere) {
      relay_log(RELAY_LOG_ERROR, "group",
                "%s; this group runs in collection '%s' meanwhile: both publish every event",
                error.message, t->cfg->state_collection);
   }
   t->elsewhere = rc == RELAY_GROUP_MISMATCH;
}

/* Members whose output settings differ (a rolling change, or one member forgotten): each
 * publishes its partitions its own way. Warned about once per member that differs, flagged
 * in outbox_relay_group_output_mismatch while it lasts; never refused, or no rolling change
 * could be made. */
static void
check_output(relay_tick_t *t)
{
   const char *other = NULL, *theirs = NULL;
   for (size_t i = 0; i < t->snap->n_members && !other; i++) {
      const char *s = t->snap->member_settings[i];
      if (s && !relay_str_same(t->snap->member_ids[i], t->me) &&
          relay_tick_settings_diff(t->settings, s) == RELAY_SETTINGS_OUTPUT_DIFFERS) {
         other = t->snap->member_ids[i];
         theirs = s;
      }
   }
   relay_metrics_set(t->metrics, RELAY_G_GROUP_OUTPUT_MISMATCH, other ? 1 : 0);
   if (other && !relay_str_same(t->output_mismatch_with, other)) {
      relay_log(RELAY_LOG_WARNING, "group",
                "member %s of group '%s' publishes its partitions otherwise: it runs with %s; "
                "this one with %s. Fine while a rolling change goes through the group; "
                "otherwise give every member the same settings (see \"Changing settings of a "
                "group\" in relay/README.md)",
                other, t->cfg->name, strstr(theirs, RELAY_LEASE_OUTPUT_MARK),
                strstr(t->settings, RELAY_LEASE_OUTPUT_MARK));
   }
   bson_free(t->output_mismatch_with);
   t->output_mismatch_with = other ? bson_strdup(other) : NULL;
}

bool
_relay_tick_check_settings(relay_tick_t *t)
{
   const char *other = NULL, *theirs = NULL;
   bson_error_t error;

   if (t->ticks % 10 == 0) {
      check_elsewhere(t);
   }
   check_output(t);
   for (size_t i = 0; i < t->snap->n_members && !other; i++) {
      const char *s = t->snap->member_settings[i];
      if (s && !relay_str_same(t->snap->member_ids[i], t->me) &&
          relay_tick_settings_diff(t->settings, s) == RELAY_SETTINGS_GROUP_DIFFERS) {
         other = t->snap->member_ids[i];
         theirs = s;
      }
   }
   relay_metrics_set(t->metrics, RELAY_G_GROUP_MISMATCH, other || t->elsewhere ? 1 : 0);
   if (!other) {
      t->mismatch_logged = false;
      return true;
   }
   if (!t->joined) {
      char *msg = bson_strdup_printf(
         "cannot join group '%s': member %s runs with %s; this relay was started with %s: "
         "give every member the same --collection list, --state-collection, "
         "--lease-collection and --lease-ttl-ms, or another --name",
         t->cfg->name, other, theirs, t->settings);
      t->fatal = true;
      if (!t->ops->leave(t->store, &error)) {
         relay_log(RELAY_LOG_DEBUG, "group", "deleting the member document failed: %s",
                   error.message);
      }
      _relay_tick_post_fatal(t, EX_CONFIG, msg);
      bson_free(msg);
      return false;
   }
   if (!t->mismatch_logged) {
      relay_log(RELAY_LOG_ERROR, "group",
                "member %s of group '%s' runs with %s; this one with %s: events may be "
                "published twice or never until one of them stops",
                other, t->cfg->name, theirs, t->settings);
      t->mismatch_logged = true;
   }
   return true;
}

static bool
is_live_member(const relay_tick_t *t, const char *id)
{
   for (size_t i = 0; i < t->snap->n_members; i++) {
      if (relay_str_same(t->snap->member_ids[i], id)) {
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
_relay_tick_watch_unowned(relay_tick_t *t)
{
   int unowned = 0;
   int64_t now = t->clock();
   bool stalled;

   for (int p = 0; p < t->cfg->partitions; p++) {
      const relay_lease_view_t *v = &t->snap->leases[p];
      bool owned = v->owner && v->live && !v->malformed &&
                   (relay_str_same(v->owner, t->me) || is_live_member(t, v->owner));
      unowned += !owned && !relay_partset_has(&t->owned, p);
   }
   if (unowned == 0) {
      t->unowned_since_ns = 0;
   } else if (t->unowned_since_ns == 0) {
      t->unowned_since_ns = now;
   }
   stalled = unowned > 0 && now - t->unowned_since_ns > 2 * t->cfg->lease_ttl_ms * 1000000LL;
   if (stalled && !t->stalled) {
      relay_log(RELAY_LOG_ERROR, "group",
                "%d partition%s of group '%s' %s had no owner for more than two lease times: "
                "their events wait",
                unowned, unowned == 1 ? "" : "s", t->cfg->name, unowned == 1 ? "has" : "have");
   }
   relay_metrics_set(t->metrics, RELAY_G_PARTITIONS_UNOWNED, (double)unowned);
   t->stalled = stalled;
   relay_metrics_set(t->metrics, RELAY_G_GROUP_STALLED, stalled ? 1 : 0);
}
