/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Replication positions over the one shared history: each member has applied the entries
 * below its `applied_seq`. The primary holds everything; a secondary applies an entry once
 * its replication lag has passed since the entry was written (--replication-lag-ms, or per
 * member at run time), unless it is paused or unreachable. The majority commit point is the
 * newest position a majority of the members has applied: w: "majority" waits for it and
 * change streams return nothing past it, as MongoDB's. Each member knows the commit point
 * only while it hears from the others: an isolated (or stopped) member's stays where it
 * was at the cut, and its majority reads and change streams stop there (md_repl_member_commit).
 * The data itself is not per member:
 * reads at an older position go through data/versions.h. Callers hold the server lock.
 */
#ifndef MD_REPLICATION_H
#define MD_REPLICATION_H

#include "data/oplog.h"
#include "topology/topology.h"

/* Brings every member's applied position up to what it holds at `now_ms` (wall clock) and
 * returns the majority commit point as a sequence number (entries below it are committed).
 * *next_ms (may be NULL) receives the wall time of the next change (INT64_MAX: none). */
uint64_t md_repl_advance(md_topology_t *topo, const md_oplog_t *log, int64_t now_ms,
                         int64_t *next_ms);

/* The commit point member `m` reads "majority" at and streams changes up to: the one it
 * last heard of (updated by md_repl_advance while it is reachable), no newer than its own
 * applied position. */
uint64_t md_repl_member_commit(const md_topology_t *topo, int m);

/* How many members have applied every entry below `seq`. */
int md_repl_count_applied(const md_topology_t *topo, uint64_t seq);

/* The cluster time of the position `seq` (of the entry before it; the history's start time
 * when there is none). */
md_ts_t md_repl_seq_ts(const md_oplog_t *log, uint64_t seq);

#endif
