# Shared by the interop scripts (sourced; needs the caller's $work
# directory).

# install_sdks PY_REQUIREMENT NPM_PACKAGE: installs a PyPI requirement into
# a venv and an npm package beside it, in $INTEROP_SDK_DIR (kept, so a
# re-run only checks the registries for newer matching versions) or in
# $work/sdk (removed with $work). Sets sdk_dir and py (the venv's python).
install_sdks() {
    local py_requirement=$1 npm_package=$2
    sdk_dir=${INTEROP_SDK_DIR:-$work/sdk}
    sdk_dir=$(mkdir -p "$sdk_dir" && cd "$sdk_dir" && pwd)
    echo "installing $py_requirement and $npm_package into $sdk_dir..." >&2
    [ -x "$sdk_dir/venv/bin/python" ] || python3 -m venv "$sdk_dir/venv"
    "$sdk_dir/venv/bin/pip" install -q --disable-pip-version-check --upgrade "$py_requirement" >&2
    [ -f "$sdk_dir/package.json" ] || (cd "$sdk_dir" && npm init -y >/dev/null)
    (cd "$sdk_dir" && npm install --silent --no-audit --no-fund "$npm_package" >&2)
    py="$sdk_dir/venv/bin/python"
}
