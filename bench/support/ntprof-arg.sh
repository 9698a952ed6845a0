# Sourced by the bench scripts: the ntprof binary their first argument names.
# ntprof_arg SCRIPT USAGE ARG prints ARG as an absolute path, or a one-line
# error naming SCRIPT and its USAGE and exits 2 when ARG is missing, an
# option (say --help) or not an executable file.
ntprof_arg() {
    local script=$1 usage=$2 arg=${3-}
    if [ -z "$arg" ] || [[ $arg == -* ]] || [ -d "$arg" ] || [ ! -x "$arg" ]; then
        echo "$script: the first argument must be the ntprof binary, not '$arg' (usage: $usage)" >&2
        exit 2
    fi
    echo "$(cd "$(dirname "$arg")" && pwd)/$(basename "$arg")"
}
