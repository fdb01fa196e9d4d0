/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Force-included by clang-tidy only (mk/check.mk, TIDY_FLAGS); never by the build.
 *
 * The static analyzer's MallocChecker assumes a function declared in a system header
 * never frees memory passed to it. bpf_object__destroy_skeleton() in <bpf/libbpf.h>
 * does free its argument, so every loader that includes a bpftool skeleton got
 * "Potential leak of memory pointed to by 's'" in the generated *__create_skeleton()
 * error path (build/<name>.skel.h), a false positive. Redeclaring the function here,
 * outside the system headers, makes the analyzer treat the pointer as handed over,
 * which is what libbpf does. Nothing else is changed for the analysis. */
#include <bpf/libbpf.h>

void bpf_object__destroy_skeleton(struct bpf_object_skeleton *s);
