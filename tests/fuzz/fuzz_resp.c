// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: the controller's RESP command reader (resp_feed/resp_next),
 * which every byte from an agent or client goes through, and the REPORT parser
 * (fo_report_parse) on every REPORT command it yields. The first input byte picks
 * the chunk size the rest is fed in (a TCP stream splits anywhere). Contract: every
 * command has 1..RESP_MAX_ARGS arguments, each NUL-terminated at its length, no frame
 * past RESP_MAX_FRAME; an error is final and says "Protocol error" or is -ENOMEM. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "controller/failover.h"
#include "common/resp.h"

/* A three-node cluster for REPORT's peer.<id> keys; built once, never freed. */
static struct fo_cluster *cluster(void)
{
	static struct fo_cluster c;
	static struct cfg *cfg;
	char err[256];

	if (!cfg) {
		if (cfg_load_string("fuzz",
				    "[cluster]\nname = f\nsecret = 0123456789abcdef\n"
				    "[node \"n1\"]\naddress = 10.0.0.1\nredis = 10.0.0.1:6379\n"
				    "[node \"n2\"]\naddress = 10.0.0.2\nredis = 10.0.0.2:6379\n"
				    "[node \"n3\"]\naddress = 10.0.0.3\nredis = 10.0.0.3:6379\n"
				    "[shard \"s\"]\nnodes = n1 n2 n3\n",
				    &cfg, err, sizeof(err)) ||
		    fo_cluster_init(&c, cfg, NULL, NULL))
			abort();
	}
	return &c;
}

static void report(const struct resp_cmd *c)
{
	struct fo_report rep;
	char why[160];

	if (strcasecmp(c->argv[0], "REPORT") || c->argc < 2)
		return;
	if (fo_report_parse(cluster(), &rep, c->argc - 2, (const char **)c->argv + 2, c->lens + 2,
			    why, sizeof(why)) == 0) {
		if ((c->argc - 2) % 2 || rep.repl.master_port < 0 || rep.repl.master_port > 65535 ||
		    rep.repl.slave_priority < 0 || (unsigned)rep.proc > FO_PROC_LOADING)
			abort();
	} else if (!why[0]) {
		abort(); /* a rejection says why */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct resp_reader *r;
	size_t chunk, off = 1;
	int rc = 0;

	if (size < 1)
		return 0;
	chunk = 1 + data[0] % 64;
	r = resp_reader_new();
	if (!r)
		return 0;
	while (off < size && rc >= 0) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (resp_feed(r, (const char *)data + off, n))
			break;
		off += n;
		for (;;) {
			struct resp_cmd c;

			rc = resp_next(r, &c);
			if (rc <= 0)
				break;
			if (c.argc < 1 || c.argc > RESP_MAX_ARGS)
				abort();
			for (int i = 0; i < c.argc; i++)
				if (c.lens[i] > RESP_MAX_FRAME || c.argv[i][c.lens[i]] != '\0')
					abort();
			report(&c);
			resp_cmd_free(&c);
		}
		if (rc < 0 && rc != -ENOMEM && !strstr(resp_error(r), "Protocol error"))
			abort();
		if (rc == 0 && resp_pending(r) > RESP_MAX_FRAME + RESP_MAX_INLINE + 64)
			abort(); /* buffering past the limits without refusing */
	}
	resp_reader_free(r);
	return 0;
}
