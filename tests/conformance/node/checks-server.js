'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * Node checks of the handshake and the server as a whole: connecting with directConnection
 * and replicaSet, hello (topologyVersion, streamed monitoring), buildInfo, serverStatus,
 * error replies and labels, write concerns, message sizes, sessions and retryable writes.
 */
exports.register = ({ check, assert, mongodb, newClient, hostPort, serverError, eventually }) => {
  const { ObjectId, Long, Int32, Timestamp, MongoWriteConcernError } = mongodb;
  const raw = { promoteValues: false, promoteLongs: false };

  check('connect: directConnection=true', async ({ admin }) => {
    const reply = await admin.command({ ping: 1 });
    assert.equal(reply.ok, 1);
  });

  check('connect: replicaSet=rs0 discovers the primary and writes', async ({ admin }) => {
    const { setName } = await admin.command({ hello: 1 });
    const rs = new mongodb.MongoClient(`mongodb://${hostPort()}/?replicaSet=${setName}`,
      { serverSelectionTimeoutMS: 10000 });
    try {
      await rs.connect();
      const coll = rs.db('outbox_node_checks').collection('rs_connect');
      await coll.deleteMany({});
      await coll.insertOne({ _id: 'via-rs' });
      assert.equal(await coll.countDocuments({}), 1);
      const desc = rs.topology.description;
      assert.equal(desc.type, 'ReplicaSetWithPrimary');
    } finally {
      await rs.close();
    }
  });

  check('hello: field types as a 6.0 primary', async ({ admin }) => {
    const h = await admin.command({ hello: 1, helloOk: true }, raw);
    assert.equal(h.isWritablePrimary, true);
    assert.equal(h.helloOk, true);
    assert.equal(h.setName, 'rs0');
    assert.ok(h.maxWireVersion instanceof Int32 && h.maxWireVersion.value === 17);
    assert.ok(h.maxBsonObjectSize instanceof Int32 && h.maxBsonObjectSize.value === 16777216);
    assert.ok(h.maxMessageSizeBytes instanceof Int32 && h.maxMessageSizeBytes.value === 48000000);
    assert.ok(h.localTime instanceof Date);
    assert.ok(h.operationTime instanceof Timestamp);
    assert.ok(h.$clusterTime.clusterTime instanceof Timestamp);
    assert.deepEqual(h.hosts, [h.me]);
    assert.equal(h.primary, h.me);
  });

  check('hello: topologyVersion {processId: ObjectId, counter: Int64}', async ({ admin }) => {
    const h = await admin.command({ hello: 1 }, raw);
    assert.ok(h.topologyVersion.processId instanceof ObjectId);
    assert.ok(h.topologyVersion.counter instanceof Long);
    const again = await admin.command({ isMaster: 1 }, raw);
    assert.ok(again.topologyVersion.processId.equals(h.topologyVersion.processId));
  });

  check('hello: awaitable form waits maxAwaitTimeMS, then answers', async ({ admin }) => {
    const { topologyVersion } = await admin.command({ hello: 1 });
    const started = Date.now();
    const h = await admin.command({ hello: 1, topologyVersion, maxAwaitTimeMS: 400 });
    assert.ok(Date.now() - started >= 350, `answered after ${Date.now() - started} ms`);
    assert.ok(h.topologyVersion.processId.equals(topologyVersion.processId));
    await serverError(admin.command({ hello: 1, maxAwaitTimeMS: 10 }), 31368);
  });

  for (const mode of ['stream', 'poll']) {
    check(`monitoring: serverMonitoringMode=${mode} keeps the primary`, async () => {
      const client = newClient('', { serverMonitoringMode: mode, heartbeatFrequencyMS: 500 });
      let awaited = 0;
      let failed = 0;
      client.on('serverHeartbeatSucceeded', (e) => { awaited += e.awaited ? 1 : 0; });
      client.on('serverHeartbeatFailed', () => { failed++; });
      await client.connect();
      if (mode === 'stream') {
        await eventually(() => awaited >= 2, 20000, 'two awaited (streamed) heartbeats');
      } else {
        await new Promise((resolve) => setTimeout(resolve, 1200));
        assert.equal(awaited, 0);
      }
      assert.equal(failed, 0);
      assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
      await client.close();
    });
  }

  check('buildInfo: a real 6.0 release', async ({ admin }) => {
    const info = await admin.command({ buildInfo: 1 });
    const parts = info.version.split('.').map(Number);
    assert.deepEqual(parts.slice(0, 2), [6, 0]);
    assert.ok(parts[2] < 30, info.version);
    assert.deepEqual(info.versionArray, [...parts, 0]);
  });

  check('serverStatus: process, uptime, repl', async ({ admin }) => {
    const s = await admin.command({ serverStatus: 1 });
    assert.equal(s.process, 'mongod');
    assert.equal(typeof s.uptime, 'number');
    assert.equal(s.repl.setName, 'rs0');
    assert.equal(s.repl.isWritablePrimary, true);
    const info = await admin.command({ buildInfo: 1 });
    assert.equal(s.version, info.version);
  });

  check('errors: unknown command is 59 CommandNotFound', async ({ db }) => {
    const e = await serverError(db.command({ noSuchCommandAtAll: 1 }), 59);
    assert.equal(e.codeName, 'CommandNotFound');
  });

  check('errors: failCommand errorCode and errorLabels reach the driver', async (ctx) => {
    const coll = await ctx.coll('fp_labels');
    await ctx.failPoint({ mode: { times: 1 },
      data: { failCommands: ['find'], errorCode: 2, errorLabels: ['SomeLabel'] } });
    await serverError(coll.findOne({}), 2, ['SomeLabel']);
    assert.equal(await coll.findOne({}), null);
  });

  check('write concern: w:2 applies, then writeConcernError 100', async (ctx) => {
    const coll = await ctx.coll('wc_w2');
    let error;
    try {
      await coll.insertOne({ _id: 1 }, { writeConcern: { w: 2, wtimeoutMS: 60000 } });
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof MongoWriteConcernError, String(error));
    assert.equal(error.code, 100);
    assert.equal(error.result.writeConcernError.errmsg, 'Not enough data-bearing nodes');
    assert.deepEqual(await coll.findOne({}), { _id: 1 });
  });

  check('write concern: unknown tag mode is 79, majority is fine', async (ctx) => {
    const coll = await ctx.coll('wc_tag');
    const e = await serverError(coll.insertOne({ _id: 1 }, { writeConcern: { w: 'dc2' } }), 79);
    assert.ok(e instanceof MongoWriteConcernError);
    await coll.insertOne({ _id: 2 }, { writeConcern: { w: 'majority', wtimeoutMS: 1000 } });
    assert.equal(await coll.countDocuments({}), 2);
  });

  check('sizes: a 16 MiB document is accepted, one byte more is code 2', async (ctx) => {
    const coll = await ctx.coll('sizes_doc');
    const base = mongodb.BSON.calculateObjectSize({ _id: 1, s: '' });
    await coll.insertOne({ _id: 1, s: 'a'.repeat(16 * 1024 * 1024 - base) });
    await serverError(coll.insertOne({ _id: 2, s: 'a'.repeat(16 * 1024 * 1024 - base + 1) }), 2);
    assert.equal(await coll.countDocuments({}), 1);
  });

  check('sizes: a command over 16 MiB + 16 KiB is 10334 and the connection stays', async (ctx) => {
    const coll = await ctx.coll('sizes_cmd');
    let closed = 0;
    ctx.client.on('connectionClosed', () => { closed++; });
    const e = await serverError(coll.insertOne({ s: 'a'.repeat(16 * 1024 * 1024 + 20 * 1024) }),
      10334);
    assert.equal(e.codeName, 'BSONObjectTooLarge');
    assert.match(e.message, /^BSONObj size: \d+ \(0x[0-9A-F]+\) is invalid\. Size must be between 0 and 16793600\(16MB\)/);
    assert.equal((await ctx.admin.command({ ping: 1 })).ok, 1);
    assert.equal(closed, 0, 'no connection was closed');
  });

  check('sizes: an update growing a document past 16 MiB is 17419', async (ctx) => {
    const coll = await ctx.coll('sizes_grow');
    await coll.insertOne({ _id: 1, a: 'a'.repeat(9 * 1024 * 1024) });
    await serverError(coll.updateOne({ _id: 1 }, { $set: { b: 'b'.repeat(8 * 1024 * 1024) } }),
      17419);
  });

  check('sessions: explicit session, causal reads see the write', async (ctx) => {
    const coll = await ctx.coll('sessions');
    const session = ctx.client.startSession({ causalConsistency: true });
    try {
      await coll.insertOne({ _id: 1 }, { session });
      assert.ok(session.operationTime instanceof Timestamp);
      assert.deepEqual(await coll.findOne({ _id: 1 }, { session }), { _id: 1 });
    } finally {
      await session.endSession();
    }
  });

  check('retryable writes: a write whose reply is lost applies once', async (ctx) => {
    const coll = await ctx.coll('retry_lost');
    await ctx.failPoint({ mode: { times: 1 },
      data: { failCommands: ['insert'], closeConnection: true } });
    await coll.insertOne({ _id: 1 });
    assert.equal(await coll.countDocuments({}), 1);
    await ctx.admin.command({ configureFailPoint: 'onPrimaryTransactionalWrite',
      mode: { times: 1 }, data: { closeConnection: true } });
    await coll.updateOne({ _id: 1 }, { $inc: { n: 1 } });
    assert.deepEqual(await coll.findOne({ _id: 1 }), { _id: 1, n: 1 });
  });

  check('retryable writes: a retryable code gets RetryableWriteError and is retried', async (ctx) => {
    const coll = await ctx.coll('retry_code');
    await ctx.failPoint({ mode: { times: 1 }, data: { failCommands: ['insert'], errorCode: 91 } });
    await coll.insertOne({ _id: 1 });
    assert.equal(await coll.countDocuments({}), 1);
    const noRetry = newClient('retryWrites=false');
    await ctx.failPoint({ mode: { times: 1 }, data: { failCommands: ['insert'], errorCode: 91 } });
    const e = await serverError(
      noRetry.db(ctx.db.databaseName).collection('retry_code').insertOne({ _id: 2 }), 91);
    assert.ok(!e.hasErrorLabel('RetryableWriteError'), 'not a retryable write: no label');
  });
};
