'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The Node.js driver (npm `mongodb` 6.x) against a replica set of three members
 * (test-mongod --members 3): one seed finds every member, a secondary refuses a write with
 * 10107 "not primary", and a primary that steps down while a retryable insert is held by
 * failCommand's blockConnection makes the driver retry it once on the new primary, where it
 * runs once; w: "majority" times out with 64 and a change stream holds a write back while the
 * secondaries are paused (testMemberFault); a change stream resumes on the new primary
 * after its primary went away, with no event missed or repeated; a client given every
 * member refuses an isolated primary whose electionId is older than the new one's.
 * Started by tests/conformance/node/run (OUTBOX_NODE_SCRIPT), which installs the
 * driver; prints `PASS name` / `FAIL name -- reason` and exits 1 on a failure, 77 without
 * three members.
 */
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

const URI = process.env.OUTBOX_TEST_MONGODB_URI;
const SEED = new URL(URI.replace(/^mongodb:/, 'http:')).host;

function client(host, options = {}) {
  const query = host === SEED && options.replicaSet ? 'replicaSet=rs0' : 'directConnection=true';
  delete options.replicaSet;
  return new MongoClient(`mongodb://${host}/?${query}`,
                         { serverSelectionTimeoutMS: 5000, ...options });
}

async function hello(host) {
  const c = client(host);
  try {
    return await c.db('admin').command({ hello: 1 });
  } finally {
    await c.close();
  }
}

async function roles() {
  const hosts = (await hello(SEED)).hosts;
  let primary = null;
  for (const host of hosts) {
    if ((await hello(host)).isWritablePrimary) {
      primary = host;
    }
  }
  return { hosts, primary };
}

async function adminOn(host, cmd) {
  const c = client(host);
  try {
    return await c.db('admin').command(cmd);
  } finally {
    await c.close();
  }
}

