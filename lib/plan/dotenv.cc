// SPDX-License-Identifier: Apache-2.0
// A project's .env inside (issue 27, item 3). The file is hidden, but a script's
// load_dotenv() used to die on the empty mode-000 mask: the sandbox now sees the
// same keys, each value a placeholder, and the proxy puts a known provider's key
// back in requests to that provider only. The values are never read here beyond
// telling which keys hold one (netrules' one dotenv reader), and never inside.
#include "plan/internal.hpp"

#include "base/wiped.hpp"
#include "netrules/rules.hpp"
#include "netrules/secret_value.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <string_view>

namespace agentjail::plan::detail {

namespace {

constexpr std::size_t kMaxDotenv = 64 * 1024;

// Model and hub APIs by the variable their clients read, and the host the key
// goes to; `header` when the client sends it in one besides Authorization and
// x-api-key. Any other key's placeholder is never swapped (a policy's [secrets]
// entry of that name binds it to hosts).
struct Provider {
    std::string_view name;
    std::string_view host;
    std::string_view header;
};
constexpr Provider kProviders[] = {
    {"ANTHROPIC_API_KEY", "api.anthropic.com", ""},
    {"OPENAI_API_KEY", "api.openai.com", ""},
    {"GEMINI_API_KEY", "generativelanguage.googleapis.com", "x-goog-api-key"},
    {"GOOGLE_API_KEY", "generativelanguage.googleapis.com", "x-goog-api-key"},
    {"GROQ_API_KEY", "api.groq.com", ""},
    {"MISTRAL_API_KEY", "api.mistral.ai", ""},
    {"OPENROUTER_API_KEY", "openrouter.ai", ""},
    {"DEEPSEEK_API_KEY", "api.deepseek.com", ""},
    {"XAI_API_KEY", "api.x.ai", ""},
    {"TOGETHER_API_KEY", "api.together.xyz", ""},
    {"COHERE_API_KEY", "api.cohere.com", ""},
    {"HF_TOKEN", "huggingface.co", ""},
};

const Provider* provider_of(std::string_view name) {
    for (const auto& p : kProviders)
        if (p.name == name) return &p;
    return nullptr;
}

bool dotenv_name(std::string_view base) {
    return base == ".env" || (base.size() > 5 && base.substr(0, 5) == ".env.");
}

}  // namespace

void dotenv_views(const ExpandContext& ctx, const PlaceholderKey& key, Plan& plan, net::Settings* s) {
    if (plan.workspace.empty() || plan.workspace_mode != policy::WorkspaceMode::direct) return;
    for (auto& op : plan.mounts) {
        if (op.kind != MountKind::mask_file || op.placeholder || !op.text.empty()) continue;
        if (!util::path_within(op.dst, plan.workspace) || op.dst == plan.workspace) continue;
        if (!dotenv_name(util::base_name(op.dst))) continue;
        // Read beneath the workspace, no link followed: a link planted at .env by an
        // earlier run must not make this read (and show the keys of) another file.
        auto text = ctx.view->read_beneath(plan.workspace, relative_to(op.dst, plan.workspace), kMaxDotenv);
        if (!text) {
            plan.notes.push_back("workspace: " + op.dst + " stays hidden (empty): it is no regular file of at most " +
                                 std::to_string(kMaxDotenv / 1024) + " KiB that can be read without a link");
            continue;
        }
        auto keys = net::dotenv_keys(*text);
        base::wipe(text->data(), text->size());
        std::string view = "# agentjail: a view of " + std::string(util::base_name(op.dst)) +
                           ": each value is a placeholder, the real ones stay outside\n";
        size_t bound = 0;
        for (const auto& k : keys) {
            std::string placeholder;
            if (s != nullptr)
                for (const auto& sec : s->secrets)
                    if (sec.name == k.key) placeholder = sec.placeholder;
            const std::string source = "dotenv:" + op.dst + "#" + k.key;
            if (placeholder.empty() && k.value) {
                placeholder = key.key.empty() ? std::string() : stable_placeholder(key.key, plan.state_dir, k.key, {source});
                if (placeholder.empty()) placeholder = make_placeholder(k.key);
                const Provider* p = provider_of(k.key);
                if (s != nullptr && p != nullptr) {
                    std::string why;
                    auto pattern = net::parse_host_pattern(std::string(p->host), &why);
                    if (pattern) {
                        net::Secret sec;
                        sec.name = k.key;
                        sec.source = source;
                        sec.placeholder = placeholder;
                        net::Rule rule;
                        rule.pattern = *pattern;
                        rule.text = std::string(p->host);
                        rule.origin = op.dst + " (" + k.key + ", a known provider's key)";
                        sec.hosts.push_back(std::move(rule));
                        if (!p->header.empty()) sec.headers.push_back(std::string(p->header));
                        sec.detail = "from the project's " + std::string(util::base_name(op.dst)) +
                                     ", which the sandbox sees with this placeholder";
                        s->secrets.push_back(std::move(sec));
                        ++bound;
                    }
                }
            }
            view += k.key + "=" + placeholder + "\n";
        }
        op.text = std::move(view);
        plan.notes.push_back("workspace: " + op.dst + " shows its " + std::to_string(keys.size()) +
                             " keys with placeholders for values" +
                             (bound ? "; " + std::to_string(bound) + " known provider key(s) put in by the proxy for "
                                                                     "their hosts"
                                    : std::string()));
    }
}

}  // namespace agentjail::plan::detail
