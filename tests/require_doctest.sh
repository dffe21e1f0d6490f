#!/bin/sh
# Finds doctest's header, or installs Debian's doctest-dev when we are root,
# or says in one line exactly what to run. Nothing is downloaded from
# anywhere but the system's own package manager.
CXX="${1:-c++}"
if echo '#include <doctest/doctest.h>' | "$CXX" -x c++ -fsyntax-only - 2>/dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "doctest not found: installing Debian's doctest-dev with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q doctest-dev >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null && apt-get install -y -q doctest-dev >/dev/null; } ||
        { echo "could not install doctest-dev with apt-get; install it, then run make test again" >&2; exit 1; }
    exit 0
fi
echo "doctest is missing: run 'sudo apt-get install doctest-dev' (Debian/Ubuntu), then make test again" >&2
exit 1