const checks = {
  async 'one seed discovers every member'() {
    const { primary } = await roles();
    const c = client(SEED, { replicaSet: true });
    try {
      await c.db('admin').command({ ping: 1 });
      let servers = [];
      for (let i = 0; i < 100; i++) {
        servers = [...c.topology.description.servers.values()];
        if (servers.filter((s) => s.type === 'RSSecondary').length === 2) {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(servers.length, 3);
      assert.deepEqual(servers.filter((s) => s.type === 'RSPrimary').map((s) => s.address),
                       [primary]);
      assert.equal(servers.filter((s) => s.type === 'RSSecondary').length, 2);
    } finally {
      await c.close();
    }
  },

  async 'a secondary refuses a write with 10107'() {
    const { hosts, primary } = await roles();
    const c = client(hosts.find((h) => h !== primary));
    try {
      await assert.rejects(c.db('outbox_replset').collection('refused').insertOne({ x: 1 }),
                           (e) => e.code === 10107 && e.message === 'not primary');
    } finally {
      await c.close();
    }
  },

  async 'follows a stepdown and retries the write once'() {
    const { primary: old } = await roles();
    const events = [];
    const c = client(SEED, { replicaSet: true, monitorCommands: true, appName: 'rs-node' });
    c.on('commandStarted', (e) => e.commandName === 'insert' && events.push(['started', e.address]));
    c.on('commandFailed', (e) => e.commandName === 'insert' &&
         events.push(['failed', e.address, e.failure.code]));
    c.on('commandSucceeded', (e) => e.commandName === 'insert' &&
         events.push(['succeeded', e.address]));
    try {
      const coll = c.db('outbox_replset').collection(`node_${process.pid}`);
      await coll.insertOne({ _id: 1 });
      await adminOn(old, {
        configureFailPoint: 'failCommand', mode: { times: 1 },
        data: { failCommands: ['insert'], blockConnection: true, blockTimeMS: 1000,
                appName: 'rs-node' },
      });
      events.length = 0;
      const stepDown = new Promise((r) => setTimeout(r, 300)).then(
        () => adminOn(old, { replSetStepDown: 5, secondaryCatchUpPeriodSecs: 0 }));
      await coll.insertOne({ _id: 2 });
      await stepDown;
      assert.deepEqual(events.map((e) => e[0]), ['started', 'failed', 'started', 'succeeded'],
                       JSON.stringify(events));
      assert.deepEqual(events[1].slice(1), [old, 10107]);
      assert.notEqual(events[3][1], old);
      assert.equal(await coll.countDocuments({ _id: 2 }), 1);
      assert.equal((await roles()).primary, events[3][1]);
    } finally {
      await c.close();
      await adminOn(old, { replSetFreeze: 0 });
    }
  },

  async 'w: majority times out with 64 while the secondaries are paused'() {
    const { hosts, primary } = await roles();
    const secondaries = hosts.filter((h) => h !== primary);
    const via = secondaries[0];
    for (const host of secondaries) {
      await adminOn(via, { testMemberFault: host, mode: 'pause' });
    }
    const c = client(primary);
    try {
      const coll = c.db('outbox_replset').collection(`wmaj_node_${process.pid}`);
      await assert.rejects(coll.insertOne({ _id: 1 },
                                          { writeConcern: { w: 'majority', wtimeout: 300 } }),
                           (e) => e.code === 64 && e.errInfo && e.errInfo.wtimeout === true);
      assert.equal(await coll.countDocuments({ _id: 1 }), 1);
      await adminOn(via, { testMemberFault: secondaries[1], mode: 'resume' });
      await coll.insertOne({ _id: 2 }, { writeConcern: { w: 'majority', wtimeout: 5000 } });
    } finally {
      await c.close();
      for (const host of secondaries) {
        await adminOn(primary, { testMemberFault: host, mode: 'resume' });
      }
    }
  },

  async 'a change stream waits for the commit point'() {
    const { hosts, primary } = await roles();
    const secondaries = hosts.filter((h) => h !== primary);
    const c = client(primary);
    const coll = c.db('outbox_replset').collection(`csmaj_node_${process.pid}`);
    const stream = coll.watch([], { maxAwaitTimeMS: 300 });
    try {
      await stream.tryNext(); /* the cursor exists before the write */
      for (const host of secondaries) {
        await adminOn(primary, { testMemberFault: host, mode: 'pause' });
      }
      await coll.insertOne({ _id: 1 });
      assert.equal(await stream.tryNext(), null, 'an uncommitted write was shown');
      await adminOn(primary, { testMemberFault: secondaries[0], mode: 'resume' });
      let change = null;
      for (let i = 0; i < 10 && !change; i++) {
        change = await stream.tryNext();
      }
      assert.ok(change, 'the committed write never came');
      assert.deepEqual(change.documentKey, { _id: 1 });
    } finally {
      await stream.close();
      await c.close();
      for (const host of secondaries) {
        await adminOn(primary, { testMemberFault: host, mode: 'resume' });
      }
    }
  },

  async 'a change stream resumes on the new primary with no event missed or repeated'() {
    const { hosts, primary: old } = await roles();
    const via = hosts.find((h) => h !== old);
    const c = client(SEED, { replicaSet: true, monitorCommands: true });
    const aggregates = [];
    c.on('commandStarted', (e) => e.commandName === 'aggregate' && aggregates.push(e.address));
    const coll = c.db('outbox_replset').collection(`csresume_node_${process.pid}`);
    const stream = coll.watch([], { maxAwaitTimeMS: 300 });
    const seen = [];
    const take = async (n) => {
      for (let i = 0; i < 40 && seen.length < n; i++) {
        const change = await stream.tryNext();
        if (change) {
          seen.push(change.documentKey._id);
        }
      }
    };
    try {
      await stream.tryNext(); /* the cursor exists before the writes */
      await coll.insertMany([{ _id: 1 }, { _id: 2 }], { writeConcern: { w: 'majority' } });
      await take(2);
      /* The primary is gone (its connections reset): the others elect a new one. */
      await adminOn(via, { testMemberFault: old, mode: 'refuse' });
      /* The driver learns of the new primary from its monitors (as it would of a crashed
       * one), then writes there; the stream's next getMore finds its connection reset. */
      let fresh = null;
      for (let i = 0; i < 200 && !fresh; i++) {
        const found = [...c.topology.description.servers.values()].find(
          (sd) => sd.type === 'RSPrimary' && sd.address !== old);
        fresh = found ? found.address : null;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.ok(fresh, 'the driver never saw a new primary');
      await coll.insertOne({ _id: 3 }, { writeConcern: { w: 'majority' } });
      await take(3);
      await coll.insertOne({ _id: 4 }, { writeConcern: { w: 'majority' } });
      await take(4);
      assert.deepEqual(seen, [1, 2, 3, 4]);
      const resumedOn = aggregates[aggregates.length - 1];
      assert.ok(aggregates.length >= 2 && resumedOn !== old,
                `no resume on the new primary: ${JSON.stringify(aggregates)}`);
      assert.equal(resumedOn, fresh);
    } finally {
      await stream.close().catch(() => {});
      await c.close();
      await adminOn(via, { testMemberFault: old, mode: 'heal' });
    }
  },

  async 'a stale primary (older electionId) is refused'() {
    const { hosts, primary: old } = await roles();
    const via = hosts.find((h) => h !== old);
    const c = new MongoClient(`mongodb://${hosts.join(',')}/?replicaSet=rs0`,
                              { serverSelectionTimeoutMS: 5000, monitorCommands: true });
    const inserts = [];
    c.on('commandSucceeded', (e) => e.commandName === 'insert' && inserts.push(e.address));
    try {
      const coll = c.db('outbox_replset').collection(`stale_node_${process.pid}`);
      await coll.insertOne({ _id: 1 });
      /* Cut off from the others, the old primary still says it is primary (older term)
       * until it notices, while the others elect a new one. */
      await adminOn(via, { testMemberFault: old, mode: 'isolate' });
      let fresh = null;
      for (let i = 0; i < 250 && !fresh; i++) {
        for (const h of hosts.filter((x) => x !== old)) {
          if ((await hello(h)).isWritablePrimary) {
            fresh = h;
          }
        }
        await new Promise((r) => setTimeout(r, 20));
      }
      assert.ok(fresh, 'no new primary was elected');
      const stale = await hello(old);
      assert.ok(stale.isWritablePrimary, 'the isolated primary stepped down too early');
      assert.ok(stale.electionId.toHexString() < (await hello(fresh)).electionId.toHexString());
      inserts.length = 0;
      await c.db('admin').command({ ping: 1 });
      let servers = [];
      for (let i = 0; i < 100; i++) {
        servers = [...c.topology.description.servers.values()];
        if (servers.some((s) => s.type === 'RSPrimary' && s.address === fresh)) {
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(servers.filter((s) => s.type === 'RSPrimary').map((s) => s.address),
                       [fresh], JSON.stringify(servers.map((s) => [s.address, s.type])));
      await coll.insertOne({ _id: 2 });
      assert.deepEqual(inserts, [fresh]);
    } finally {
      await c.close();
      await adminOn(via, { testMemberFault: old, mode: 'heal' });
    }
  },
};

(async () => {
  if ((await hello(SEED)).hosts.length < 3) {
    console.log('mongod-replset-node: SKIP: needs a replica set of three members');
    process.exit(77);
  }
  let failed = 0;
  for (const [name, fn] of Object.entries(checks)) {
    try {
      await fn();
      console.log(`PASS ${name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL ${name} -- ${e.stack || e}`);
    }
  }
  console.log(`mongod-replset-node: ${Object.keys(checks).length - failed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
})();
