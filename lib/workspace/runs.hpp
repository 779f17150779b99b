// SPDX-License-Identifier: Apache-2.0
// The state of clone and overlay runs on the host: one private directory per run
// under $XDG_STATE_HOME/agentjail/runs/<run-id>/ with its record (run.json), opened
// without following any link planted below the state home, listed, loaded, removed.
#pragma once

#include "base/error.hpp"

#include "sys/fd.hpp"
#include "sys/state_dir.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace agentjail::plan {
struct Plan;
}

namespace agentjail::workspace {

// What run.json holds. Strings are as given (paths are host paths, canonical);
// the report is the JSON object of report::to_json, kept as text.
struct RunRecord {
    std::string id;
    std::string mode;       // "clone" or "overlay"
    std::string workspace;  // the user's workspace
    std::string repo;       // the user's repository (clone mode; its top level)
    std::string branch;     // clone mode: "agentjail/<id>"; empty otherwise
    std::string base;       // the commit the run started from (clone mode)
    std::string started;    // ISO 8601 UTC ("2026-12-02T01:15:00.123Z")
    std::string ended;      // empty while the run has not ended
    // "running", "ok" (the work came back / is ready to apply), "refused" (the
    // sandbox tampered with something agentjail needs: nothing came back),
    // "failed" (agentjail could not finish), "applied", "no-changes".
    std::string status;
    std::string message;      // why, when the status is not "ok"
    std::string report_json;  // "" or a JSON object (workspace/report.hpp)
    std::size_t flags = 0;    // the report's flag count
    // Filled by load/list, not stored: the run's directory.
    std::string dir;
};



// An open run directory.
struct RunDir {
    std::string id;
    std::string path;   // <root>/<id>
    sys::UniqueFd fd;   // O_DIRECTORY|O_PATH-free descriptor of it (usable with *at calls)
};

// Opens `root`, creating what is missing of it (mode 0700), and makes a new run
// directory (0700) under a fresh id (or under `id`, which must be free). The components of root below the first one
// that exists are created and opened with O_NOFOLLOW; agentjail/ and runs/ must be
// directories of the caller's, not writable by others: a link or a foreign
// directory planted there is refused, not followed.
Result<RunDir> create_run(const std::string& root, const std::string& id = "");

// The run directory a clone or overlay plan names (plan.run_dir, under its id),
// made as create_run does, then checked to be the plan's path exactly, with the
// plan written into it (plan.json). Refused, and nothing left, otherwise.
Result<RunDir> create_planned_run(const plan::Plan& plan);

// Opens an existing run's directory (refused: an id that is not valid_run_id, a
// link, no such run: ErrorKind::invalid_input, "no run <id>").
Result<RunDir> open_run(const std::string& root, const std::string& id);

// Writes run.json in the run's directory: under a fresh name (O_EXCL|O_NOFOLLOW),
// then renamed over run.json, so a reader never sees half a record.
Result<void> write_record(const RunDir& dir, const RunRecord& rec);

// Reads <root>/<id>/run.json.
Result<RunRecord> load_run(const std::string& root, const std::string& id);

// Every run under root, oldest first. A root that does not exist: none. A directory
// whose run.json cannot be read comes back with status "unreadable" and why in message.
Result<std::vector<RunRecord>> list_runs(const std::string& root);

// Removes a run's directory and all it holds, never following a link (a link
// inside is removed as a link).
Result<void> remove_run(const std::string& root, const std::string& id);


// The JSON text of a record and back (for run.json, `agentjail runs --json`).
std::string record_to_json(const RunRecord& rec, int indent = 2);
Result<RunRecord> record_from_json(const std::string& text, const std::string& what);

}  // namespace agentjail::workspace
