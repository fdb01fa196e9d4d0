// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Lease admission grants, as the agent applies them: see admit.h. */
#include <stdio.h>
#include <string.h>
#include "agent/admit.h"

static bool id_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* Ids separated by single spaces, or empty. */
static bool well_formed(const char *list)
{
	bool start = true;

	for (const char *p = list; *p; p++) {
		if (*p == ' ') {
			if (start)
				return false;
			start = true;
		} else if (!id_char(*p)) {
			return false;
		} else {
			start = false;
		}
	}
	return !list[0] || !start;
}

enum admit_change admit_apply(struct admit_set *s, long long term, long long grant,
			      const char *list)
{
	bool changed;

	if (term <= 0 || grant <= 0 || !list || strlen(list) > ADMIT_LIST_MAX || !well_formed(list))
		return ADMIT_IGNORED;
	if (s->have && (term < s->term || (term == s->term && grant < s->grant)))
		return ADMIT_IGNORED;
	changed = !s->have || strcmp(s->ids, list);
	s->answered = true;
	s->have = true;
	s->term = term;
	s->grant = grant;
	snprintf(s->ids, sizeof(s->ids), "%s", list);
	return changed ? ADMIT_CHANGED : ADMIT_SAME;
}

bool admit_no_grant(struct admit_set *s)
{
	if (s->answered)
		return false;
	s->answered = true;
	return true;
}

bool admit_has(const struct admit_set *s, const char *id)
{
	size_t n = strlen(id);

	if (!s->answered)
		return false;
	if (!s->have)
		return true;
	for (const char *p = s->ids; *p;) {
		const char *sp = strchr(p, ' ');
		size_t len = sp ? (size_t)(sp - p) : strlen(p);

		if (len == n && !memcmp(p, id, n))
			return true;
		if (!sp)
			break;
		p = sp + 1;
	}
	return false;
}

const char *admit_csv(const struct admit_set *s, char *buf, size_t len)
{
	size_t i = 0;

	if (!len)
		return buf;
	snprintf(buf, len, "%s", !s->answered ? "-" : !s->have ? "*" : s->ids[0] ? s->ids : "-");
	for (; buf[i]; i++)
		if (buf[i] == ' ')
			buf[i] = ',';
	return buf;
}
