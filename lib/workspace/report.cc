// SPDX-License-Identifier: Apache-2.0
// The risky-change classifier and the report's text and JSON forms (report.hpp).
// The rules err on the side of flagging: a flag costs the user a look, a missed
// hook costs them their machine. Names are matched ignoring ASCII case, since a
// repository is also checked out on case-insensitive file systems.
#include "workspace/report.hpp"

#include "util/strings.hpp"
#include "base/pattern.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace agentjail::workspace {

namespace {

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return out;
}

std::vector<std::string> split(std::string_view path) {
    const auto parts = base::split_path(path);
    return {parts.begin(), parts.end()};
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A name that cannot be shown as it is: control characters, C1, not UTF-8.
bool needs_escaping(std::string_view s) {
    std::string shown = util::printable(s);
    std::string plain;
    plain.reserve(s.size());
    for (char c : s) {
        if (c == '\\') plain += '\\';
        plain += c;
    }
    return shown != plain;
}

std::string mode_text(unsigned mode) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%06o", mode);
    return buf;
}

std::string short_id(const std::string& id) { return id.substr(0, 12); }

// The lifecycle scripts npm, yarn and pnpm run by themselves on install, pack or publish.
constexpr const char* kNpmLifecycle[] = {
    "preinstall",  "install",   "postinstall", "preuninstall", "uninstall", "postuninstall",
    "prepublish",  "preprepare", "prepare",    "postprepare",  "prepack",   "postpack",
    "prepublishOnly", "publish", "postpublish", "dependencies",
};

// composer's scripts that run on install and update.
constexpr const char* kComposerLifecycle[] = {
    "pre-install-cmd", "post-install-cmd", "pre-update-cmd", "post-update-cmd",
    "post-autoload-dump", "post-root-package-install", "post-create-project-cmd",
};

class Classifier {
public:
    explicit Classifier(std::vector<Flag>& out) : out_(out) {}

    void run(const Change& c) {
        path_ = c.path;
        parts_ = split(c.path);
        lparts_.clear();
        for (const auto& p : parts_) lparts_.push_back(lower(p));
        if (needs_escaping(c.path))
            flag("file-name", "file name with control characters or bytes that are not UTF-8: shown escaped; "
                              "a terminal or script may misread it");
        // A deletion runs nothing later; what was there before was the user's.
        if (c.kind == ChangeKind::deleted || parts_.empty()) return;
        git(c);
        ci();
        attributes(c);
        manifests(c);
        build();
        editor();
        auto_run();
        agent();
        modes(c);
    }

private:
    void flag(const char* category, std::string detail) {
        // One flag per category and path is enough to make the user look.
        for (const auto& f : out_)
            if (f.path == path_ && f.category == category) return;
        out_.push_back(Flag{category, path_, std::move(detail)});
    }

    const std::string& base() const { return lparts_.back(); }
    bool top(const char* name) const { return lparts_.size() == 1 && lparts_[0] == name; }
    bool under_top(const char* dir) const { return lparts_.size() > 1 && lparts_[0] == dir; }
    bool in_dir_anywhere(const char* dir) const {
        for (size_t i = 0; i + 1 < lparts_.size(); ++i)
            if (lparts_[i] == dir) return true;
        return false;
    }

    void git(const Change& c) {
        for (size_t i = 0; i < lparts_.size(); ++i) {
            if (lparts_[i] != ".git") continue;
            std::string rest = i + 1 < lparts_.size() ? lparts_[i + 1] : "";
            if (i + 1 == lparts_.size())
                flag("git", "a .git entry: a nested repository, or a gitdir redirect, whose hooks and config "
                            "git on the host would use");
            else if (rest == "hooks")
                flag("git", "a git hook: runs on the host at the next git command that triggers it");
            else if (rest == "config" || rest == "config.worktree")
                flag("git", "git configuration: core.fsmonitor, core.hooksPath, aliases, filters and "
                            "pagers in it run commands on the host");
            else
                flag("git", "a change inside .git (" + util::printable(rest) +
                                "): the repository's own machinery, not its content");
            return;
        }
        if (base() == ".gitmodules")
            flag("submodule", "submodule URLs and settings: `git submodule update` fetches and checks out "
                              "what they name");
        if (c.new_mode == kModeGitlink)
            flag("submodule", "a submodule's commit: the next `git submodule update` checks out that code");
        if (in_dir_anywhere(".husky") || base() == ".pre-commit-config.yaml" || base() == "lefthook.yml" ||
            base() == ".lefthook.yml" || base() == "lefthook.yaml")
            flag("git", "git hook manager configuration: its hooks run on git commit/push where it is set up");
    }

