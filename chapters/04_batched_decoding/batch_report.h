// Chapter 04's report is report.h now. This header stays only for
// tests/bench/main.cpp, which reads the size of the CPU's largest cache
// from here; that probe lives in common/kit/machine.h.
#pragma once

#include "../../common/kit/machine.h"
