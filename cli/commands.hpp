// SPDX-License-Identifier: Apache-2.0
// The subcommands: each takes the arguments after its verb and returns the exit status.
#pragma once

#include "api/api.hpp"
#include "policy/policy.hpp"

#include <string>
#include <vector>

namespace agentjail::cli {

// What each subcommand's --help prints, one text each: the command prints it and the
// man page carries it (global_help, explain_help and gc_help: options.hpp).
std::string apply_help();
std::string check_help();
std::string doctor_help();
std::string policies_help();
std::string runs_help();
std::string discard_help();
std::string log_help();
std::string secret_help();
std::string trust_help();
std::string completion_help();

// refused: a refusal found before (a closed stdio), reported with the result record
// the arguments ask for instead of running anything.
int cmd_run(const std::vector<std::string>& args, const Error* refused = nullptr, bool learn = false);
int cmd_explain(const std::vector<std::string>& args);
int cmd_check(const std::vector<std::string>& args);
int cmd_doctor(const std::vector<std::string>& args);
int cmd_policies(const std::vector<std::string>& args);
int cmd_gc(const std::vector<std::string>& args);
int cmd_apply(const std::vector<std::string>& args);
// run --apply: an overlay run's changes applied as `agentjail apply RUN` would
// (protected paths and conflicts left out); 0 when all were applied.
int apply_at_exit(const std::string& run_id, bool json);
// cmd_runs.cc: clone and overlay runs kept on this machine.
int cmd_runs(const std::vector<std::string>& args);
int cmd_discard(const std::vector<std::string>& args);
// cmd_log.cc: `agentjail log [RUN]`, and the entry a run keeps for it (its summary
// lines as printed, its refusals; the newest runs only).
int cmd_log(const std::vector<std::string>& args);
void keep_run_log(const RunResult& r, const std::vector<std::string>& command, const std::string& cwd,
                  const std::string& policy, int exit_status, const std::vector<std::string>& summary);
// The policy lines that would have allowed what a run was refused, as a TOML file
// extending `policy` (`agentjail learn`, `agentjail log --policy`); "" when none.
std::string proposed_policy(const RunResult& r, const std::string& policy, const std::string& cwd);
// `agentjail learn [OPTIONS] -- COMMAND`: a run, then the proposal on stderr.
int cmd_learn(const std::vector<std::string>& args);
// cmd_secret.cc: `agentjail secret set|list|rm`, and the secrets kept (names, the
// file holding each value, hosts; never the values).
int cmd_secret(const std::vector<std::string>& args);
// cmd_trust.cc: `agentjail trust [-y] [FILE]`, the project's policy file approved as it is.
int cmd_trust(const std::vector<std::string>& args);
// cmd_completion.cc: `agentjail completion bash|zsh|fish`, the shell's completion script.
int cmd_completion(const std::vector<std::string>& args);
struct StoredSecret {
    std::string name;
    std::string path;
    std::vector<std::string> hosts;
};
std::vector<StoredSecret> stored_secrets();
// The kept secrets added to a run's policy, under the policy's and the flags' own of
// the same name; the plan puts each in only where the run allows its hosts.
void apply_stored_secrets(policy::Policy& p);

}  // namespace agentjail::cli