    void ci() {
        static constexpr const char* top_dirs[] = {".circleci", ".buildkite", ".woodpecker", ".gitlab",
                                                   ".azure-pipelines", ".tekton"};
        static constexpr const char* top_files[] = {
            ".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "bitbucket-pipelines.yml",
            ".drone.yml",     "appveyor.yml", ".appveyor.yml",      ".woodpecker.yml",
            ".cirrus.yml",    "cloudbuild.yaml", "cloudbuild.yml",  "codefresh.yml", "buildspec.yml"};
        bool hit = false;
        if (lparts_.size() > 2 && lparts_[0] == ".github" &&
            (lparts_[1] == "workflows" || lparts_[1] == "actions"))
            hit = true;
        for (auto d : top_dirs) hit = hit || under_top(d);
        for (auto f : top_files) hit = hit || top(f);
        // Jenkins finds a Jenkinsfile wherever a job points, often below the top.
        if (base() == "jenkinsfile" || ends_with(base(), ".jenkinsfile")) hit = true;
        if (hit)
            flag("ci", "a CI workflow: runs with the repository's CI secrets once pushed");
    }

    void attributes(const Change& c) {
        if (base() != ".gitattributes") return;
        std::string detail = ".gitattributes: filter, diff and merge drivers named here run on checkout, "
                             "diff and merge where a matching config exists";
        if (!c.read_new) {
            detail += " (content not examined)";
        } else if (auto text = c.read_new(1 << 20)) {
            std::string t = lower(*text);
            std::vector<std::string> found;
            for (auto key : {"filter=", "diff=", "merge=", "textconv"})
                if (t.find(key) != std::string::npos) found.emplace_back(key);
            if (!found.empty()) {
                detail = ".gitattributes names drivers (";
                for (size_t i = 0; i < found.size(); ++i) detail += (i ? ", " : "") + found[i];
                detail += "): they run a command on checkout, diff or merge where a matching config exists";
            }
        } else {
            detail += " (content could not be read)";
        }
        flag("gitattributes", detail);
    }

    void json_scripts(const Change& c, const char* manifest, const char* key,
                      std::initializer_list<const char*> names, const char* runs_on) {
        if (!c.read_new) {
            flag("install-script", std::string(manifest) + " changed: its " + key +
                                       " may run on install (content not examined)");
            return;
        }
        auto text = c.read_new(4 << 20);
        if (!text) {
            flag("install-script", std::string(manifest) + " changed but could not be read: check its " +
                                       key + " by hand");
            return;
        }
        auto j = nlohmann::json::parse(*text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            flag("install-script", std::string(manifest) + " is not valid JSON: check its " + key +
                                       " by hand");
            return;
        }
        auto s = j.find(key);
        if (s == j.end() || !s->is_object()) return;
        std::vector<std::string> hits;
        for (auto n : names)
            if (s->contains(n)) hits.emplace_back(n);
        if (hits.empty()) return;
        std::string list;
        for (size_t i = 0; i < hits.size(); ++i) list += (i ? ", " : "") + hits[i];
        flag("install-script", std::string(manifest) + " " + key + " " + list + ": run by themselves " +
                                   runs_on);
    }

