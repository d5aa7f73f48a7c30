/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The replica set's members and who is primary (--members N; 1 is the one-member set of
 * earlier rounds). All members share one data set and one history: this file owns only the
 * roles. Each member has a state (primary or secondary), a stepdown/freeze deadline, and its
 * own topologyVersion (processId, counter), whose counter rises on every change of the set
 * so that awaitable hellos answer at once. Elections follow MongoDB 6.0's rules as far as a
 * set without lag needs them: a member is electable when it is a secondary and its
 * stepdown/freeze period has passed (TopologyCoordinator::_getMyUnelectableReason in
 * src/mongo/db/repl/topology_coordinator.cpp) and it is reachable. An isolated primary
 * keeps its role (and its older term) until it notices the lost majority, so two members
 * may say they are primary; `primary` is the one the majority side elected.
 * Not thread-safe: callers hold the server lock; `changed` runs with it held.
 */
#ifndef MD_TOPOLOGY_H
#define MD_TOPOLOGY_H

#include <stdbool.h>
#include <stdint.h>

#include <bson/bson.h>

typedef enum { MD_MEMBER_PRIMARY = 1, MD_MEMBER_SECONDARY = 2 } md_member_state_t;

/* Whether the others (and clients) can reach a member (testMemberFault): as if its process
 * were stopped (connections hang) or gone (connections refused), or cut off from the other
 * members while its clients still reach it (isolated: a network partition). */
typedef enum { MD_REACH_UP = 0, MD_REACH_HANG, MD_REACH_REFUSE, MD_REACH_ISOLATE } md_reach_t;

typedef struct {
   char host_port[300]; /* advertised in hello: hosts, primary, me */
   int listen_fd;       /* -1 until listening, or while refusing; the accept thread's */
   int port;            /* the port it listens on (kept while refusing) */
   md_reach_t reach;
   uint64_t applied_seq;    /* history entries below this one are applied (replication.h) */
   uint64_t commit_seq;     /* the majority commit point as it last heard it (ditto) */
   int64_t lag_ms;          /* its replication lag; -1: the set's --replication-lag-ms */
   bool paused;             /* replication paused (testMemberFault "pause") */
   int64_t clock_offset_ms; /* its clock's error (testMemberFault "clock") */
   md_member_state_t state;
   int64_t term;               /* the newest term it knows (an isolated one misses elections) */
   int64_t isolated_ms;        /* when it was isolated (wall ms; 0: it is not) */
   bson_oid_t process_id;      /* topologyVersion.processId, new at every start */
   int64_t counter;            /* topologyVersion.counter */
   int64_t electable_after_ms; /* wall ms: stepdown or freeze period (mongod's _stepDownUntil) */
} md_member_t;

typedef struct {
   int n;
   md_member_t *members;
   int primary;                 /* index, or -1 while there is none */
   int64_t term;                /* election term: electionId and the opTimes' `t` */
   int64_t election_timeout_ms; /* --election-timeout-ms (mongod: 10000) */
   int64_t no_primary_since_ms; /* when the set lost its primary (wall ms) */
   int64_t election_ms;         /* when the current primary was elected (wall ms) */
   int64_t majority_lost_ms;    /* when the primary stopped seeing a majority (0: it sees one) */
   int64_t replication_lag_ms;  /* --replication-lag-ms: each secondary's default lag */
   void (*changed)(void *ctx);  /* after every change: wakes awaitable hellos */
   void *changed_ctx;
} md_topology_t;

/* Member 0 starts as primary of term 1 (the one-member set's electionId 7fffffff...01). */
void md_topology_init(md_topology_t *topo, int n, int64_t election_timeout_ms);
void md_topology_destroy(md_topology_t *topo);

/* hello's electionId for `term`: mongod's OID::fromTerm (0x7fffffff, then the term). */
void md_topology_election_id(int64_t term, bson_oid_t *oid);

/* Whether `m` may be elected now. */
bool md_topology_electable(const md_topology_t *topo, int m, int64_t now_ms);

/* Makes `m` primary of a new term (the former primary, if any, becomes a secondary). */
void md_topology_elect(md_topology_t *topo, int m, int64_t now_ms);

/* The primary steps down: a secondary not electable until now + secs. With `handoff`, the
 * first electable member after it is elected at once, as 6.0's election handoff makes a
 * caught-up secondary run at once; else the set waits for the election timeout. */
void md_topology_step_down(md_topology_t *topo, int64_t secs, int64_t now_ms, bool handoff);

/* The member that would win an election now (first electable after the last primary), or
 * -1 if none. */
int md_topology_candidate(const md_topology_t *topo, int64_t now_ms);

/* Makes `m` reachable or not. An unreachable primary is no primary for the others: they
 * elect another after the election timeout (a hung one learns the new term when it comes
 * back, so it is a secondary from now on: nobody can ask it meanwhile). An isolated
 * primary stays primary for its own clients until it notices it lost the majority (see
 * md_topology_tick): for a while the set has two primaries, the isolated one of an older
 * term. A member that comes back learns the current term. */
void md_topology_set_reach(md_topology_t *topo, int m, md_reach_t reach, int64_t now_ms);

/* Without a primary for the election timeout, elects the candidate; a primary that has not
 * seen a majority for the election timeout steps down (6.0: "can't see a majority"), an
 * isolated one a heartbeat interval (2 s) later than the others may elect (topology.c).
 * Returns the wall ms of the next moment worth checking again (INT64_MAX: nothing
 * pending). */
int64_t md_topology_tick(md_topology_t *topo, int64_t now_ms);

/* Wall-clock milliseconds (hello's lastWriteDate, election times, freeze deadlines). */
int64_t md_wall_ms(void);

#endif
