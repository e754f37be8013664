package llama

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// scriptOwner says whether process $1 lives ("alive 1" or "alive 0") and
// which processes listen on TCP port $2 of the node, one line each:
// "listen ADDR PID ARGS" separated by tabs, PID 0 when the socket's owner
// cannot be seen (another user's process). On Linux it reads
// /proc/net/tcp{,6} (the listening sockets' inodes) and the processes'
// fd links (which process holds each inode); elsewhere (macOS) lsof.
const scriptOwner = shLives + `pid=$1 port=$2
if lives "$pid"; then echo "alive 1"; else echo "alive 0"; fi
if [ -r /proc/net/tcp ]; then
  hex=$(printf '%04X' "$port")
  ls -l /proc/[0-9]*/fd 2>/dev/null | awk -v p="$hex" '
    FILENAME != "-" { if ($4 == "0A") { n = split($2, a, ":"); if (a[n] == p) { addr[$10] = a[1]; seen[$10] = 0 } } next }
    /^\/proc\/[0-9]+\/fd:$/ { split($0, d, "/"); owner = d[3]; next }
    $NF ~ /^socket:\[[0-9]+\]$/ { s = $NF; gsub(/[^0-9]/, "", s); if (s in addr) { print addr[s], owner; seen[s] = 1 } }
    END { for (i in seen) if (!seen[i]) print addr[i], 0 }' /proc/net/tcp /proc/net/tcp6 - |
  while read -r addr owner; do
    args=
    if [ "$owner" -gt 0 ]; then args=$(tr '\0' ' ' < "/proc/$owner/cmdline" 2>/dev/null || true); fi
    printf 'listen\t%s\t%s\t%s\n' "$addr" "$owner" "$args"
  done
elif command -v lsof >/dev/null 2>&1; then
  lsof -nP -iTCP:"$port" -sTCP:LISTEN -Fpn 2>/dev/null | while IFS= read -r line; do
    case $line in
      p*) owner=${line#p} ;;
      n*) printf 'listen\t%s\t%s\t%s\n' "${line#n}" "$owner" "$(ps -ww -o args= -p "$owner" 2>/dev/null)" ;;
    esac
  done
else
  echo "neither /proc/net/tcp nor lsof: cannot tell which process holds a port" >&2
  exit 1
fi
`

// listener is a process listening on a TCP port of the node: the address
// it is bound to ("" for every address), its pid (0 when its owner
// cannot be seen) and its command line.
type listener struct {
	addr string
	pid  int
	args string
}

// owner is what scriptOwner reports.
type owner struct {
	alive     bool
	listeners []listener
}

// parseOwner reads the output of scriptOwner.
func parseOwner(out string) (owner, error) {
	var o owner
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch f := strings.SplitN(line, "\t", 4); {
		case line == "alive 1" || line == "alive 0":
			o.alive = line == "alive 1"
		case f[0] == "listen" && len(f) == 4:
			pid, err := strconv.Atoi(f[2])
			if err != nil || pid < 0 {
				return o, fmt.Errorf("owner line %d: pid %q", n, f[2])
			}
			addr, err := listenAddr(f[1])
			if err != nil {
				return o, fmt.Errorf("owner line %d: %v", n, err)
			}
			o.listeners = append(o.listeners, listener{addr: addr, pid: pid, args: strings.TrimSpace(f[3])})
		default:
			return o, fmt.Errorf("owner line %d: unexpected %q", n, line)
		}
	}
	return o, sc.Err()
}

// listenAddr is the address of a listening socket as /proc/net/tcp
// (hex, each 32-bit word in host order: little-endian here) or lsof
// ("127.0.0.1:8080", "[::1]:8080", "*:8080") writes it, "" for every
// address.
func listenAddr(s string) (string, error) {
	if h, port, err := net.SplitHostPort(s); err == nil && port != "" {
		if h == "*" {
			return "", nil
		}
		s = h
		if ip := net.ParseIP(s); ip != nil {
			return normIP(ip), nil
		}
		return "", fmt.Errorf("address %q", s)
	}
	b, err := hex.DecodeString(s)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return "", fmt.Errorf("address %q", s)
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	return normIP(net.IP(b)), nil
}

// normIP is ip as listenAddr reports it: "" for an unspecified address,
// an IPv4 address (also one mapped into IPv6) in dotted form.
func normIP(ip net.IP) string {
	if ip.IsUnspecified() {
		return ""
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return ip.String()
}

// holders are the listeners that hold lane l's port: bound where the
// lane binds, or to every address, or any of them when the lane binds
// to every address.
func (o owner) holders(l Lane) []listener {
	want := ""
	if ip := net.ParseIP(strings.Trim(l.listenHost(), "[]")); ip != nil {
		want = normIP(ip)
	}
	var out []listener
	for _, ls := range o.listeners {
		if want == "" || ls.addr == "" || ls.addr == want {
			out = append(out, ls)
		}
	}
	return out
}

// PortHeldError is a lane's port held by a process that is not the
// lane's: the start fails and nothing is recorded.
type PortHeldError struct {
	Lane   string
	Host   string
	Port   int
	PID    int // the lane's process
	Holder listener
}

// Error implements error.
func (e *PortHeldError) Error() string {
	return fmt.Sprintf("lane %s: port %d of %s is held by pid %d (%s), not by the lane's process (pid %d)", e.Lane, e.Port, e.Host, e.Holder.pid, e.Holder.args, e.PID)
}

// identityCheck is what identity found: whether the process lives,
// whether it listens on the lane's port, and whether a listener there
// has an owner poolc cannot see (another user's process, or one that
// exited while it looked).
type identityCheck struct {
	alive, listening, unseen bool
}

// notListening says why process pid is not seen holding lane l's port.
func (c identityCheck) notListening(pid int, l Lane) string {
	if c.unseen {
		return fmt.Sprintf("port %d is held by a process poolc cannot see (another user's?), not by pid %d", l.Port, pid)
	}
	return fmt.Sprintf("pid %d does not listen on port %d", pid, l.Port)
}