    void manifests(const Change& c) {
        const std::string& b = base();
        if (b == "package.json") {
            std::vector<const char*> names(std::begin(kNpmLifecycle), std::end(kNpmLifecycle));
            if (!c.read_new) {
                flag("install-script", "package.json changed: its scripts may run on install (content not examined)");
            } else {
                auto text = c.read_new(4 << 20);
                auto j = text ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
                if (!text) {
                    flag("install-script", "package.json changed but could not be read: check its scripts by hand");
                } else if (j.is_discarded() || !j.is_object()) {
                    flag("install-script", "package.json is not valid JSON: check its scripts by hand");
                } else {
                    std::vector<std::string> hits;
                    if (auto s = j.find("scripts"); s != j.end() && s->is_object())
                        for (auto n : names)
                            if (s->contains(n)) hits.emplace_back(n);
                    if (j.contains("gypfile")) hits.emplace_back("gypfile");
                    if (!hits.empty()) {
                        std::string list;
                        for (size_t i = 0; i < hits.size(); ++i) list += (i ? ", " : "") + hits[i];
                        flag("install-script", "package.json lifecycle scripts (" + list +
                                                   "): npm, yarn and pnpm run them by themselves on install");
                    }
                }
            }
        } else if (b == "composer.json") {
            json_scripts(c, "composer.json", "scripts",
                         {kComposerLifecycle[0], kComposerLifecycle[1], kComposerLifecycle[2],
                          kComposerLifecycle[3], kComposerLifecycle[4], kComposerLifecycle[5],
                          kComposerLifecycle[6]},
                         "on composer install/update");
        } else if (b == "setup.py") {
            flag("install-script", "setup.py: Python code that runs on pip install and on builds");
        } else if (b == "pyproject.toml") {
            std::string detail = "pyproject.toml: its [build-system] backend runs on pip install";
            if (c.read_new) {
                auto text = c.read_new(1 << 20);
                if (text && text->find("build-system") == std::string::npos &&
                    text->find("build-backend") == std::string::npos)
                    return;  // no build backend: pip's default, nothing of the project's own
                if (text && text->find("backend-path") != std::string::npos)
                    detail = "pyproject.toml: an in-tree build backend (backend-path) runs on pip install";
            }
            flag("install-script", detail);
        } else if (b == "build.rs") {
            flag("install-script", "build.rs: a Cargo build script, runs on cargo build/check and in rust-analyzer");
        } else if (b == "cargo.toml") {
            if (c.read_new) {
                auto text = c.read_new(1 << 20);
                if (!text || text->find("build") != std::string::npos ||
                    text->find("proc-macro") != std::string::npos)
                    flag("install-script", "Cargo.toml names a build script or proc-macro: runs at build time");
            } else {
                flag("install-script", "Cargo.toml changed (content not examined)");
            }
        } else if (in_dir_anywhere(".cargo") && (b == "config" || b == "config.toml")) {
            flag("install-script", ".cargo/config: runners, rustc wrappers and aliases run on cargo commands");
        } else if (b == "binding.gyp" || b == ".yarnrc.yml" || b == ".yarnrc" || b == ".pnpmfile.cjs" ||
                   b == "pnpmfile.js" || b == ".pnpmfile.js" || b == "setup.cfg" || b == "gemfile" ||
                   ends_with(b, ".gemspec") || b == "conftest.py" || b == "noxfile.py" ||
                   b == "tox.ini" || b == "buildfile" || b == "build.sbt" || b == ".sbtopts") {
            flag("install-script", "a package or test tool's own file (" + util::printable(parts_.back()) +
                                       "): runs code on install, build or test");
        }
    }

    void build() {
        const std::string& b = base();
        static constexpr const char* names[] = {
            "makefile",     "gnumakefile", "cmakelists.txt", "meson.build", "meson_options.txt",
            "justfile",     "rakefile",    "build.gradle",   "build.gradle.kts", "settings.gradle",
            "settings.gradle.kts", "gradlew", "pom.xml",     "taskfile.yml", "taskfile.yaml",
            "sconstruct",   "build",       "build.bazel",    "workspace",   "module.bazel",
            "configure",    "configure.ac", "makefile.am",   "makefile.in", "build.ninja",
            "gradle-wrapper.properties", "mvnw", "dockerfile", "containerfile"};
        bool hit = ends_with(b, ".mk") || ends_with(b, ".cmake") || ends_with(b, ".bzl");
        for (auto n : names) hit = hit || b == n;
        if (hit)
            flag("build", "a build file (" + util::printable(parts_.back()) +
                              "): its commands run at the next build");
    }

    void editor() {
        if (in_dir_anywhere(".vscode")) {
            if (base() == "tasks.json")
                flag("editor", ".vscode/tasks.json: a task with runOn folderOpen runs when the folder is opened");
            else
                flag("editor", "VS Code workspace settings: can name programs the editor and its "
                               "extensions run");
        } else if (in_dir_anywhere(".idea")) {
            flag("editor", "JetBrains project settings: run configurations and tools the IDE runs");
        } else if (ends_with(base(), ".code-workspace")) {
            flag("editor", "a VS Code workspace file: settings and tasks the editor runs");
        } else if (under_top(".devcontainer") || top(".devcontainer.json")) {
            flag("editor", "a dev container definition: its lifecycle commands run when the container is built");
        }
    }

