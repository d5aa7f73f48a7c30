// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The Node example writer (examples/node/writer.js) driven by the fuzzer: each input line is
// "CASE JSON" with JSON {"id": entity id, "type": ..., "data": ...} in canonical extended
// JSON; the writer's create() stores it. Prints "OK CASE EVENT-ID" or "REFUSED CASE MESSAGE".
// usage: node node-example.js WRITER.js URI DB COLL < lines
'use strict';
const readline = require('readline');
const { MongoClient, BSON } = require('mongodb');

async function main([writerPath, uri, db, collName]) {
  const writer = require(writerPath);
  const client = new MongoClient(uri);
  await client.connect();
  const coll = client.db(db).collection(collName);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    const space = line.indexOf(' ');
    const n = line.slice(0, space);
    const c = BSON.EJSON.parse(line.slice(space + 1), { relaxed: false });
    try {
      const [ev] = await writer.create(coll, c.id, {}, [[c.type, c.data]]);
      console.log(`OK ${n} ${ev.id}`);
    } catch (err) {
      console.log(`REFUSED ${n} ${String(err.message).replace(/\s+/g, ' ')}`);
    }
  }
  await client.close();
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`node-example: ${err.stack || err}`);
  process.exit(1);
});
