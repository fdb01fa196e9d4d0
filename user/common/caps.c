// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include "common/caps.h"

static const char *const cap_name[] = {
    [CAP_CHOWN] = "cap_chown",
    [CAP_DAC_OVERRIDE] = "cap_dac_override",
    [CAP_DAC_READ_SEARCH] = "cap_dac_read_search",
    [CAP_FOWNER] = "cap_fowner",
    [CAP_FSETID] = "cap_fsetid",
    [CAP_KILL] = "cap_kill",
    [CAP_SETGID] = "cap_setgid",
    [CAP_SETUID] = "cap_setuid",
    [CAP_SETPCAP] = "cap_setpcap",
    [CAP_LINUX_IMMUTABLE] = "cap_linux_immutable",
    [CAP_NET_BIND_SERVICE] = "cap_net_bind_service",
    [CAP_NET_BROADCAST] = "cap_net_broadcast",
    [CAP_NET_ADMIN] = "cap_net_admin",
    [CAP_NET_RAW] = "cap_net_raw",
    [CAP_IPC_LOCK] = "cap_ipc_lock",
    [CAP_IPC_OWNER] = "cap_ipc_owner",
    [CAP_SYS_MODULE] = "cap_sys_module",
    [CAP_SYS_RAWIO] = "cap_sys_rawio",
    [CAP_SYS_CHROOT] = "cap_sys_chroot",
    [CAP_SYS_PTRACE] = "cap_sys_ptrace",
    [CAP_SYS_PACCT] = "cap_sys_pacct",
    [CAP_SYS_ADMIN] = "cap_sys_admin",
    [CAP_SYS_BOOT] = "cap_sys_boot",
    [CAP_SYS_NICE] = "cap_sys_nice",
    [CAP_SYS_RESOURCE] = "cap_sys_resource",
    [CAP_SYS_TIME] = "cap_sys_time",
    [CAP_SYS_TTY_CONFIG] = "cap_sys_tty_config",
    [CAP_MKNOD] = "cap_mknod",
    [CAP_LEASE] = "cap_lease",
    [CAP_AUDIT_WRITE] = "cap_audit_write",
    [CAP_AUDIT_CONTROL] = "cap_audit_control",
    [CAP_SETFCAP] = "cap_setfcap",
    [CAP_MAC_OVERRIDE] = "cap_mac_override",
    [CAP_MAC_ADMIN] = "cap_mac_admin",
    [CAP_SYSLOG] = "cap_syslog",
    [CAP_WAKE_ALARM] = "cap_wake_alarm",
    [CAP_BLOCK_SUSPEND] = "cap_block_suspend",
    [CAP_AUDIT_READ] = "cap_audit_read",
    [CAP_PERFMON] = "cap_perfmon",
    [CAP_BPF] = "cap_bpf",
    [CAP_CHECKPOINT_RESTORE] = "cap_checkpoint_restore",
};

int caps_get(uint64_t *effective, uint64_t *permitted)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -errno;
	if (effective)
		*effective = d[0].effective | (uint64_t)d[1].effective << 32;
	if (permitted)
		*permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
	return 0;
}

const char *caps_names(uint64_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < 64 && n < len; i++) {
		if (!(mask & CAPS_BIT(i)))
			continue;
		if (i < sizeof(cap_name) / sizeof(cap_name[0]) && cap_name[i])
			n += snprintf(buf + n, len - n, "%s%s", n ? "," : "", cap_name[i]);
		else
			n += snprintf(buf + n, len - n, "%scap_%u", n ? "," : "", i);
	}
	if (!buf[0])
		snprintf(buf, len, "none");
	return buf;
}

int caps_keep(uint64_t keep)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	uint64_t perm = 0;
	int err = caps_get(NULL, &perm);

	if (err)
		return err;
	keep &= perm;
	memset(d, 0, sizeof(d));
	d[0].permitted = d[0].effective = (uint32_t)keep;
	d[1].permitted = d[1].effective = (uint32_t)(keep >> 32);
	/* Ambient capabilities need their bits in permitted; clear them first. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return -errno;
	if (syscall(SYS_capset, &h, d))
		return -errno;
	return 0;
}
