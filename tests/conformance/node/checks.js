'use strict';
/*
 * Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
 *
 * The official Node.js driver (npm `mongodb` 6.x) as a second client of the conformance
 * suite: a broad set of checks of what MongoDB 6.0 does, run against
 * $OUTBOX_TEST_MONGODB_URI (test-mongod under tests/fixtures/with-servers, or a real
 * `mongod --replSet rs0 --setParameter enableTestCommands=1`, where they must pass too).
 * Prints `PASS name` / `FAIL name -- reason` per check and `server-node: N passed, N failed,
 * N skipped`; exits 1 if any failed. Arguments select checks whose name contains one of them.
 * Started by ./run, which installs the driver.
 */
const assert = require('node:assert/strict');
const mongodb = require('mongodb');

const { MongoClient, MongoServerError } = mongodb;
const URI = process.env.OUTBOX_TEST_MONGODB_URI;
const DB = 'outbox_node_checks';
const CHECK_TIMEOUT_MS = 60000;

const checks = [];
const clients = [];

/* Registers a check: `fn(ctx)` throws (or rejects) on failure; ctx.skip(reason) skips. */
function check(name, fn) {
  checks.push({ name, fn });
}

class Skip extends Error {}

function newClient(extraUri = '', options = {}) {
  const sep = URI.includes('?') ? '&' : '?';
  const client = new MongoClient(extraUri ? URI + sep + extraUri : URI, {
    serverSelectionTimeoutMS: 10000,
    ...options,
  });
  clients.push(client);
  return client;
}

/* host:port of the server, from the URI. */
function hostPort() {
  return new URL(URI.replace(/^mongodb:/, 'http:')).host;
}

/* Expects `promise` to reject with a server error of `code` (and `labels`, if given). */
async function serverError(promise, code, labels) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `expected error ${code}, got success`);
  assert.equal(error.code, code, `expected code ${code}, got ${error.code}: ${error.message}`);
  for (const label of labels || []) {
    assert.ok(error.hasErrorLabel(label), `${error.message}: no label ${label} in ` +
      JSON.stringify(error.errorLabels));
  }
  return error;
}

/* Polls `fn` until it returns a truthy value or `ms` pass. */
async function eventually(fn, ms = 20000, what = 'condition') {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`${what} not reached within ${ms} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function withTimeout(promise, ms, name) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${name}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main(argv) {
  const client = newClient();
  await client.connect();
  const ctx = {
    client,
    db: client.db(DB),
    admin: client.db('admin'),
    /* A fresh, empty collection for one check. */
    async coll(name) {
      const c = client.db(DB).collection(name);
      await c.drop().catch(() => {});
      return c;
    },
    async failPoint(spec) {
      await client.db('admin').command({ configureFailPoint: 'failCommand', ...spec });
    },
    async failPointOff(name = 'failCommand') {
      await client.db('admin').command({ configureFailPoint: name, mode: 'off' });
    },
    skip(reason) {
      throw new Skip(reason);
    },
  };
  const t = { check, assert, mongodb, newClient, hostPort, serverError, eventually, DB };
  for (const part of ['./checks-server', './checks-crud', './checks-aggregate',
    './checks-streams']) {
    require(part).register(t);
  }
  const selected = checks.filter((c) => !argv.length || argv.some((a) => c.name.includes(a)));
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for (const c of selected) {
    try {
      await withTimeout(Promise.resolve().then(() => c.fn(ctx)), CHECK_TIMEOUT_MS, c.name);
      passed++;
      console.log(`PASS ${c.name}`);
    } catch (e) {
      if (e instanceof Skip) {
        skipped++;
        console.log(`SKIP ${c.name} -- ${e.message}`);
      } else {
        failed++;
        console.log(`FAIL ${c.name} -- ${String(e && e.stack || e).split('\n').slice(0, 3).join(' | ')}`);
      }
      await ctx.failPointOff().catch(() => {});
    }
  }
  for (const c of clients) {
    await c.close(true).catch(() => {});
  }
  console.log(`server-node: ${passed} passed, ${failed} failed, ${skipped} skipped`);
  return failed ? 1 : 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then((status) => process.exit(status), (e) => {
    console.log(`server-node: cannot run: ${e && e.stack || e}`);
    process.exit(1);
  });
}

module.exports = { MongoServerError };
