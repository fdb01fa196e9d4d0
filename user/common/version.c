// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "common/version.h"

#ifndef FL_VERSION
#define FL_VERSION "unknown"
#endif

const char fl_version[] = FL_VERSION;
