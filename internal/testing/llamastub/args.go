package llamastub

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options are the llama-server command line flags the stand-in honours.
// Model is empty in router mode.
type Options struct {
	Host         string
	Port         int
	Model        string
	Aliases      []string // sorted, without duplicates
	Metrics      bool
	Slots        bool
	Parallel     int
	CtxSize      int
	ModelsPreset string
	ModelsMax    int
	Autoload     bool
	SleepIdle    time.Duration // router mode: idle time before a model sleeps; 0 never
}

// DefaultPort is llama-server's default port when --port is not given.
// poolc always passes --port because the upstream default is changing.
const DefaultPort = 8080

// DefaultModelsMax is how many models router mode keeps loaded when
// --models-max is not given.
const DefaultModelsMax = 4

// DefaultParallel is the number of slots when --parallel is not given.
const DefaultParallel = 4

// ignoredValueFlags are llama-server flags with a value that change
// nothing the stand-in models; they are accepted so lane args written for
// the real server start the stand-in too.
var ignoredValueFlags = map[string]bool{
	"-ngl": true, "--n-gpu-layers": true, "--gpu-layers": true,
	"-t": true, "--threads": true, "-tb": true, "--threads-batch": true,
	"-b": true, "--batch-size": true, "-ub": true, "--ubatch-size": true,
	"-ctk": true, "--cache-type-k": true, "-ctv": true, "--cache-type-v": true,
	"-fa": true, "--flash-attn": true, "--temp": true, "--top-p": true,
	"--top-k": true, "--min-p": true, "--chat-template": true,
	"--chat-template-file": true, "-ncmoe": true, "--n-cpu-moe": true,
	"--numa": true, "--timeout": true, "--threads-http": true,
	"--reasoning-format": true, "--models-dir": true,
}

// ignoredBoolFlags are llama-server switches the stand-in accepts and
// ignores, for the same reason.
var ignoredBoolFlags = map[string]bool{
	"--jinja": true, "--no-warmup": true, "--mlock": true, "--no-mmap": true,
	"--cont-batching": true, "--no-webui": true, "-cb": true,
	"--props": true,
}

// ParseArgs reads llama-server style arguments: "-m FILE", "--port=8081"
// and "--port 8081" forms. An unknown flag is an error, as it is for
// llama-server.
func ParseArgs(args []string) (Options, error) {
	o := Options{Host: "127.0.0.1", Port: DefaultPort, Slots: true, Parallel: DefaultParallel,
		ModelsMax: DefaultModelsMax, Autoload: true}
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if !strings.HasPrefix(name, "-") || name == "-" || name == "--" {
			return o, fmt.Errorf("error: unexpected argument: %s", args[i])
		}
		needValue := func() (string, error) {
			if hasValue {
				return value, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("error: %s needs a value", name)
			}
			i++
			return args[i], nil
		}
		needInt := func(min int) (int, error) {
			v, err := needValue()
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < min {
				return 0, fmt.Errorf("error: %s wants an integer >= %d, got %q", name, min, v)
			}
			return n, nil
		}
		var err error
		switch name {
		case "--host":
			o.Host, err = needValue()
		case "--port":
			o.Port, err = needInt(0)
			if err == nil && o.Port > 65535 {
				err = fmt.Errorf("error: --port %d is out of range", o.Port)
			}
		case "-m", "--model":
			o.Model, err = needValue()
		case "-a", "--alias":
			var v string
			if v, err = needValue(); err == nil {
				o.Aliases = splitAliases(v)
			}
		case "--metrics":
			o.Metrics = true
		case "--slots":
			o.Slots = true
		case "--no-slots":
			o.Slots = false
		case "-np", "--parallel":
			o.Parallel, err = needInt(1)
		case "-c", "--ctx-size":
			o.CtxSize, err = needInt(0)
		case "--models-preset":
			o.ModelsPreset, err = needValue()
		case "--models-max":
			o.ModelsMax, err = needInt(0)
		case "--models-autoload":
			o.Autoload = true
		case "--no-models-autoload":
			o.Autoload = false
		case "--sleep-idle-seconds":
			var n int
			n, err = needInt(0)
			o.SleepIdle = time.Duration(n) * time.Second
		default:
			switch {
			case ignoredValueFlags[name]:
				_, err = needValue()
			case ignoredBoolFlags[name]:
			default:
				err = fmt.Errorf("error: invalid argument: %s", name)
			}
		}
		if err != nil {
			return o, err
		}
	}
	if o.Model == "" && len(o.Aliases) > 0 && o.ModelsPreset == "" {
		return o, fmt.Errorf("error: --alias needs -m (router mode names models in its preset)")
	}
	return o, nil
}

// splitAliases turns "b,a,b" into the sorted set [a b].
func splitAliases(v string) []string {
	set := map[string]bool{}
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			set[a] = true
		}
	}
	out := make([]string, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
