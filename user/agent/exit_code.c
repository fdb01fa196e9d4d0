// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdio.h>
#include "agent/exit_code.h"

/* Linux's generic numbering (x86, arm64, riscv …; not alpha, mips, sparc). */
static const char *const signames[] = {
    [1] = "SIGHUP",	[2] = "SIGINT",	  [3] = "SIGQUIT",   [4] = "SIGILL",   [5] = "SIGTRAP",
    [6] = "SIGABRT",	[7] = "SIGBUS",	  [8] = "SIGFPE",    [9] = "SIGKILL",  [10] = "SIGUSR1",
    [11] = "SIGSEGV",	[12] = "SIGUSR2", [13] = "SIGPIPE",  [14] = "SIGALRM", [15] = "SIGTERM",
    [16] = "SIGSTKFLT", [17] = "SIGCHLD", [18] = "SIGCONT",  [19] = "SIGSTOP", [20] = "SIGTSTP",
    [21] = "SIGTTIN",	[22] = "SIGTTOU", [23] = "SIGURG",   [24] = "SIGXCPU", [25] = "SIGXFSZ",
    [26] = "SIGVTALRM", [27] = "SIGPROF", [28] = "SIGWINCH", [29] = "SIGIO",   [30] = "SIGPWR",
    [31] = "SIGSYS",
};

#define FL_SIGRTMIN 32
#define FL_SIGMAX   64

void exit_code_decode(uint32_t exit_code, struct exit_cause *c)
{
	c->signal = exit_code & 0x7f;
	c->core_dumped = c->signal && (exit_code & 0x80);
	c->status = c->signal ? 0 : (exit_code >> 8) & 0xff;
}

const char *exit_code_signame(int sig, char *buf, int len)
{
	if (sig <= 0 || sig > FL_SIGMAX)
		return NULL;
	if (sig < FL_SIGRTMIN)
		return signames[sig];
	if (sig == FL_SIGRTMIN)
		snprintf(buf, len, "SIGRTMIN");
	else
		snprintf(buf, len, "SIGRTMIN+%d", sig - FL_SIGRTMIN);
	return buf;
}
