// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
//
// The fuzzer's Node writer: stores whole documents with the official `mongodb` driver, as a
// Node service that writes the outbox contract by hand would. Each input line is
// "CASE DOCUMENT", the document in canonical extended JSON (so every type is the one the
// fuzzer chose: an int32 seq, a string time ...); prints "OK CASE" after each insert.
// usage: node node-writer.js URI DB COLL < lines
'use strict';
const readline = require('readline');
const { MongoClient, BSON } = require('mongodb');

async function main([uri, db, collName]) {
  const client = new MongoClient(uri);
  await client.connect();
  const coll = client.db(db).collection(collName);
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (!line) continue;
    const space = line.indexOf(' ');
    const doc = BSON.EJSON.parse(line.slice(space + 1), { relaxed: false });
    await coll.insertOne(doc, { writeConcern: { w: 'majority' } });
    console.log(`OK ${line.slice(0, space)}`);
  }
  await client.close();
}

main(process.argv.slice(2)).catch((err) => {
  console.error(`node-writer: ${err.stack || err}`);
  process.exit(1);
});
