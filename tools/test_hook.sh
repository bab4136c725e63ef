#!/usr/bin/env bash
# Run the frame hook tests (tests/hook, book chapter 2) under CPython 3.12 and 3.13.
#
# For each version: a throwaway venv in build/hook-venv-3.X with pytest and setuptools,
# the extension built into build/hook-3.X, and pytest run on tests/hook with
# TINYDYNAMO_HOOK_BUILD pointing there (tests/hook/hook_helpers.py loads that build;
# neither torch nor the tinydynamo package is imported). 3.11 runs in the main suite.
# Usage: tools/test_hook.sh [VERSION...]   (default: 3.12.1 3.13.0), from the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.12.1 3.13.0)
failed=()
for version in "${versions[@]}"; do
    minor=${version%.*}
    python="${PYENV_ROOT:-$HOME/.pyenv}/versions/$version/bin/python$minor"
    venv="build/hook-venv-$minor"
    echo "=== frame hook tests on Python $version"
    if [ ! -x "$python" ]; then
        echo "missing $python"
        failed+=("$version")
        continue
    fi
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
        "$venv/bin/python" -m pip install -q pytest pytest-timeout setuptools
    fi
    "$venv/bin/python" setup.py -q build_ext --build-lib "build/hook-$minor" \
        --build-temp "build/hook-temp-$minor" || { failed+=("$version"); continue; }
    TINYDYNAMO_HOOK_BUILD="build/hook-$minor" "$venv/bin/python" -m pytest tests/hook \
        --confcutdir=tests/hook -p no:cacheprovider -rs || failed+=("$version")
done

if [ ${#failed[@]} -gt 0 ]; then
    echo "frame hook tests FAILED on: ${failed[*]}"
    exit 1
fi
echo "frame hook tests passed on: ${versions[*]}"
