// SPDX-License-Identifier: Apache-2.0
// The C API's one guard and its error reporting, shared by the entry points of capi.cc
// (versions, errors, policies) and spawn.cc (running); private to lib/capi.
#pragma once

#include <agentjail/agentjail.h>
#include "capi/handles.hpp"

#include <exception>
#include <new>
#include <string>

namespace agentjail::capi::detail {

// Reporting "out of memory" must not need memory: this one is never freed (capi.cc).
extern aj_error oom_error;

// Sets *err (when err is not NULL) and returns code (capi.cc).
int fail(aj_error** err, int code, std::string message, int sys_errno = 0,
         aj_stage stage = AJ_STAGE_NONE, const char* step = "");
int fail(aj_error** err, const agentjail::Error& e, aj_stage otherwise = AJ_STAGE_NONE);

// The one guard every extern "C" body runs in. Anything thrown (std::bad_alloc
// above all) becomes an error code with its message kept.
template <class F>
int guarded(aj_error** err, F&& body) noexcept {
    if (err != nullptr) *err = nullptr;
    try {
        return body();
    } catch (const std::bad_alloc&) {
        if (err != nullptr) *err = &oom_error;
        return AJ_ENOMEM;
    } catch (const std::exception& e) {
        return fail(err, AJ_EINTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return fail(err, AJ_EINTERNAL, "internal error: unknown exception");
    }
}

// The same guard for functions that cannot report an error: on any exception
// they answer `fallback`.
template <class T, class F>
T guarded_value(T fallback, F&& body) noexcept {
    try {
        return body();
    } catch (...) {
        return fallback;
    }
}

// "FN: ARG is NULL" (capi.cc).
int null_arg(aj_error** err, const char* fn, const char* arg);
// AJ_OK, or a policy override's error (capi.cc).
int status(aj_error** err, const agentjail::Result<void>& r);

}  // namespace agentjail::capi::detail
