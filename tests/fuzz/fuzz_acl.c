// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer harness: client authentication's parsers (common/acl.h). The first
 * byte picks the job, the rest is split at '\n' into up to 10 arguments:
 *   0  acl_hello_parse on the arguments as a Redis HELLO (after HELLO)
 *   1  acl_perms_parse on the rest as a `commands = ...` value
 *   2  acl_command_needs on the arguments as a command
 *   3  acl_peer_is (first argument the peer, second the address)
 * Contract: HELLO gives proto 0, 2 or 3, and AUTH's user and password point
 * into the input; a refusal says why; accepted permissions are ACL_* bits and
 * print back to the same; a command needs 0 or one ACL_* bit and names itself. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[11], why[160] = "", name[96] = "", words[64];
	size_t lens[11];
	int argc = 1, rc;
	struct acl_hello h;
	unsigned perms = 0, again = 0, need;

	if (size < 1)
		return 0;
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	argv[0] = "HELLO";
	lens[0] = 5;
	argv[argc] = buf;
	for (size_t i = 0; i <= size - 1 && argc < 11; i++) {
		if (i == size - 1 || buf[i] == '\n') {
			buf[i] = '\0';
			lens[argc] = (size_t)(buf + i - argv[argc]);
			argc++;
			if (argc < 11 && i < size - 1)
				argv[argc] = buf + i + 1;
			else
				break;
		}
	}
	switch (data[0] % 4) {
	case 0:
		rc = acl_hello_parse(argc, (const char *const *)argv, lens, &h, why, sizeof(why));
		if (rc == 0) {
			if (h.proto != 0 && h.proto != 2 && h.proto != 3)
				abort();
			if ((h.user == NULL) != (h.pass == NULL))
				abort();
			if (h.pass && strlen(h.pass) > h.pass_len)
				abort();
		} else if (rc != -EINVAL || !why[0]) {
			abort();
		}
		break;
	case 1:
		/* The whole rest, newlines included, as one value. */
		for (size_t i = 0; i + 1 < size; i++)
			if (!buf[i])
				buf[i] = ' ';
		rc = acl_perms_parse(buf, &perms, why, sizeof(why));
		if (rc == 0) {
			if (!perms || (perms & ~ACL_ALL))
				abort();
			if (acl_perms_parse(acl_perms_str(perms, words, sizeof(words)), &again, why,
					    sizeof(why)) ||
			    again != perms)
				abort();
		} else if (rc != -EINVAL || !why[0]) {
			abort();
		}
		break;
	case 2:
		need =
		    acl_command_needs(argc - 1, (const char *const *)argv + 1, name, sizeof(name));
		if (need != 0 && need != ACL_READ && need != ACL_FAILOVER && need != ACL_ADMIN)
			abort();
		if (strlen(name) >= sizeof(name))
			abort();
		break;
	default:
		(void)acl_peer_is(argv[1], argc > 2 ? argv[2] : "");
		if (strlen(acl_peer_source(argv[1], words, sizeof(words))) >= sizeof(words) - 1)
			abort(); /* an address and "/64" always fit */
		break;
	}
	free(buf);
	return 0;
}
