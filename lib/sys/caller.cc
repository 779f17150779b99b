// SPDX-License-Identifier: Apache-2.0
// The caller's home and working directory (see caller.hpp).
#include "sys/caller.hpp"

#include "util/strings.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <vector>

namespace agentjail::sys {

namespace {

std::string canonical_or_lexical(const std::string& path) {
    if (path.empty()) return path;
    if (char* real = ::realpath(path.c_str(), nullptr)) {
        std::string out = real;
        ::free(real);
        return out;
    }
    return util::normalize_path(path);
}

}  // namespace

std::pair<std::string, std::string> passwd_of(uid_t uid) {
    long bufsize = ::sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buf(bufsize > 0 ? static_cast<size_t>(bufsize) : 16384);
    struct passwd pw {};
    struct passwd* found = nullptr;
    while (::getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) == ERANGE && buf.size() < (1u << 20))
        buf.resize(buf.size() * 2);
    if (found == nullptr) return {};
    return {found->pw_name != nullptr ? found->pw_name : "", found->pw_dir != nullptr ? found->pw_dir : ""};
}

std::string caller_home() {
    const char* env_home = ::getenv("HOME");
    struct stat st {};
    std::string home;
    if (env_home != nullptr && env_home[0] == '/' && ::stat(env_home, &st) == 0 && S_ISDIR(st.st_mode))
        home = env_home;
    else
        home = passwd_of(::getuid()).second;
    return canonical_or_lexical(home);
}

Result<std::string> caller_cwd() {
    std::vector<char> buf(PATH_MAX);
    while (::getcwd(buf.data(), buf.size()) == nullptr) {
        if (errno != ERANGE)
            return Error(ErrorKind::invalid_input, errno,
                         "cannot read the current directory: " + util::errno_text(errno));
        buf.resize(buf.size() * 2);
    }
    return canonical_or_lexical(buf.data());
}

std::string caller_pwd(const std::string& cwd) {
    const char* pwd = ::getenv("PWD");
    if (pwd == nullptr || pwd[0] != '/' || util::normalize_path(pwd) != pwd) return cwd;
    struct stat here {}, named {};
    if (::stat(".", &here) != 0 || ::stat(pwd, &named) != 0 || here.st_dev != named.st_dev ||
        here.st_ino != named.st_ino)
        return cwd;
    return pwd;
}

}  // namespace agentjail::sys
