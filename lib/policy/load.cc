// SPDX-License-Identifier: Apache-2.0
// Loading: finds a built-in or reads a file, resolves the extends chain (cycles
// are errors), merges the layers base first and validates the result.
#include "policy/embedded.hpp"
#include "policy/internal.hpp"
#include "sys/fd.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace agentjail::policy {
namespace {

// Policy files are a few kilobytes; the cap keeps `-p /dev/zero`-style mistakes
// from eating memory.
constexpr size_t max_file_size = 1 << 20;
constexpr size_t max_layers = 64;

// The extends rule: a value with no '/' that does not end in .toml names a
// built-in; anything else is a file.
bool is_builtin_name(std::string_view s) {
    return s.find('/') == std::string_view::npos &&
           !(s.size() >= 5 && s.substr(s.size() - 5) == ".toml");
}

// Where your policies are, for messages: "~/.config/agentjail/policies" or the path.
std::string user_dir_shown() {
    std::string dir = user_policy_dir();
    const char* home = std::getenv("HOME");
    if (home != nullptr && home[0] == '/' && !dir.empty() && util::starts_with(dir, std::string(home) + "/"))
        return "~" + dir.substr(std::strlen(home));
    return dir.empty() ? std::string("~/.config/agentjail/policies") : dir;
}

}  // namespace

std::string user_config_dir() {
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    if (xdg != nullptr && xdg[0] == '/') return util::normalize_path(std::string(xdg) + "/agentjail");
    const char* home = std::getenv("HOME");
    if (home == nullptr || home[0] != '/') return {};
    return util::normalize_path(std::string(home) + "/.config/agentjail");
}

std::string user_policy_dir() {
    const std::string dir = user_config_dir();
    return dir.empty() ? dir : dir + "/policies";
}

std::optional<std::string> user_policy_file(const std::string& name) {
    if (name.empty() || name[0] == '.' || name.size() > 64) return std::nullopt;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return std::nullopt;
    std::string dir = user_policy_dir();
    if (dir.empty()) return std::nullopt;
    std::string path = dir + "/" + name + ".toml";
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
    return path;
}

namespace detail {

ReadResult read_small_file(const std::string& path) {
    ReadResult r;
    // O_NONBLOCK: opening a FIFO must not hang the loader; it is refused below.
    sys::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (!fd) {
        r.err = errno;
        r.why = util::errno_text(r.err);
        return r;
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) {
        r.err = errno;
        r.why = util::errno_text(r.err);
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        r.err = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        r.why = S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file";
        return r;
    }
    char buf[8192];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            r.err = errno;
            r.why = util::errno_text(r.err);
            return r;
        }
        if (n == 0) break;
        r.text.append(buf, static_cast<size_t>(n));
        if (r.text.size() > max_file_size) {
            r.err = EFBIG;
            r.why = "larger than 1 MiB, more than a policy or env file needs";
            return r;
        }
    }
    return r;
}

}  // namespace detail

namespace {

using detail::read_small_file;

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    if (slash == std::string::npos) return {};
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string join(const std::string& dir, const std::string& rel) {
    if (rel.empty() || rel[0] == '/' || dir.empty()) return rel;
    return dir == "/" ? "/" + rel : dir + "/" + rel;
}

// Two spellings of one file must be recognised as the same layer, or a cycle
// through "./a.toml" and "a.toml" would recurse until max_layers.
std::string identity(const std::string& path) {
    std::error_code ec;
    auto canon = std::filesystem::weakly_canonical(path, ec);
    if (!ec) return "file:" + canon.string();
    auto abs = std::filesystem::absolute(path, ec);
    return "file:" + (ec ? path : util::normalize_path(abs.string()));
}

// A built-in policy's layer, parsed once a process: its text is part of the
// binary, so the parse is the same every time, and a program that loads policies
// over and over (an embedder, fuzz_cli's ~2,000 loads a second, which spent most of
// their time re-reading the built-in TOML) pays it once. A copy is handed out: the
// caller applies it. Kept from a name's second load on: the agentjail command loads
// each layer once, and its launch path should not copy what it never reads again.
Result<detail::Layer> builtin_layer(const std::string& name, std::string_view text) {
    static std::mutex m;
    static std::map<std::string, detail::Layer, std::less<>> parsed;
    static std::set<std::string, std::less<>> seen;
    bool keep = false;
    {
        std::lock_guard<std::mutex> lock(m);
        if (auto it = parsed.find(name); it != parsed.end()) return it->second;
        keep = !seen.insert(name).second;
    }
    auto layer = detail::parse_layer(text, name + ".toml", detail::Source::embedded);
    if (!layer || !keep) return layer;
    std::lock_guard<std::mutex> lock(m);
    parsed.emplace(name, *layer);
    return layer;
}

class Resolver {
public:
    // Visits one layer: its bases first (depth first, in the order given), then
    // itself. A layer reached twice (a diamond) is applied once, where first met.
    Result<void> visit(detail::Layer layer, const std::string& id, const std::string& name,
                       bool is_builtin) {
        if (stack_ids_.size() >= max_layers)
            return detail::error_at(layer.extends.empty() ? Origin{layer.file, 0, 0, "extends"}
                                                          : layer.extends.front().origin,
                                    "extends chain is deeper than " + std::to_string(max_layers) +
                                        " layers");
        stack_ids_.push_back(id);
        stack_files_.push_back(layer.file);
        for (const auto& ext : layer.extends) {
            auto r = visit_base(ext, layer.file, is_builtin);
            if (!r) return r;
        }
        stack_ids_.pop_back();
        stack_files_.pop_back();
        done_.insert(id);
        names.push_back(name);
        order.push_back(std::move(layer));
        return {};
    }

