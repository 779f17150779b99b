// SPDX-License-Identifier: Apache-2.0
// The C API's opaque handles (include/agentjail/agentjail.h) as the library sees
// them: private to lib/capi, and to the unit tests, which build an aj_result from a
// RunResult to check the accessors without starting a sandbox.
#pragma once

#include <agentjail/agentjail.h>

#include "api/api.hpp"

#include <sys/types.h>

#include <chrono>
#include <string>

struct aj_policy {
    agentjail::Policy policy;
};

struct aj_sandbox {
    // A pointer, so that a child of fork() can forget the parent's sandbox without
    // running its destructor (which would kill it, and join threads the child does
    // not have).
    agentjail::Sandbox* sandbox;
    std::chrono::system_clock::time_point start;  // for the result record
    pid_t owner;  // the process that spawned it: the only one that may act on it
};

struct aj_result {
    agentjail::RunResult result;
    std::chrono::system_clock::time_point start;
};

struct aj_error {
    int code;
    std::string message;
    bool is_static;  // the preallocated out-of-memory error: never deleted
    int sys_errno = 0;
    aj_stage stage = AJ_STAGE_NONE;
    const char* step = "";  // static storage (launch::stage_name)
};
