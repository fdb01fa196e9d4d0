// An application on ioredis with its default options, following a shard through the
// Sentinel API (flatline's controller or redis-sentinel): RPUSHes 0, 1, 2 ... to KEY
// at RATE per second, one command at a time, and writes every outcome to OUT:
//   A <value> <t_ns> <addr>           acknowledged by the server at addr
//   E <value> <t_ns> <addr> <error>   an error that reached the application
// With ROLE "replica" it reads from the replicas instead (role: "slave", LLEN KEY).
// On SIGTERM prints {"acked": N, "errors": N, "addr": "last server"} on stdout.
// usage: node app.js SENTINEL_HOST:PORT[,HOST:PORT] NAME KEY RATE OUT [master|replica]
// With SENTINEL_PASSWORD (and SENTINEL_USER) in the environment it logs in to the
// Sentinel API with ioredis's sentinelPassword (and sentinelUsername).
"use strict";
const fs = require("fs");
const Redis = require("ioredis");

const [sentinelArg, name, key, rateArg, outPath, roleArg] = process.argv.slice(2);
const reader = roleArg === "replica";
const sentinels = sentinelArg.split(",").map((s) => {
	const i = s.lastIndexOf(":");
	return { host: s.slice(0, i), port: Number(s.slice(i + 1)) };
});
const gapMs = 1000 / Number(rateArg);
const out = fs.openSync(outPath, "w");
const opts = { sentinels, name }; // the defaults, as an application has them
if (reader)
	opts.role = "slave";
if (process.env.SENTINEL_PASSWORD) {
	opts.sentinelPassword = process.env.SENTINEL_PASSWORD;
	if (process.env.SENTINEL_USER)
		opts.sentinelUsername = process.env.SENTINEL_USER;
}
const r = new Redis(opts);
let stop = false, acked = 0, errors = 0, addr = "-";

const nowNs = () => (BigInt(Date.now()) * 1000000n).toString();
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
process.on("SIGTERM", () => { stop = true; });
r.on("error", () => {}); // connection-level noise: only command errors reach the app

(async () => {
	for (let v = 0; !stop; v++) {
		const t0 = Date.now();
		try {
			if (reader)
				await r.llen(key);
			else
				await r.rpush(key, String(v));
			if (r.stream && r.stream.remoteAddress)
				addr = `${r.stream.remoteAddress}:${r.stream.remotePort}`;
			acked++;
			fs.writeSync(out, `A ${v} ${nowNs()} ${addr}\n`);
		} catch (e) {
			errors++;
			fs.writeSync(out, `E ${v} ${nowNs()} ${addr} ${String(e.message).replace(/\s+/g, " ")}\n`);
		}
		const left = gapMs - (Date.now() - t0);
		if (left > 0)
			await sleep(left);
	}
	console.log(JSON.stringify({ acked, errors, addr }));
	r.disconnect();
	process.exit(0);
})();
