package haproxy

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Dialer opens a connection to HAProxy's admin socket: a local unix
// socket, or a TCP socket on the gateway host reached through an SSH
// tunnel.
type Dialer func(ctx context.Context) (net.Conn, error)

// UnixSocket dials the admin socket at path on this machine.
func UnixSocket(path string) Dialer {
	return func(ctx context.Context) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
}

// Runtime speaks HAProxy's runtime API: one command per connection, the
// answer read until HAProxy closes it.
type Runtime struct {
	Dial Dialer
}

// commandTimeout bounds one runtime API command.
const commandTimeout = 10 * time.Second

// maxAnswer bounds what is read of one answer.
const maxAnswer = 16 << 20

// tokenRE is what every word of a runtime command must look like: the API
// splits on spaces and gives ';', '\' and newlines meanings, so a word
// holding one could change the command. Words come from validated names.
var tokenRE = regexp.MustCompile(`^[A-Za-z0-9._:/@+\-]+$`)

// Exec runs one command made of words and returns HAProxy's answer. An
// answer HAProxy marks as a failure is an error.
func (r Runtime) Exec(ctx context.Context, words ...string) (string, error) {
	for _, w := range words {
		if !tokenRE.MatchString(w) {
			return "", fmt.Errorf("haproxy: refusing runtime API word %q", w)
		}
	}
	cmd := strings.Join(words, " ")
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	c, err := r.Dial(ctx)
	if err != nil {
		return "", fmt.Errorf("haproxy admin socket: %w", err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := io.WriteString(c, cmd+"\n"); err != nil {
		return "", fmt.Errorf("haproxy %q: %w", cmd, err)
	}
	// The master CLI answers once the client has said all it will.
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	b, err := io.ReadAll(io.LimitReader(c, maxAnswer))
	if err != nil {
		return "", fmt.Errorf("haproxy %q: %w", cmd, err)
	}
	out := string(b)
	if failed(out) {
		return out, fmt.Errorf("haproxy %q: %s", cmd, strings.TrimSpace(out))
	}
	return out, nil
}

// failed recognises the answers HAProxy gives to a command it refused.
func failed(out string) bool {
	s := strings.TrimSpace(out)
	for _, p := range []string{"Unknown command", "No such", "Can't", "Require ", "Invalid", "Unknown ", "Permission denied", "Usage:"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return strings.Contains(s, "entry not found") || strings.Contains(s, "not found.")
}

// parseMap reads `show map FILE`: one "ID KEY VALUE" line per entry.
func parseMap(out string) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("show map line %d: %q", n, sc.Text())
		}
		m[f[1]] = f[2]
	}
	return m, sc.Err()
}

// Server is one server of a backend as `show servers state` reports it.
type Server struct {
	Backend string
	Name    string
	Addr    string
	Port    int
	Admin   int // srv_admin_state bits
	Op      int // srv_op_state: 0 stopped, 1 starting, 2 running, 3 stopping
}

// The srv_admin_state bits that decide a server's state, as HAProxy
// defines them (SRV_ADMF_MAINT and SRV_ADMF_DRAIN). The bit 0x04 only
// records that the configuration said "disabled"; it stays set after the
// server is made ready, so it is not part of the maintenance mask.
const (
	adminMaint = 0x01 | 0x02 | 0x20 // forced, inherited, address resolution maintenance
	adminDrain = 0x08 | 0x10        // forced, inherited drain
)

// Maint reports whether the server takes no traffic at all.
func (s Server) Maint() bool { return s.Admin&adminMaint != 0 }

// Draining reports whether the server keeps its sessions but gets no new one.
func (s Server) Draining() bool { return !s.Maint() && s.Admin&adminDrain != 0 }

// Ready reports whether new requests may go to the server.
func (s Server) Ready() bool { return s.Admin&(adminMaint|adminDrain) == 0 }

// parseServersState reads `show servers state [BACKEND]`: a version line,
// a "# " header naming the columns, then one line per server.
func parseServersState(out string) ([]Server, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), maxAnswer)
	var cols map[string]int
	var srvs []Server
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || (cols == nil && n == 1 && !strings.HasPrefix(line, "#")):
			continue // the format version
		case strings.HasPrefix(line, "#"):
			cols = map[string]int{}
			for i, c := range strings.Fields(strings.TrimPrefix(line, "#")) {
				cols[c] = i
			}
			continue
		case cols == nil:
			return nil, fmt.Errorf("show servers state line %d before its header", n)
		}
		f := strings.Fields(line)
		get := func(c string) (string, error) {
			i, ok := cols[c]
			if !ok || i >= len(f) {
				return "", fmt.Errorf("show servers state line %d: no %s", n, c)
			}
			return f[i], nil
		}
		var s Server
		var err error
		var v string
		for _, c := range []struct {
			name string
			str  *string
			num  *int
		}{{"be_name", &s.Backend, nil}, {"srv_name", &s.Name, nil}, {"srv_addr", &s.Addr, nil},
			{"srv_port", nil, &s.Port}, {"srv_admin_state", nil, &s.Admin}, {"srv_op_state", nil, &s.Op}} {
			if v, err = get(c.name); err != nil {
				return nil, err
			}
			if c.str != nil {
				*c.str = v
			} else if *c.num, err = strconv.Atoi(v); err != nil {
				return nil, fmt.Errorf("show servers state line %d: %s %q", n, c.name, v)
			}
		}
		srvs = append(srvs, s)
	}
	return srvs, sc.Err()
}

// parseSessions reads the CSV of `show stat` into the current sessions
// (scur) of each "BACKEND/SERVER".
func parseSessions(out string) (map[string]int, error) {
	out = strings.TrimPrefix(out, "# ")
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("show stat: %v", err)
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("show stat: empty answer")
	}
	idx := map[string]int{}
	for i, c := range recs[0] {
		idx[c] = i
	}
	px, sv, sc := idx["pxname"], idx["svname"], idx["scur"]
	if _, ok := idx["scur"]; !ok {
		return nil, fmt.Errorf("show stat: no scur column")
	}
	m := map[string]int{}
	for _, rec := range recs[1:] {
		if len(rec) <= max(px, sv, sc) {
			continue
		}
		n, err := strconv.Atoi(rec[sc])
		if err != nil {
			continue
		}
		m[rec[px]+"/"+rec[sv]] = n
	}
	return m, nil
}
