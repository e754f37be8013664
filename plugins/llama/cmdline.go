package llama

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// decodeArgv reads a process's command line as scriptStatus reports it:
// "hex:" and /proc/PID/cmdline in hex (each word NUL-terminated), or
// "ps:" and the words as ps joins them with spaces (macOS: a word holding
// a space reads as two); "" for no process.
func decodeArgv(s string) ([]string, error) {
	switch {
	case s == "":
		return nil, nil
	case strings.HasPrefix(s, "hex:"):
		b, err := hex.DecodeString(s[len("hex:"):])
		if err != nil {
			return nil, fmt.Errorf("command line: %v", err)
		}
		words := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if len(words) == 1 && words[0] == "" {
			return nil, nil
		}
		return words, nil
	case strings.HasPrefix(s, "ps:"):
		return strings.Fields(s[len("ps:"):]), nil
	}
	return nil, fmt.Errorf("command line %q: neither hex: nor ps:", s)
}

// command is a lane's command line read back: what Settings.argv (or
// routerArgv) wrote, so that observe reports what runs. Model is the
// router's preset for a router.
type command struct {
	Host      string
	Port      int
	Model     string
	Aliases   []string
	Args      []string
	ModelsMax string // a router's --models-max, "" for a lane
}

// parseCommand reads argv as the actuator starts a lane: the server,
// --host, --port, -m (--models-preset for the router), --alias when the
// lane has aliases, --metrics and --slots, then the lane's own
// arguments (a router's: --models-max and --models-autoload). A command
// line of another shape is not a lane's.
func parseCommand(argv []string) (command, error) {
	var c command
	if len(argv) == 0 {
		return c, errors.New("no command line")
	}
	rest := argv[1:]
	take := func(flags ...string) (string, bool) {
		if len(rest) >= 2 {
			for _, f := range flags {
				if rest[0] == f {
					v := rest[1]
					rest = rest[2:]
					return v, true
				}
			}
		}
		return "", false
	}
	var ok bool
	var port string
	if c.Host, ok = take("--host"); !ok {
		return c, errors.New("no --host first")
	}
	if port, ok = take("--port"); !ok {
		return c, errors.New("no --port after --host")
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return c, fmt.Errorf("--port %q", port)
	}
	c.Port = p
	router := len(rest) > 0 && rest[0] == "--models-preset"
	if c.Model, ok = take("-m", "--model", "--models-preset"); !ok {
		return c, errors.New("no -m after --port")
	}
	if a, ok := take("--alias"); ok {
		c.Aliases = strings.Split(a, ",")
	}
	if len(rest) < 2 || rest[0] != "--metrics" || rest[1] != "--slots" {
		return c, errors.New("no --metrics --slots after the model")
	}
	rest = rest[2:]
	if router {
		if c.ModelsMax, ok = take("--models-max"); !ok {
			return c, errors.New("a router without --models-max")
		}
	}
	c.Args = rest
	return c, nil
}

// modelsMax is the --models-max of a router's live process, "" when the
// record is no router's.
func (r record) modelsMax() string {
	c, _ := parseCommand(r.argv)
	return c.ModelsMax
}
