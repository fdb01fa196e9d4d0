// An application on ioredis's Cluster client with its default options (it follows
// MOVED/ASK and refreshes its slot map from the cluster itself): SETs w:0, w:1, ...
// (value = index) one command at a time, as fast as it goes, and writes every outcome
// to OUT, in tests/lib/rcwriter.py's format (its `check` reads it back):
//   A <i> <t_ns> <slot>   acknowledged
//   E <i> <t_ns> <slot>   an error that reached the application (may have been applied)
// On SIGTERM prints {"acked": N, "errors": N} on stdout.
// usage: node cluster_writer.js HOST:PORT[,HOST:PORT...] OUT
"use strict";
const fs = require("fs");
const Redis = require("ioredis");
const keySlot = require("cluster-key-slot"); // ioredis's own slot function

const [nodesArg, outPath] = process.argv.slice(2);
const nodes = nodesArg.split(",").map((s) => {
	const i = s.lastIndexOf(":");
	return i < 0 ? { host: "127.0.0.1", port: Number(s) }
		     : { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
});
const out = fs.openSync(outPath, "w");
const c = new Redis.Cluster(nodes); // the defaults, as an application has them
let stop = false, acked = 0, errors = 0;

const { performance } = require("perf_hooks");
const nowNs = () => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1000)) * 1000n;
process.on("SIGTERM", () => { stop = true; });
c.on("error", () => {}); // connection-level noise: only command errors reach the app

(async () => {
	for (let i = 0; !stop; i++) {
		const key = `w:${i}`;
		try {
			await c.set(key, String(i));
			acked++;
			fs.writeSync(out, `A ${i} ${nowNs().toString()} ${keySlot(key)}\n`);
		} catch (e) {
			errors++;
			fs.writeSync(out, `E ${i} ${nowNs().toString()} ${keySlot(key)}\n`);
		}
	}
	console.log(JSON.stringify({ acked, errors }));
	c.disconnect();
})();
