package llama

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"poolc.dev/poolc/internal/spelling"
)

// Lane is one llama-server process to run on a node: its name (unique on
// the node, it names the pidfile), the address it listens on, its model
// file and the aliases it answers to. SizeBytes is the model's size on
// disk, which sizes the wait for it to load.
type Lane struct {
	Name      string
	Host      string
	Port      int
	Model     string
	Aliases   []string
	Args      []string
	SizeBytes int64
	// SHA256 and Source say which weights Model held when the lane
	// started (recorded, never checked: prefetch checks them), so observe
	// can tell a process running older weights under the same path.
	SHA256 string
	Source string
	// Residency is the pool's residency of the lane (keep-warm or
	// preferred for a process of its own), recorded at the start so
	// observe reports what runs, not what the pool declares now.
	Residency string
}

// Settings say how a node runs lanes. The zero value of each field means
// its Default*.
type Settings struct {
	// Binary is the llama-server executable, a name on the node's PATH or
	// an absolute path.
	Binary string
	// StateDir holds the pidfiles, metadata and logs of the lanes; a
	// relative path is relative to the login's home directory.
	StateDir string
	// Env is set in the environment of every lane process.
	Env map[string]string
	// LoadRate is the slowest load speed expected, in bytes per second:
	// a start waits StartBase + size/LoadRate for /health to answer 200.
	LoadRate int64
	// StartBase is the part of the start timeout that does not depend on
	// the model's size.
	StartBase time.Duration
	// DrainTimeout bounds the wait for in-flight requests to finish.
	DrainTimeout time.Duration
	// StopGrace is how long a stopped lane has to exit after SIGTERM
	// before it is sent SIGKILL.
	StopGrace time.Duration
	// Poll is the interval between probes while waiting.
	Poll time.Duration
	// CommandTimeout bounds a remote command of no size: reading the
	// lanes, starting, signalling, writing a small file.
	CommandTimeout time.Duration
	// ChecksumRate is the slowest hashing expected, in bytes per second:
	// a sha256 of N bytes may take CommandTimeout + N/ChecksumRate.
	ChecksumRate int64
	// TransferRate is the slowest download or copy by the node expected,
	// in bytes per second: N bytes may take CommandTimeout +
	// N/TransferRate.
	TransferRate int64
	// ProbeTimeout bounds one HTTP request to a lane (a probe of /health,
	// /slots, /metrics, /props or /models).
	ProbeTimeout time.Duration
	// ServiceManager is how a lane's own process runs: ServiceNone
	// (detached from the session), ServiceSystemd (a systemd user unit)
	// or ServiceLaunchd (a LaunchAgent).
	ServiceManager string
}

// The defaults of Settings; they are written nowhere else.
const (
	// DefaultBinary is the llama-server executable, looked up on the
	// node's PATH.
	DefaultBinary = "llama-server"
	// DefaultStateDir holds the lanes' pidfiles, metadata and logs,
	// relative to the login's home directory.
	DefaultStateDir = ".poolc/lanes"
	// DefaultLoadRate is the slowest model load speed expected, in bytes
	// per second: 100 MiB/s, a slow disk.
	DefaultLoadRate = 100 << 20
	// DefaultStartBase is the part of a lane's start timeout that does not
	// depend on the model's size.
	DefaultStartBase = 30 * time.Second
	// DefaultDrainTimeout bounds the wait for a lane's in-flight requests
	// to finish.
	DefaultDrainTimeout = 120 * time.Second
	// DefaultStopGrace is how long a stopped lane has to exit after
	// SIGTERM before it is sent SIGKILL.
	DefaultStopGrace = 10 * time.Second
	// DefaultPoll is the interval between probes while waiting.
	DefaultPoll = 200 * time.Millisecond
	// DefaultProbeTimeout bounds one HTTP request to a lane.
	DefaultProbeTimeout = 5 * time.Second
	// DefaultCommandTimeout bounds a remote command of no size.
	DefaultCommandTimeout = 60 * time.Second
	// DefaultChecksumRate is the slowest hashing expected, in bytes per
	// second: 50 MiB/s, a slow disk.
	DefaultChecksumRate = 50 << 20
	// DefaultTransferRate is the slowest download or copy by a node
	// expected, in bytes per second: 5 MiB/s, a slow link.
	DefaultTransferRate = 5 << 20
	// DefaultServiceManager runs a lane's own process detached, with no
	// service manager.
	DefaultServiceManager = ServiceNone
	// DefaultListenHost is a lane's --host when the lane names none: every
	// interface, so a gateway on another machine reaches it.
	DefaultListenHost = "0.0.0.0"
)

func (s Settings) withDefaults() Settings {
	if s.Binary == "" {
		s.Binary = DefaultBinary
	}
	if s.StateDir == "" {
		s.StateDir = DefaultStateDir
	}
	if s.LoadRate <= 0 {
		s.LoadRate = DefaultLoadRate
	}
	if s.StartBase <= 0 {
		s.StartBase = DefaultStartBase
	}
	if s.DrainTimeout <= 0 {
		s.DrainTimeout = DefaultDrainTimeout
	}
	if s.StopGrace <= 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.Poll <= 0 {
		s.Poll = DefaultPoll
	}
	if s.CommandTimeout <= 0 {
		s.CommandTimeout = DefaultCommandTimeout
	}
	if s.ChecksumRate <= 0 {
		s.ChecksumRate = DefaultChecksumRate
	}
	if s.TransferRate <= 0 {
		s.TransferRate = DefaultTransferRate
	}
	if s.ProbeTimeout <= 0 {
		s.ProbeTimeout = DefaultProbeTimeout
	}
	if s.ServiceManager == "" {
		s.ServiceManager = DefaultServiceManager
	}
	return s
}

