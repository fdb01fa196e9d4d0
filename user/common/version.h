/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The version, from the Makefile's VERSION (flatline version, metrics, the package). */
#ifndef FL_VERSION_H
#define FL_VERSION_H

extern const char fl_version[];

#endif
