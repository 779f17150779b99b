// SPDX-License-Identifier: Apache-2.0
// The one error type of the core (an errno-style code, a message that grows on the
// way up, the stage a run failed at) and Result<T>, its carrier. No system call.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace agentjail {

// What went wrong, in the words a user needs; the kind picks the CLI exit status
// (invalid_input/unsupported/setup/internal -> 125, command_not_found -> 127,
// command_not_executable -> 126).
enum class ErrorKind {
    invalid_input,           // bad policy, bad flag, bad path: fix the input
    unsupported,             // the kernel or host lacks a feature the policy needs
    setup,                   // building the sandbox failed at run time
    command_not_found,       // execve: ENOENT on every candidate
    command_not_executable,  // execve: EACCES, ENOEXEC, ...
    internal,                // a bug in agentjail
};

// Where a run failed, for a caller that acts on it (the C API's aj_error_stage): the
// policy, the plan, the host-side preparation (cgroup, proxy, workspace), the clone and
// its id maps, the sandbox's own construction (mounts, pivot_root...), the command's
// execve, or waiting for the run.
enum class ErrorStage { none, policy, plan, prepare, launch, sandbox, exec, wait };

class Error {
public:
    Error(ErrorKind kind, int code, std::string message)
        : kind_(kind), code_(code), message_(std::move(message)) {}

    ErrorKind kind() const noexcept { return kind_; }
    // errno-style code (0 when there is none).
    int code() const noexcept { return code_; }
    const std::string& message() const noexcept { return message_; }
    ErrorStage stage() const noexcept { return stage_; }
    // Inside the sandbox stage: the step that failed, in words ("pivot_root"); static
    // storage, "" when none.
    const char* step() const noexcept { return step_; }

    // Says where the failure happened; the first (innermost) caller to say it wins.
    Error& at(ErrorStage stage, const char* step = "") {
        if (stage_ == ErrorStage::none) {
            stage_ = stage;
            step_ = step != nullptr ? step : "";
        }
        return *this;
    }

    // Adds context in front: "mount /proc: EPERM" -> "policy x.toml:3:1: mount /proc: EPERM".
    Error& wrap(const std::string& context) {
        message_ = context + ": " + message_;
        return *this;
    }

private:
    ErrorKind kind_;
    int code_;
    std::string message_;
    ErrorStage stage_ = ErrorStage::none;
    const char* step_ = "";
};

// A small carrier with std::expected's member names.
template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
    Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}

    bool has_value() const noexcept { return v_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    Error& error() & { return std::get<1>(v_); }
    const Error& error() const& { return std::get<1>(v_); }
    Error&& error() && { return std::get<1>(std::move(v_)); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : e_(std::move(error)) {}
    bool has_value() const noexcept { return !e_.has_value(); }
    explicit operator bool() const noexcept { return has_value(); }
    void value() const {}
    Error& error() & { return *e_; }
    const Error& error() const& { return *e_; }
    Error&& error() && { return std::move(*e_); }

private:
    std::optional<Error> e_;
};

}  // namespace agentjail