// checksumTimeout bounds a sha256 of size bytes.
func (s Settings) checksumTimeout(size int64) time.Duration {
	return s.CommandTimeout + perSecond(size, s.ChecksumRate)
}

// transferTimeout bounds a download or copy of size bytes.
func (s Settings) transferTimeout(size int64) time.Duration {
	return s.CommandTimeout + perSecond(size, s.TransferRate)
}

// perSecond is the time size bytes take at rate bytes per second.
func perSecond(size, rate int64) time.Duration {
	if size <= 0 {
		return 0
	}
	return time.Duration(float64(size) / float64(rate) * float64(time.Second))
}

// startTimeout is how long a lane of size bytes may take to answer
// /health 200.
func (s Settings) startTimeout(size int64) time.Duration {
	return s.StartBase + perSecond(size, s.LoadRate)
}

var (
	envRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// listenHost is the address a lane listens on: a host name or an IP
	// address, without brackets.
	listenHost = spelling.New("A-Za-z0-9.:-", "A-Za-z0-9.:-", 1, 253)
)

// managedFlags are the llama-server flags the actuator sets itself; a
// lane's Args may not set them again.
var managedFlags = map[string]bool{
	"--host": true, "--port": true, "-m": true, "--model": true,
	"-a": true, "--alias": true, "--metrics": true, "--slots": true, "--no-slots": true,
}

// checkPath refuses a model path the actuator would not write or read.
func checkPath(what, p string) error {
	switch {
	case !path.IsAbs(p):
		return fmt.Errorf("%s %q is not an absolute path", what, p)
	case strings.ContainsAny(p, "\x00\n\r"):
		return fmt.Errorf("%s %q holds a NUL or newline", what, p)
	case path.Clean(p) != p:
		return fmt.Errorf("%s %q is not clean (want %q)", what, p, path.Clean(p))
	}
	return nil
}

// Validate checks the lane can be started as it says.
func (l Lane) Validate() error {
	if !spelling.Name.Allows(l.Name) {
		return fmt.Errorf("lane name %q: want letters, digits, '.', '_' or '-', starting with a letter or digit", l.Name)
	}
	if l.Port < 1 || l.Port > 65535 {
		return fmt.Errorf("lane %s: port %d is not in 1..65535", l.Name, l.Port)
	}
	if l.Host != "" && !listenHost.Allows(l.Host) {
		return fmt.Errorf("lane %s: listen host %q is not a host name or address", l.Name, l.Host)
	}
	if err := checkPath("lane "+l.Name+": model", l.Model); err != nil {
		return err
	}
	for _, a := range l.Aliases {
		if !spelling.Alias.Allows(a) {
			return fmt.Errorf("lane %s: alias %q: want letters, digits and ._:/@+- (no comma)", l.Name, a)
		}
	}
	for _, a := range l.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("lane %s: argument %q holds a NUL byte", l.Name, a)
		}
		if flag, _, _ := strings.Cut(a, "="); managedFlags[flag] {
			return fmt.Errorf("lane %s: argument %s is set by poolc from the lane itself", l.Name, flag)
		}
	}
	return nil
}

// key names the lane's files in the state directory (pidfile, metadata,
// log, start lock): its name and port, so a lane replaced on its node (new
// weights under the same name) runs its second process on another port
// beside the first, each with its own files. The router, one per node,
// is its name alone. '@' is in no lane name, so keys never collide.
func (l Lane) key() string {
	if l.Name == RouterLane {
		return l.Name
	}
	return l.Name + "@" + strconv.Itoa(l.Port)
}

// listenHost is the lane's --host.
func (l Lane) listenHost() string {
	if l.Host == "" {
		return DefaultListenHost
	}
	return l.Host
}

// probeAddr is where the node itself reaches the lane's HTTP port.
func (l Lane) probeAddr() string {
	h := l.listenHost()
	switch h {
	case "0.0.0.0", "::", "[::]":
		h = "127.0.0.1"
	}
	return joinHostPort(h, l.Port)
}

func joinHostPort(h string, port int) string {
	if strings.Contains(h, ":") {
		return "[" + h + "]:" + strconv.Itoa(port)
	}
	return h + ":" + strconv.Itoa(port)
}

// environ is the lanes' environment, "NAME=value" sorted by name.
func (s Settings) environ() ([]string, error) {
	var out []string
	for _, k := range sortedKeys(s.Env) {
		if !envRE.MatchString(k) {
			return nil, fmt.Errorf("environment variable name %q is not an identifier", k)
		}
		if strings.ContainsAny(s.Env[k], "\x00\n\r") {
			return nil, fmt.Errorf("environment variable %s holds a NUL byte or a line break", k)
		}
		out = append(out, k+"="+s.Env[k])
	}
	return out, nil
}

// argv is the server's command for the lane: the binary, always --port
// (llama-server's default port is changing), the model, the aliases as
// one sorted comma-separated set, --metrics and --slots for drain and
// observe, then the lane's own arguments.
func (s Settings) argv(l Lane) []string {
	out := []string{s.Binary, "--host", l.listenHost(), "--port", strconv.Itoa(l.Port), "-m", l.Model}
	if len(l.Aliases) > 0 {
		out = append(out, "--alias", strings.Join(sortedSet(l.Aliases), ","))
	}
	out = append(out, "--metrics", "--slots")
	return append(out, l.Args...)
}
