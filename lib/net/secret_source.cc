// SPDX-License-Identifier: Apache-2.0
// A secret's value read for the proxy (secret_source.hpp).
#include "net/secret_source.hpp"

#include "sys/host_file.hpp"

#include <cstdlib>

namespace agentjail::net {

Result<std::string> read_source(const SourceSpec& spec, const std::string& secret_name) {
    base::wstring v;
    base::WipeOnExit<base::wstring> wipe{v};
    SourceProbe p = find_source(
        spec, secret_name,
        [](const std::string& name, base::wstring& out) {
            const char* e = ::getenv(name.c_str());
            if (e == nullptr) return false;
            out = e;
            return true;
        },
        [](const std::string& path, base::wstring& out) { return sys::read_small_file(path, out); }, {}, &v);
    if (!p.available) {
        // The source's text names the variable already.
        const std::string why = p.unset ? "the variable is not set" : p.why;
        return Error(ErrorKind::invalid_input, EINVAL, "secret " + secret_name + " (" + source_text(spec) + "): " + why);
    }
    return std::string(v.data(), v.size());
}

}  // namespace agentjail::net