    std::vector<detail::Layer> order;
    std::vector<std::string> names;

private:
    Result<void> visit_base(const Located<std::string>& ext, const std::string& from_file,
                            bool from_builtin) {
        const std::string& v = ext.value;
        std::string id, file, name, text;
        if (is_builtin_name(v)) {
            const Builtin* b = detail::find_builtin(v);
            // A network preset (net-balanced) may be extended too: it holds only a
            // [network] section, so an agent preset takes the reviewed registries
            // from it instead of a copy of the list.
            const EmbeddedPolicy* net = nullptr;
            if (!b && util::starts_with(v, "net-"))
                for (const auto& e : embedded_policies())
                    if (v == e.name) net = &e;
            auto mine = (!b && !net && !from_builtin) ? user_policy_file(v) : std::nullopt;
            if (!b && !net && !mine)
                return detail::error_at(ext.origin, "unknown policy '" + v + "' (built-in policies: " +
                                                        detail::builtin_names() + "; yours: " + user_dir_shown() +
                                                        "/NAME.toml; a file path must contain '/' or end in .toml)");
            if (mine) {
                file = *mine;
                id = identity(file);
                name = v;
            } else {
                name = b ? b->name : std::string(net->name);
                id = "builtin:" + name;
                file = name + ".toml";
                text = b ? b->text : std::string(net->text);
            }
        } else {
            if (from_builtin)
                return detail::error_at(ext.origin, "a built-in policy can only extend built-ins");
            if (v == "~" || util::starts_with(v, "~/")) {
                const char* home = std::getenv("HOME");
                if (home == nullptr || home[0] != '/')
                    return detail::error_at(ext.origin, "'" + v + "' needs HOME to be set");
                file = std::string(home) + v.substr(1);
            } else {
                file = join(dir_of(from_file), v);
            }
            id = identity(file);
            name = file;
        }
        for (size_t i = 0; i < stack_ids_.size(); ++i) {
            if (stack_ids_[i] != id) continue;
            std::string chain;
            for (size_t j = i; j < stack_files_.size(); ++j) chain += stack_files_[j] + " -> ";
            return detail::error_at(ext.origin, "extends cycle: " + chain + file);
        }
        if (done_.count(id)) return {};
        if (text.empty() && util::starts_with(id, "file:")) {
            auto r = read_small_file(file);
            if (r.err == ENOENT)
                return detail::error_at(ext.origin, "policy file '" + file + "' not found");
            if (r.err != 0)
                return detail::error_at(ext.origin, "cannot read '" + file + "': " + r.why);
            text = std::move(r.text);
        }
        const bool builtin = util::starts_with(id, "builtin:");
        auto layer = builtin ? builtin_layer(name, text) : detail::parse_layer(text, file);
        if (!layer) return std::move(layer).error();
        return visit(std::move(*layer), id, name, builtin);
    }

    std::vector<std::string> stack_ids_;
    std::vector<std::string> stack_files_;
    std::set<std::string> done_;
};

Result<Policy> load_layer(detail::Layer top, const std::string& id, const std::string& layer_name,
                          const std::string& policy_name, bool is_builtin) {
    Resolver r;
    auto visited = r.visit(std::move(top), id, layer_name, is_builtin);
    if (!visited) return std::move(visited).error();
    Policy p = detail::default_policy();
    for (const auto& layer : r.order) detail::apply_layer(p, layer);
    p.name = policy_name;
    p.layers = std::move(r.names);
    auto ok = validate(p);
    if (!ok) return std::move(ok).error();
    return p;
}

Result<Policy> load_file_text(const std::string& text, const std::string& file) {
    auto layer = detail::parse_layer(text, file);
    if (!layer) return std::move(layer).error();
    return load_layer(std::move(*layer), identity(file), file, file, false);
}

}  // namespace

Result<Policy> load_text(const std::string& text, const std::string& file) {
    return load_file_text(text, file);
}

Result<Policy> load(const std::string& name_or_path) {
    if (is_builtin_name(name_or_path)) {
        if (const Builtin* b = detail::find_builtin(name_or_path)) {
            auto layer = builtin_layer(b->name, b->text);
            if (!layer) return std::move(layer).error();
            return load_layer(std::move(*layer), "builtin:" + b->name, b->name, b->name, true);
        }
    }
    // A plain name no built-in has: one of yours (~/.config/agentjail/policies).
    if (is_builtin_name(name_or_path))
        if (auto mine = user_policy_file(name_or_path)) {
            auto m = read_small_file(*mine);
            if (m.err != 0)
                return Error{ErrorKind::invalid_input, m.err, "cannot read policy file '" + *mine + "': " + m.why};
            return load_file_text(m.text, *mine);
        }
    auto r = read_small_file(name_or_path);
    if (r.err == ENOENT || r.err == ENOTDIR || (r.err != 0 && name_or_path.empty()))
        return Error{ErrorKind::invalid_input, 0,
                     "unknown policy '" + name_or_path + "' (built-in policies: " + detail::builtin_names() +
                         "; yours: " + user_dir_shown() + "/NAME.toml; or give a path to a .toml file)"};
    if (r.err != 0)
        return Error{ErrorKind::invalid_input, r.err,
                     "cannot read policy file '" + name_or_path + "': " + r.why};
    return load_file_text(r.text, name_or_path);
}

}  // namespace agentjail::policy
