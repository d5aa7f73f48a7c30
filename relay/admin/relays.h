/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * What `status` says about the relays, read from the state and lease collections: an old
 * relay's checkpoint document {_id: name, token, updatedAt}; a group's document
 * {_id: name, partitions, createdAt}, its lease documents {_id: {relay, partition}, owner,
 * epoch, expiresAt, tokenAt, handoff, ...} and member documents {_id: {relay, member}, host,
 * pid, startedAt, expiresAt, owned} (the stored schema of relay groups, issue 12).
 *
 * Single-threaded, like all of outbox-admin (admin.h): the admin_t belongs to main.c's one
 * thread.
 */
#ifndef RELAY_ADMIN_RELAYS_H
#define RELAY_ADMIN_RELAYS_H

#include "admin/admin.h"

typedef struct {
   char *name;
   int64_t checkpoint_at; /* old checkpoint document's updatedAt, 0 if none */
   bool has_token;
   int32_t partitions; /* group document, 0 if none */
   int64_t created_at;
   bson_t **leases, **members; /* copies, in _id order */
   size_t n_leases, n_members;
} admin_relay_t;

typedef struct {
   admin_relay_t *items;
   size_t n;
} admin_relays_t;

void admin_relays_init(admin_relays_t *r);
void admin_relays_cleanup(admin_relays_t *r);

/* Reads the state collection (and the lease collection when it is another one). Returns an
 * exit status. */
int admin_relays_read(admin_t *a, admin_relays_t *r);

/* Text: one block per relay. */
void admin_relays_print(const admin_relays_t *r, FILE *out, int64_t now);

/* JSON: appends "relays": [...] to @doc. */
void admin_relays_append_json(const admin_relays_t *r, bson_t *doc, int64_t now);

#endif /* RELAY_ADMIN_RELAYS_H */
