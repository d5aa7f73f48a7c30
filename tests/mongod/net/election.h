/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The election thread of a replica set of several members: while the set has no primary it
 * sleeps until the election timeout (or the end of a stepdown/freeze period) and then elects
 * a member, under the server lock; md_election_wake tells it the set changed. It also wires
 * the topology's `changed` hook to wake every connection in an awaitable hello.
 */
#ifndef MD_ELECTION_H
#define MD_ELECTION_H

#include "net/server.h"

void md_election_start(md_server_t *srv);
/* Wakes the thread to look again (call with the server lock held). */
void md_election_wake(md_server_t *srv);
/* Ends and joins the thread (call without the server lock). */
void md_election_stop(md_server_t *srv);

#endif