    void auto_run() {
        const std::string& b = base();
        if (b == ".envrc" || b == ".env.rc")
            flag("auto-run", ".envrc: direnv runs it in your shell when you cd into the directory (once allowed)");
        else if (b == ".tool-versions" || b == ".mise.toml" || b == "mise.toml" || b == ".rtx.toml" ||
                 in_dir_anywhere(".mise") || b == ".mise.local.toml")
            flag("auto-run", "a version manager's file (asdf/mise): can install plugins and run hooks on cd");
    }

    void agent() {
        static constexpr const char* dirs[] = {".claude", ".codex", ".cursor", ".gemini", ".continue",
                                               ".windsurf", ".roo", ".agentjail", ".aider"};
        bool hit = false;
        for (auto d : dirs) hit = hit || in_dir_anywhere(d);
        const std::string& b = base();
        hit = hit || b == ".mcp.json" || b == "mcp.json" || util::starts_with(b, ".aider.conf") ||
              b == "agentjail.toml" || b == ".agentjail.toml" || b == ".cursorrules";
        if (hit)
            flag("agent-config", "agent settings (" + util::printable(path_) +
                                     "): hooks and MCP servers in them run commands when an agent starts here");
    }

    void modes(const Change& c) {
        if (c.new_mode == kModeExec && c.old_mode != kModeExec)
            flag("executable", c.old_mode == 0 ? "a new executable file" : "made executable");
        if (c.new_mode == kModeLink) link(c.link_target);
    }

    void link(const std::string& target) {
        if (needs_escaping(target))
            flag("file-name", "a link whose target has control characters: -> " + util::printable(target));
        if (target.empty()) {
            flag("symlink", "a link with an empty target");
            return;
        }
        if (target[0] == '/') {
            flag("symlink", "a link to an absolute path outside the repository: -> " + util::printable(target));
            return;
        }
        // Lexically, from the link's own directory. A ".." after a name may climb out
        // through another link (x/l -> "other/.." where other -> ".."), so it counts as out.
        std::vector<std::string> at(parts_.begin(), parts_.end() - 1);
        bool out = false, after_name = false, into_git = false;
        for (const auto& part : split(target)) {
            if (part == ".") continue;
            if (part == "..") {
                if (at.empty() || after_name) {
                    out = true;
                    break;
                }
                at.pop_back();
                continue;
            }
            after_name = true;
            at.push_back(part);
            if (lower(part) == ".git") into_git = true;
        }
        if (out)
            flag("symlink", "a link that points outside the repository: -> " + util::printable(target));
        else if (into_git)
            flag("symlink", "a link into .git: -> " + util::printable(target));
    }

    std::vector<Flag>& out_;
    std::string path_;
    std::vector<std::string> parts_;
    std::vector<std::string> lparts_;
};

// Whether s is well-formed UTF-8 (shortest forms, no surrogates).
bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (len == 0 || i + len > s.size()) return false;
        unsigned cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
        for (size_t k = 1; k < len; ++k) {
            auto d = static_cast<unsigned char>(s[i + k]);
            if ((d >> 6) != 2) return false;
            cp = (cp << 6) | (d & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

// A name for JSON: as it is when it is UTF-8 (JSON escapes control characters
// itself), else its printable form, marked `<key>_escaped`.
void put_name(nlohmann::ordered_json& j, const char* key, const std::string& s) {
    if (valid_utf8(s)) {
        j[key] = s;
    } else {
        j[key] = util::printable(s);
        j[std::string(key) + "_escaped"] = true;
    }
}

}  // namespace

const char* change_kind_name(ChangeKind k) {
    switch (k) {
        case ChangeKind::added: return "added";
        case ChangeKind::modified: return "modified";
        case ChangeKind::deleted: return "deleted";
        case ChangeKind::type_changed: return "type-changed";
    }
    return "modified";
}

std::vector<Flag> classify(const std::vector<Change>& changes) {
    std::vector<Flag> out;
    Classifier cl(out);
    for (const auto& c : changes) cl.run(c);
    return out;
}

unsigned parse_mode(const std::string& s) {
    if (s.empty() || s.size() > 7) return 0;
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '7') return 0;
        v = v * 8 + static_cast<unsigned>(c - '0');
    }
    return v;
}

