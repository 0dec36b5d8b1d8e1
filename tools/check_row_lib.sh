# What the table checks share (tools/check-op-table.sh, check-dtype-table.sh,
# check-kernel-slots.sh), sourced by each: the copies of the table, the verdict, and a
# syntax-only compile. They copy a table into $work/good unchanged and into $work/bad with one
# new row, and build a piece of the tree against each copy.
#
# make_trees SUBDIR SOURCE: $work, a folder removed at exit, with SOURCE (a file or folder)
# copied into $work/good/SUBDIR and $work/bad/SUBDIR (the caller then writes its row into bad).
make_trees() {
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    for tree in good bad; do
        mkdir -p "$work/$tree/$1"
        cp -r "$2" "$work/$tree/$1"
    done
}
#
# check_row TOOL WHAT PATTERN BUILD [ARGS...]: runs `BUILD TABLE ARGS...` with TABLE
# $work/good, then $work/bad, each leaving the build's messages in $work/err. The unchanged
# table must build; the table with the row must not, and its first error matching PATTERN
# is reported. Any other outcome is printed with the messages, and sets status=1.
check_row() {
    tool=$1 what=$2 pattern=$3 build=$4
    shift 4
    if ! "$build" "$work/good" "$@"; then
        echo "$tool: $what does not build with the unchanged table:"
        cat "$work/err"
        status=1
    elif "$build" "$work/bad" "$@"; then
        echo "$tool: $what builds with a row that lacks its pieces"
        status=1
    elif ! grep -q "$pattern" "$work/err"; then
        echo "$tool: $what fails without naming the row ($pattern):"
        cat "$work/err"
        status=1
    else
        echo "$tool: $what: $(grep -m1 "$pattern" "$work/err" | sed 's/^.*error: //')"
    fi
}

# compile TABLE [compiler flags]: $file (a path under $here) compiled for syntax only against
# the table copy in TABLE, its messages in $work/err: with $cc (C), or for a .cu with nvcc's
# front end alone ($NVCC --cuda: no device code).
compile() {
    table=$1
    shift
    case $file in
    *.cu) "$NVCC" -x cu -std=c++17 --cuda -o /dev/null -I"$table" -I"$here/src" "$here/$file" \
              2> "$work/err" > /dev/null ;;
    *) "$cc" -std=c11 -fsyntax-only -I"$table" "$@" -I"$here/src" -I"$here/tests" -D_GNU_SOURCE \
           "$here/$file" 2> "$work/err" ;;
    esac
}
