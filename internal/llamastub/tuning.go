package llamastub

import (
	"fmt"
	"strconv"
	"time"
)

// The environment variables that tune the stand-in. The real llama-server
// takes as long as the disk and the accelerator need; the stand-in takes
// the time these say.
const (
	// EnvLoadRate is the load speed in bytes per second (default 2 GiB/s):
	// a model loads in size/rate.
	EnvLoadRate = "LLAMASTUB_LOAD_BYTES_PER_SEC"
	// EnvLinger is how long a stopping server stays up while clients keep
	// connections open (a Go duration, default 30s as llama-server).
	EnvLinger = "LLAMASTUB_LINGER"
	// EnvTokenInterval is the time between streamed tokens (default 20ms).
	EnvTokenInterval = "LLAMASTUB_TOKEN_INTERVAL"
)

// Tuning holds the stand-in's timings.
type Tuning struct {
	LoadRate      int64 // bytes per second
	Linger        time.Duration
	TokenInterval time.Duration
}

// DefaultTuning is the tuning when no environment variable is set.
var DefaultTuning = Tuning{LoadRate: 2 << 30, Linger: 30 * time.Second, TokenInterval: 20 * time.Millisecond}

// TuningFromEnv reads the tuning from getenv, falling back to DefaultTuning.
func TuningFromEnv(getenv func(string) string) (Tuning, error) {
	t := DefaultTuning
	if v := getenv(EnvLoadRate); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return t, fmt.Errorf("%s=%q: want a positive integer (bytes per second)", EnvLoadRate, v)
		}
		t.LoadRate = n
	}
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{EnvLinger, &t.Linger}, {EnvTokenInterval, &t.TokenInterval}} {
		if v := getenv(d.env); v != "" {
			n, err := time.ParseDuration(v)
			if err != nil || n < 0 {
				return t, fmt.Errorf("%s=%q: want a duration such as 30s", d.env, v)
			}
			*d.to = n
		}
	}
	return t, nil
}

// loadTime is how long a model of size bytes takes to load.
func (t Tuning) loadTime(size int64) time.Duration {
	return time.Duration(float64(size) / float64(t.LoadRate) * float64(time.Second))
}
