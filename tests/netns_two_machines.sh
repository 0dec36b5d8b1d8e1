#!/bin/sh
# Two "machines" on one host for test_dist_mpi.sh: two network namespaces joined by a veth
# pair (10.218.N.1 and 10.218.N.2), mpirun in the first, one rank in each, Open MPI's
# launcher reaching the second through `ip netns exec` (its rsh agent) and the ranks talking
# over TCP on the veth pair only. Prints rank 0's output (the JSON summary); exits 77 with the
# reason as the last line when network namespaces cannot be made here (not root, no
# CAP_SYS_ADMIN, no `ip`), and removes what it made in every case.
# Usage: netns_two_machines.sh WORKDIR CTENSOR "TRAIN ARGS" CHECKPOINT
work=$1 ctensor=$2 args=$3 checkpoint=$4
tag=$$
a="ct18a$tag" b="ct18b$tag"
net="10.218.$((tag % 250)).0/24"
ip_a="10.218.$((tag % 250)).1" ip_b="10.218.$((tag % 250)).2"

cleanup() {
    ip netns del "$a" 2>/dev/null
    ip netns del "$b" 2>/dev/null
}
trap cleanup EXIT

if ! command -v ip >/dev/null 2>&1; then
    echo "no \`ip\` command (iproute2) to make network namespaces"
    exit 77
fi
if ! ip netns add "$a" 2>"$work/netns.err" || ! ip netns add "$b" 2>>"$work/netns.err"; then
    echo "network namespaces cannot be made here ($(head -1 "$work/netns.err")): run as root with CAP_SYS_ADMIN"
    exit 77
fi
if ! ip link add "va$tag" netns "$a" type veth peer name "vb$tag" netns "$b" 2>"$work/netns.err"
then
    echo "no veth pair between network namespaces here ($(head -1 "$work/netns.err"))"
    exit 77
fi
ip -n "$a" addr add "$ip_a/24" dev "va$tag" && ip -n "$b" addr add "$ip_b/24" dev "vb$tag" &&
    ip -n "$a" link set "va$tag" up && ip -n "$b" link set "vb$tag" up &&
    ip -n "$a" link set lo up && ip -n "$b" link set lo up || exit 1

# Open MPI's launcher calls the agent as `AGENT [OPTIONS] HOST COMMAND...`, COMMAND for a
# remote shell: run it in the namespace that has HOST's address.
agent="$work/netns_agent.sh"
cat >"$agent" <<EOF
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
case "\$host" in
$ip_a) ns=$a ;;
*) ns=$b ;;
esac
exec ip netns exec "\$ns" sh -c "\$*"
EOF
chmod +x "$agent"

# shellcheck disable=SC2086 # args is a list of options
timeout 300 ip netns exec "$a" mpirun --oversubscribe --bind-to none -np 2 \
    --host "$ip_a:1,$ip_b:1" --mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl self,tcp --mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net" \
    -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY -x OMPI_ALLOW_RUN_AS_ROOT \
    -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM -x PATH \
    "$ctensor" train $args --checkpoint "$checkpoint"
