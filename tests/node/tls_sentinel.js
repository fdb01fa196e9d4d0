// ioredis through flatline's Sentinel API over TLS (tests/integration/test_tls.sh):
// sentinelTLS for the controller, enableTLSForSentinelMode + tls for the primary,
// the client certificate on both. Writes a key, reads it back, prints
//   get <value>
//   addr <the primary's host:port>
// usage: node tls_sentinel.js SENTINEL_PORT NAME PKI_DIR
"use strict";
const fs = require("fs");
const Redis = require("ioredis");

const [port, name, dir] = process.argv.slice(2);
const tls = {
	ca: fs.readFileSync(`${dir}/ca.crt`),
	cert: fs.readFileSync(`${dir}/client.crt`),
	key: fs.readFileSync(`${dir}/client.key`),
};
const r = new Redis({
	sentinels: [{ host: "127.0.0.1", port: Number(port) }],
	name,
	sentinelTLS: tls,
	enableTLSForSentinelMode: true,
	tls,
	maxRetriesPerRequest: 2,
	sentinelMaxConnections: 1,
});
r.on("error", (e) => console.error(`error ${e.message}`));

(async () => {
	try {
		await r.set("io", "ok");
		console.log(`get ${await r.get("io")}`);
		console.log(`addr ${r.stream.remoteAddress}:${r.stream.remotePort}`);
		r.disconnect();
		process.exit(0);
	} catch (e) {
		console.error(`failed: ${e.message}`);
		process.exit(1);
	}
})();
