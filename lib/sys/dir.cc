// SPDX-License-Identifier: Apache-2.0
// The names in a directory (see dir.hpp).
#include "sys/dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace agentjail::sys {

std::optional<std::vector<std::string>> dir_names(int dirfd) {
    int dfd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    if (dfd < 0) return std::nullopt;
    DIR* d = ::fdopendir(dfd);
    if (d == nullptr) {
        int err = errno;
        ::close(dfd);
        errno = err;
        return std::nullopt;
    }
    // The duplicate shares the offset: start from the beginning whatever it was.
    ::rewinddir(d);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") names.push_back(std::move(n));
    }
    ::closedir(d);
    return names;
}

}  // namespace agentjail::sys
