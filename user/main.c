// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* flatline: one binary, subcommands like bpftool or ip. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cmds.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} cmds[] = {
    {"agent", cmd_agent, "watch the local server in the kernel and log its events (root)"},
    {"events", cmd_events, "print or follow the event log"},
    {"controller", cmd_controller, "decide and execute failovers, serve the Sentinel API"},
    {"status", cmd_status, "shards, primaries, epochs, node health, last failover"},
    {"failover", cmd_failover, "planned switchover of a shard, no acknowledged write lost"},
    {"cutover", cmd_cutover, "is it safe to switch from shadow to active (after Sentinel)"},
    {"node", cmd_node, "add a node to a shard, or remove one, while the controller runs"},
    {"shard", cmd_shard, "add a shard, or remove one, while the controller runs"},
    {"peers", cmd_peers, "this host's per-peer ICMP table (from the pinned map)"},
    {"probe", cmd_probe, "probe peers with kernel-timed ICMP and log peer_up/down (root)"},
    {"node-key", cmd_node_key, "a node's key, for an agent's file without the cluster secret"},
    {"check", cmd_check, "validate a cluster file and print what each process will do"},
    {"import", cmd_import, "write a cluster file from sentinel.conf files or live Sentinels"},
    {"shadow-report", cmd_shadow_report, "Sentinel's failovers beside what flatline would do"},
    {"version", cmd_version, "print the version"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: flatline COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-13s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n`flatline COMMAND --help` describes each.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	/* A peer that resets a connection while we write to it (a server, a
	 * controller, a TLS peer) is an error on that link, not the end of the
	 * process. `events` keeps the default: `flatline events -f | head` ends
	 * when head does. */
	if (strcmp(argv[1], "events"))
		signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "flatline: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
