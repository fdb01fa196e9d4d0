/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Decoding a task's exit_code (the wait(2) status) into its cause. */
#ifndef FL_EXIT_CODE_H
#define FL_EXIT_CODE_H

#include <stdbool.h>
#include <stdint.h>

struct exit_cause {
	int signal;	  /* terminating signal, 0 if the process exited */
	bool core_dumped; /* the signal dumped core (WCOREDUMP) */
	int status;	  /* exit status when signal == 0 */
};

void exit_code_decode(uint32_t exit_code, struct exit_cause *c);
/* "SIGKILL" for 9; "SIGRTMIN+3" for real-time signals; NULL outside 1..64. */
const char *exit_code_signame(int sig, char *buf, int len);

#endif
