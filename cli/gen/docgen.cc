// SPDX-License-Identifier: Apache-2.0
// aj_docgen: writes the man pages and the shell completion scripts at build time,
// from the same flag table and help texts as the agentjail command (linked from
// the same objects). Not installed.
//
//   aj_docgen man1 DATADIR OUT             agentjail(1)
//   aj_docgen man5 POLICY_FORMAT_MD OUT    agentjail-policy(5)
//   aj_docgen completion SHELL OUT         bash, zsh or fish
#include "manpage.hpp"

#include "completion.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

int usage() {
    std::fputs(
        "usage: aj_docgen man1 DATADIR OUT | man5 POLICY_FORMAT_MD OUT | completion SHELL OUT\n",
        stderr);
    return 2;
}

// Written whole or not at all: a build that stops halfway leaves no page for the
// next one to take as up to date.
int write_file(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << text;
        if (!out.flush()) {
            std::fprintf(stderr, "aj_docgen: cannot write %s\n", tmp.c_str());
            return 1;
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::perror(("aj_docgen: rename " + tmp).c_str());
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) return usage();
    const std::string what = argv[1];
    const std::string arg = argv[2];
    const std::string out = argv[3];
    if (what == "man1") return write_file(out, agentjail::cli::gen::agentjail_page(arg));
    if (what == "man5") {
        std::ifstream in(arg, std::ios::binary);
        if (!in.is_open()) {
            std::fprintf(stderr, "aj_docgen: cannot read %s\n", arg.c_str());
            return 1;
        }
        std::ostringstream md;
        md << in.rdbuf();
        return write_file(out, agentjail::cli::gen::policy_page(md.str()));
    }
    if (what == "completion") {
        auto script = agentjail::cli::completion_script(arg);
        if (!script) {
            std::fprintf(stderr, "aj_docgen: %s\n", script.error().message().c_str());
            return 1;
        }
        return write_file(out, *script);
    }
    return usage();
}
