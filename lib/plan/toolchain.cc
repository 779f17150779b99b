// SPDX-License-Identifier: Apache-2.0
// The caller's tools inside (issue 27, item 1). A developer's programs live under
// the home (an nvm node, a pyenv, rustup's proxies, ~/.local/bin), which the
// sandbox replaces with an empty one: each PATH entry, each link in those entries,
// the command and its #! interpreter are resolved on the host, and the installation
// root each lies in is bound read-only. PATH inside is then the caller's, less what
// the sandbox does not have.
#include "plan/internal.hpp"

#include "base/pattern.hpp"
#include "base/text.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <string_view>

namespace agentjail::plan::detail {

namespace {

constexpr size_t kMaxLinksPerDir = 512;  // links read per PATH directory under the home
constexpr int kMaxInterpreters = 4;      // #! hops followed from the command
constexpr const char* kSystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// Every field, empty ones too ("a::b" is three).
std::vector<std::string> fields(const std::string& s, char sep) {
    std::vector<std::string> out;
    size_t i = 0;
    for (;;) {
        size_t j = s.find(sep, i);
        out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
        if (j == std::string::npos) return out;
        i = j + 1;
    }
}

std::string trimmed(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

std::string joined(const std::vector<std::string_view>& parts, size_t n) {
    std::string out;
    for (size_t i = 0; i < n && i < parts.size(); ++i) {
        if (i) out += '/';
        out += parts[i];
    }
    return out;
}

// Directories of the home that hold unrelated things side by side: never bound whole.
bool container(const std::string& rel) {
    return rel.empty() || rel == ".local" || rel == ".local/share" || rel == ".local/state" ||
           rel == ".local/lib" || rel == ".config" || rel == ".cache";
}

// Version managers and installers, by where they keep what a program of theirs
// needs (relative to the home; "*" is one name), and how many names of that make
// the root: the whole manager where its shims call back into it (pyenv, volta,
// asdf), one version where versions stand alone (nvm, fnm, rustup, sdkman), the
// bin directory alone where its parent holds caches or credentials (~/.cargo, ~/go).
struct Known {
    std::string_view pattern;
    size_t keep;
};
constexpr Known kKnown[] = {
    {".nvm/versions/*/*", 4},
    {".local/share/fnm/node-versions/*", 5},
    {".local/share/mise", 3},
    {".local/share/pnpm", 3},
    {".rustup/toolchains/*", 3},
    {".sdkman/candidates/*/*", 4},
    {".cargo/bin", 2},
    {"go/bin", 2},
    {".local/bin", 2},
    {"bin", 1},
    {".pyenv", 1},
    {".rbenv", 1},
    {".nodenv", 1},
    {".goenv", 1},
    {".asdf", 1},
    {".volta", 1},
    {".bun", 1},
    {".deno", 1},
};

// Installations outside the home that a PATH entry may lead into and that the
// sandbox does not show (the system's directories it does): bound whole.
constexpr std::string_view kOutside[] = {"/nix", "/home/linuxbrew/.linuxbrew"};

class Finder {
public:
    Finder(const policy::Policy& policy, const HostFacts& host, const ExpandContext& ctx)
        : host_(host), ctx_(ctx), view_(*ctx.view) {
        for (const auto* rules : {&policy.ro, &policy.rw}) {
            for (const auto& rule : *rules) {
                // As written: build_mounts resolves the sources; a PATH entry is
                // compared canonical, and a source that is a link only makes its
                // target count as not shown (bound again, harmlessly).
                auto src = expand(rule.src, ctx, rule.origin);
                if (!src || (!rule.dst.empty() && rule.dst != rule.src)) continue;
                shown_.push_back(*src);
            }
        }
        if (!ctx.workspace.empty() && policy.workspace.value != policy::WorkspaceAccess::none)
            shown_.push_back(ctx.workspace);
        path_ = base::absolute_path_dirs(env_lookup(host.environ, "PATH").value_or(""));
    }

    Toolchains run(const std::vector<std::string>& argv) {
        for (const std::string& dir : path_) {
            // The system's directories as written (/usr/bin): shown, no realpath on
            // every start for them.
            if (!util::path_within(dir, ctx_.home) && shown(dir)) continue;
            auto c = view_.canonical(dir);
            if (!c || !view_.is_dir(*c)) continue;
            const bool under_home = util::path_within(*c, ctx_.home) && *c != ctx_.home;
            add(*c, "PATH entry " + dir);
            if (under_home && !shown(*c)) links_in(*c, dir);
        }
        if (!argv.empty()) command(argv[0]);
        Toolchains out;
        for (const auto& [root, why] : roots_) {
            policy::MountRule rule;
            rule.src = root;
            rule.optional = true;
            rule.origin = policy::Origin{"the caller's tools", 0, 0, why};
            out.ro.push_back(std::move(rule));
            out.notes.push_back("tools: " + root + " read-only (" + why + ")");
        }
        return out;
    }

private:
    // Whether the policy shows `path` at its own path. Below the home only a bind
    // below the home counts: the private home's tmpfs covers a bind of /home.
    bool shown(const std::string& path) const {
        const bool in_home = util::path_within(path, ctx_.home);
        return std::any_of(shown_.begin(), shown_.end(), [&](const std::string& s) {
            return util::path_within(path, s) && (!in_home || util::path_within(s, ctx_.home));
        });
    }

    // The installation root `path` (canonical) lies in, or "" when it is not one to bind.
    std::string root_of(const std::string& path) const {
        for (std::string_view outside : kOutside)
            if (util::path_within(path, outside)) return std::string(outside);
        if (!util::path_within(path, ctx_.home) || path == ctx_.home) return {};
        const std::string rel = relative_to(path, ctx_.home);
        const auto parts = base::split_path(rel);  // views into rel
        for (const Known& k : kKnown) {
            const auto want = base::split_path(k.pattern);
            if (parts.size() < k.keep || parts.size() < want.size()) continue;
            bool match = true;
            for (size_t i = 0; i < want.size() && match; ++i) match = want[i] == "*" || want[i] == parts[i];
            if (match) return join(ctx_.home, joined(parts, k.keep));
        }
        // An npm prefix: <prefix>/lib/node_modules/<package>/... (a global package's
        // files, its bin links point there).
        for (size_t i = 1; i + 1 < parts.size(); ++i)
            if (parts[i] == "lib" && parts[i + 1] == "node_modules" && !container(joined(parts, i)))
                return join(ctx_.home, joined(parts, i));
        // A bin directory's parent (its lib, share, ...) unless the parent holds
        // other things; a directory on PATH itself; a file elsewhere alone (a link in
        // ~/.local/bin to ~/notes/tool.sh must not show the rest of ~/notes).
        const bool dir = view_.is_dir(path);
        size_t n = dir ? parts.size() : parts.size() - 1;
        if (n == 0) return path;  // a program directly in the home: itself
        const std::string_view last = parts[n - 1];
        const bool bin = last == "bin" || last == "sbin" || last == "shims";
        if (!bin) return dir && !container(joined(parts, n)) ? path : dir ? std::string() : path;
        if (n >= 2 && !container(joined(parts, n - 1))) --n;
        if (container(joined(parts, n))) return dir ? std::string() : path;
        return join(ctx_.home, joined(parts, n));
    }

    void add(const std::string& path, const std::string& why) {
        if (shown(path)) return;
        std::string root = root_of(path);
        if (root.empty()) return;
        for (const auto& r : roots_)
            if (util::path_within(root, r.first)) return;
        std::erase_if(roots_, [&](const auto& r) { return util::path_within(r.first, root); });
        roots_.emplace_back(root, why);
        // rustup's proxies in ~/.cargo/bin run the toolchains of RUSTUP_HOME.
        if (util::base_name(root) == "bin" && util::base_name(root.substr(0, root.rfind('/'))) == ".cargo") {
            std::string rustup = env_lookup(host_.environ, "RUSTUP_HOME").value_or(ctx_.home + "/.rustup");
            if (auto c = view_.canonical(rustup); c && view_.is_dir(*c) && util::path_within(*c, ctx_.home) &&
                                                  !container(relative_to(*c, ctx_.home)))
                roots_.emplace_back(*c, "the toolchains rustup's proxies in " + root + " run");
        }
        // A Python virtual environment runs the interpreter its pyvenv.cfg names.
        if (auto cfg = view_.read_head(root + "/pyvenv.cfg", 4096)) {
            for (const std::string& line : fields(*cfg, '\n')) {
                auto eq = line.find('=');
                if (eq == std::string::npos || trimmed(line.substr(0, eq)) != "home") continue;
                if (auto c = view_.canonical(trimmed(line.substr(eq + 1))))
                    add(*c, "the Python of the virtual environment " + root);
            }
        }
    }

    // Links in a PATH directory under the home lead to the installations they
    // belong to (~/.local/bin/claude into ~/.local/share/claude, a pipx program into
    // its virtual environment).
    void links_in(const std::string& dir, const std::string& entry) {
        size_t seen = 0;
        for (const std::string& name : view_.list(dir)) {
            if (++seen > kMaxLinksPerDir) break;
            std::string path = dir + "/" + name;
            if (!view_.readlink(path)) continue;
            if (auto c = view_.canonical(path)) add(*c, "the link " + join(entry, name));
        }
    }

    std::optional<std::string> search(const std::string& name) const {
        for (const std::string& dir : path_) {
            std::string candidate = util::normalize_path(dir + "/" + name);
            if (view_.executable_file(candidate)) return candidate;
        }
        return std::nullopt;
    }

    // The command and the interpreters its #! lines name.
    void command(const std::string& argv0) {
        std::optional<std::string> found;
        if (argv0.find('/') == std::string::npos)
            found = search(argv0);
        else
            found = util::normalize_path(argv0[0] == '/' ? argv0 : host_.cwd + "/" + argv0);
        std::string why = "the command " + argv0;
        for (int hop = 0; found && hop <= kMaxInterpreters; ++hop) {
            auto c = view_.canonical(*found);
            if (!c) return;
            add(*c, why);
            auto head = view_.read_head(*c, 256);
            if (!head || !util::starts_with(*head, "#!")) return;
            std::string line = head->substr(2, head->find('\n') == std::string::npos ? std::string::npos
                                                                                     : head->find('\n') - 2);
            std::vector<std::string> words;
            for (const std::string& w : fields(trimmed(line), ' '))
                if (!trimmed(w).empty()) words.push_back(trimmed(w));
            if (words.empty()) return;
            std::string interp = words[0];
            if (util::base_name(interp) == "env") {
                auto name = std::find_if(words.begin() + 1, words.end(),
                                         [](const std::string& w) { return w[0] != '-' && w.find('=') == std::string::npos; });
                if (name == words.end()) return;
                found = search(*name);
            } else {
                found = interp;
            }
            why = "the interpreter of " + *c;
        }
    }

    const HostFacts& host_;
    const ExpandContext& ctx_;
    const HostView& view_;
    std::vector<std::string> shown_;  // host paths the policy shows at the same path
    std::vector<std::string> path_;   // the caller's PATH, absolute entries
    std::vector<std::pair<std::string, std::string>> roots_;  // root, why
};

// Whether `path` is a directory inside the sandbox that `mounts` build.
bool dir_inside(const std::vector<MountOp>& mounts, const std::string& path, const HostView& view) {
    auto resolved = resolve_inside(mounts, path, view);
    if (!resolved) return false;
    auto i = covering_op(mounts, *resolved);
    if (!i) return false;
    const MountOp& op = mounts[*i];
    switch (op.kind) {
        case MountKind::bind:
        case MountKind::overlay:
            return op.is_dir && view.is_dir(join(op.src, relative_to(*resolved, op.dst)));
        case MountKind::tmpfs:
            // The tmpfs's root, or a directory the launcher makes in it for a mount below.
            return *resolved == op.dst ||
                   std::any_of(mounts.begin(), mounts.end(), [&](const MountOp& m) {
                       return m.dst != *resolved && util::path_within(m.dst, *resolved);
                   });
        default:
            return false;
    }
}

}  // namespace

Toolchains find_toolchains(const policy::Policy& policy, const HostFacts& host, const ExpandContext& ctx,
                           const std::vector<std::string>& argv) {
    if (!policy.path_tools.value || ctx.home.empty() || !policy.private_home.value) return {};
    return Finder(policy, host, ctx).run(argv);
}

void inside_path(const policy::Policy& policy, const ExpandContext& ctx, Plan& plan) {
    const bool set = std::any_of(policy.env_set.begin(), policy.env_set.end(),
                                 [](const policy::EnvSet& s) { return s.name == "PATH"; });
    if (set) return;  // the policy's or `-e PATH=...`: as given
    const HostView& view = *ctx.view;
    std::vector<std::string> keep;
    std::vector<std::string> dropped;
    auto put = [&](std::vector<std::string>::iterator at, const std::string& dir) {
        if (std::find(keep.begin(), keep.end(), dir) == keep.end()) keep.insert(at, dir);
    };
    const std::string caller = env_lookup(plan.env, "PATH").value_or("");
    for (const std::string& raw : caller.empty() ? std::vector<std::string>{} : fields(caller, ':')) {
        if (raw.empty() || raw[0] != '/') {
            dropped.push_back(raw.empty() ? "an empty entry" : raw);
            continue;
        }
        std::string dir = util::normalize_path(raw);
        if (dir_inside(plan.mounts, dir, view)) {
            put(keep.end(), dir);
        } else if (auto c = view.canonical(dir); c && dir_inside(plan.mounts, *c, view)) {
            put(keep.end(), *c);  // a link the sandbox lacks (fnm's multishell) to what it has
        } else {
            dropped.push_back(dir);
        }
    }
    if (keep.empty())
        for (const std::string& dir : fields(kSystemPath, ':'))
            if (dir_inside(plan.mounts, dir, view)) put(keep.end(), dir);
    // Nothing of it inside either (a policy of its own tree): the system's as it is,
    // never an empty PATH (which some shells read as the current directory).
    if (keep.empty()) keep = fields(kSystemPath, ':');
    size_t front = 0;
    for (const auto& p : policy.env_path) {
        auto dir = expand(p.value, ctx, p.origin);
        if (!dir || !dir_inside(plan.mounts, *dir, view) ||
            std::find(keep.begin(), keep.end(), *dir) != keep.end())
            continue;
        put(keep.begin() + static_cast<std::ptrdiff_t>(front++), *dir);
    }
    std::string value;
    for (const auto& d : keep) value += (value.empty() ? "" : ":") + d;
    std::erase_if(plan.env, [](const std::string& kv) { return util::starts_with(kv, "PATH="); });
    plan.env.push_back("PATH=" + value);
    std::sort(plan.env.begin(), plan.env.end());
    if (!dropped.empty()) {
        std::string list;
        for (const auto& d : dropped) list += (list.empty() ? "" : ", ") + d;
        plan.notes.push_back("PATH inside: the caller's, less what the sandbox does not have: " + list);
    }
}

}  // namespace agentjail::plan::detail
