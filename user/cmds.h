/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Subcommands of the flatline binary. Each returns the process exit status:
 * 0 ok, 1 runtime failure, 2 usage error. argv[0] is the subcommand name. */
#ifndef FL_CMDS_H
#define FL_CMDS_H

int cmd_agent(int argc, char **argv);
int cmd_events(int argc, char **argv);
int cmd_controller(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_failover(int argc, char **argv);
int cmd_cutover(int argc, char **argv);
int cmd_node(int argc, char **argv);
int cmd_shard(int argc, char **argv);
int cmd_peers(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_node_key(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_version(int argc, char **argv);
int cmd_shadow_report(int argc, char **argv);

#endif
