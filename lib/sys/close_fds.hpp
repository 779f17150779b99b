// SPDX-License-Identifier: Apache-2.0
// Closes every descriptor but a few, for processes that must hold nothing of their
// parent's (the sandbox's init, the guard watch's holder): no allocation, so it is
// safe after clone.
#pragma once

#include "sys/syscalls.hpp"

namespace agentjail::sys {

// keep: n descriptors in any order, -1 entries ignored; sorted in place. One
// close_range per gap between them.
inline void close_all_but(int* keep, int n) {
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && keep[j] < keep[j - 1]; --j) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned from = 0;
    for (int i = 0; i < n; ++i) {
        if (keep[i] < 0 || static_cast<unsigned>(keep[i]) < from) continue;
        if (static_cast<unsigned>(keep[i]) > from) (void)close_range(from, static_cast<unsigned>(keep[i]) - 1, 0);
        from = static_cast<unsigned>(keep[i]) + 1;
    }
    (void)close_range(from, ~0U, 0);
}

}  // namespace agentjail::sys
