// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* `flatline node-key`: a node's key (common/auth.h), derived from the cluster
 * secret, for the [node] key line of an agent's file that should not hold the
 * cluster secret itself. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"
#include "common/auth.h"
#include "common/config.h"
#include "common/log.h"

static const char usage[] =
    "usage: flatline node-key [-c FILE] NODE\n"
    "\n"
    "Prints NODE's key, derived from the cluster file's [cluster] secret, for\n"
    "`key = ...` in [node \"NODE\"] of that host's file (which then needs no secret).\n"
    "  -c, --config FILE  the cluster file (default /etc/flatline/cluster.conf)\n";

int cmd_node_key(int argc, char **argv)
{
	static const struct option lopts[] = {
	    {"config", required_argument, NULL, 'c'}, {"help", no_argument, NULL, 'h'}, {0}};
	const char *path = "/etc/flatline/cluster.conf";
	uint8_t key[AUTH_KEY_LEN];
	char hex[AUTH_HEX_LEN + 1], err[512];
	struct cfg *cfg;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:h", lopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fputs(usage, stderr);
		return 2;
	}
	if (cfg_load(path, &cfg, err, sizeof(err))) {
		pr_warn("%s\n", err);
		return 1;
	}
	if (!cfg->secret[0]) {
		pr_warn("failed to derive the key of node %s: no [cluster] secret in the file\n",
			argv[optind]);
		cfg_free(cfg);
		return 1;
	}
	/* A node added at runtime (flatline node add) is in no file: its key is derived
	 * the same way. */
	if (!cfg_find_node(cfg, argv[optind]))
		pr_info("node %s is not in %s: the key of a node added at runtime\n", argv[optind],
			path);
	if (auth_node_key(cfg->secret, strlen(cfg->secret), argv[optind], key)) {
		pr_warn("failed to derive the key of node %s: libcrypto error\n", argv[optind]);
		cfg_free(cfg);
		return 1;
	}
	auth_hex(key, sizeof(key), hex);
	printf("%s\n", hex);
	cfg_free(cfg);
	return 0;
}
