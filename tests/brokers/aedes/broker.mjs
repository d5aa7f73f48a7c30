// Copyright 2026 the outbox authors. Licensed under the Apache License 2.0.
// One aedes broker for outbox-relay's broker tests (../otherbrokers.py starts and stops it):
// in-memory persistence, one TCP listener on 127.0.0.1, optional username/password and
// maximumPacketSize (the MQTT 5 line only), and an optional record of every PUBLISH it
// accepted. The record is written synchronously before aedes acknowledges the message, so it
// holds everything the broker acknowledged even when the broker is killed: aedes keeps its
// sessions and queues in memory, so a subscriber cannot prove "lost=0" across a restart.
//
// With --ws-port it also serves MQTT over WebSockets (the ws package) on that port at
// --ws-path (default /mqtt), over TLS (wss) when --tls-cert and --tls-key are given.
//
// usage: node broker.mjs MODULES_DIR PACKAGE PORT [--user U --password P]
//                        [--max-packet-size N] [--record FILE]
//                        [--ws-port N [--ws-path P] [--tls-cert F --tls-key F]]
// Prints "aedes VERSION listening on PORT" once it accepts connections; exits on SIGTERM.
import fs from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import net from 'node:net'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [modulesDir, packageName, portText, ...rest] = process.argv.slice(2)
const opts = {}
for (let i = 0; i < rest.length; i += 2) opts[rest[i].replace(/^--/, '')] = rest[i + 1]

const packageDir = path.join(modulesDir, packageName)
const version = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'))).version
// An ES module does not search NODE_PATH: import the package by its file.
const { Aedes } = await import(pathToFileURL(path.join(packageDir, 'aedes.js')).href)

const recordFd = opts.record ? fs.openSync(opts.record, 'a') : null

const brokerOpts = {
  // Refuses a wrong user or password with return code 4 (3.1.1) / reason 0x86 (MQTT 5).
  authenticate (client, username, password, callback) {
    if (!opts.user) return callback(null, true)
    const ok = username === opts.user && password && password.toString() === opts.password
    if (ok) return callback(null, true)
    const err = new Error('bad user name or password')
    err.returnCode = 4
    callback(err, false)
  },
  authorizePublish (client, packet, callback) {
    if (recordFd !== null && packet.topic.startsWith('outbox/')) {
      const line = JSON.stringify({ topic: packet.topic, qos: packet.qos,
        payload: Buffer.from(packet.payload).toString('base64') })
      fs.writeSync(recordFd, line + '\n')
    }
    callback(null)
  }
}
if (opts['max-packet-size']) brokerOpts.maximumPacketSize = Number(opts['max-packet-size'])

const broker = await Aedes.createBroker(brokerOpts)
broker.on('clientError', (client, err) => {
  console.log('client error', client && client.id, err.message)
})
broker.on('connectionError', (client, err) => {
  console.log('connection error', client && client.id, err.message)
})

const server = net.createServer(broker.handle)
server.listen(Number(portText), '127.0.0.1', () => {
  console.log('aedes %s listening on %s', version, portText)
})

// MQTT over WebSockets: each connection's messages as one byte stream (binary frames) for
// aedes; the ws server answers the client's "mqtt" subprotocol (its first offer).
let web = null
if (opts['ws-port']) {
  const wsEntry = pathToFileURL(path.join(modulesDir, 'ws', 'wrapper.mjs')).href
  const { WebSocketServer, createWebSocketStream } = await import(wsEntry)
  web = opts['tls-cert']
    ? https.createServer({ cert: fs.readFileSync(opts['tls-cert']), key: fs.readFileSync(opts['tls-key']) })
    : http.createServer()
  const wss = new WebSocketServer({ server: web, path: opts['ws-path'] || '/mqtt' })
  wss.on('connection', (socket) => broker.handle(createWebSocketStream(socket)))
  web.listen(Number(opts['ws-port']), '127.0.0.1', () => {
    console.log('aedes %s listening for %s on %s%s', version, opts['tls-cert'] ? 'wss' : 'ws',
      opts['ws-port'], opts['ws-path'] || '/mqtt')
  })
}

process.on('SIGTERM', () => {
  server.close()
  if (web) web.close()
  broker.close(() => process.exit(0))
  setTimeout(() => process.exit(0), 1000).unref()
})