std::string to_text(const Report& r) {
    std::string out;
    auto line = [&](const std::string& s) { out += s + "\n"; };
    std::string head = "agentjail: " + r.mode + " run " + r.run_id;
    if (!r.refused.empty()) {
        line(head + ": nothing came back: " + util::printable(r.refused));
    } else if (!r.branch.empty()) {
        line(head + ": your repository has the branch " + util::printable(r.branch) + " (" +
             std::to_string(r.commits.size()) + " commit" + (r.commits.size() == 1 ? "" : "s") + ", " +
             std::to_string(r.changes.size()) + " file" + (r.changes.size() == 1 ? "" : "s") +
             " changed); nothing was merged or checked out");
    } else {
        line(head + ": " + std::to_string(r.changes.size()) + " file" + (r.changes.size() == 1 ? "" : "s") +
             " changed");
    }
    if (!r.commits.empty()) {
        line("  commits:");
        for (const auto& c : r.commits)
            line("    " + short_id(c.id) + " " + util::printable(c.subject) + " (" + util::printable(c.author) +
                 ")");
    }
    if (!r.changes.empty()) {
        line(std::string("  changed files") + (r.base.empty() ? "" : " since " + short_id(r.base)) + ":");
        for (const auto& c : r.changes) {
            const char* k = c.kind == ChangeKind::added      ? "A"
                            : c.kind == ChangeKind::deleted  ? "D"
                            : c.kind == ChangeKind::type_changed ? "T"
                                                             : "M";
            std::string s = std::string("    ") + k + " " + util::printable(c.path);
            if (c.new_mode == kModeLink) s += " -> " + util::printable(c.link_target);
            if (c.old_mode != 0 && c.new_mode != 0 && c.old_mode != c.new_mode)
                s += " (mode " + mode_text(c.old_mode) + " -> " + mode_text(c.new_mode) + ")";
            line(s);
        }
    }
    if (!r.flags.empty()) {
        line("  flagged: " + std::to_string(r.flags.size()) +
             " change" + (r.flags.size() == 1 ? "" : "s") + " that can run code on your machine or in CI later; "
             "review before you use the work:");
        for (const auto& f : r.flags)
            line("    [" + f.category + "] " + util::printable(f.path) + ": " + util::printable(f.detail));
    } else if (r.refused.empty()) {
        line("  flagged: nothing");
    }
    for (const auto& n : r.notes) line("  note: " + util::printable(n));
    if (!r.branch.empty() && r.refused.empty() && !r.base.empty())
        line("  review: git log -p " + short_id(r.base) + ".." + util::printable(r.branch) +
             "   discard: agentjail discard " + r.run_id);
    return out;
}

std::string to_json(const Report& r, int indent) {
    nlohmann::ordered_json j;
    j["mode"] = r.mode;
    j["run_id"] = r.run_id;
    j["branch"] = r.branch;
    j["base"] = r.base;
    j["head"] = r.head;
    j["refused"] = r.refused;
    auto commits = nlohmann::ordered_json::array();
    for (const auto& c : r.commits) {
        nlohmann::ordered_json o;
        o["id"] = c.id;
        put_name(o, "subject", c.subject);
        put_name(o, "author", c.author);
        commits.push_back(std::move(o));
    }
    j["commits"] = std::move(commits);
    auto changes = nlohmann::ordered_json::array();
    for (const auto& c : r.changes) {
        nlohmann::ordered_json o;
        put_name(o, "path", c.path);
        o["kind"] = change_kind_name(c.kind);
        o["old_mode"] = c.old_mode ? mode_text(c.old_mode) : "";
        o["new_mode"] = c.new_mode ? mode_text(c.new_mode) : "";
        if (c.new_mode == kModeLink) put_name(o, "link_target", c.link_target);
        changes.push_back(std::move(o));
    }
    j["changes"] = std::move(changes);
    auto flags = nlohmann::ordered_json::array();
    for (const auto& f : r.flags) {
        nlohmann::ordered_json o;
        o["category"] = f.category;
        put_name(o, "path", f.path);
        put_name(o, "detail", f.detail);
        flags.push_back(std::move(o));
    }
    j["flags"] = std::move(flags);
    auto notes = nlohmann::ordered_json::array();
    for (const auto& n : r.notes) notes.push_back(util::printable(n));
    j["notes"] = std::move(notes);
    return j.dump(indent, ' ', true, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace agentjail::workspace
