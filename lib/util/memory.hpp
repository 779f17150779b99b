// SPDX-License-Identifier: Apache-2.0
// The supervisor's footprint once the sandbox runs: what parsing, planning and the
// launch touched and will not touch again is given back.
#pragma once

namespace agentjail::util {

// Returns the heap's free memory to the kernel (malloc_trim) and drops this
// program's clean, read-only file pages (its code and constants) from the process's
// page tables; the ones the supervisor still runs fault back in from the page cache.
// Written pages (RELRO, data) are never touched. Safe with other threads running.
void release_startup_memory() noexcept;

}  // namespace agentjail::util
