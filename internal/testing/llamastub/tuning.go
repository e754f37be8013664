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
	// EnvLinger is how long a single-model server stays alive after
	// SIGTERM, its port closed and its streams cut (a Go duration; default
	// 2m: a real build was still alive when SIGKILLed 60 s after SIGTERM).
	EnvLinger = "LLAMASTUB_LINGER"
	// EnvTokenInterval is the time between streamed tokens (default 20ms).
	EnvTokenInterval = "LLAMASTUB_TOKEN_INTERVAL"
	// EnvChildStart is how long a router's model process takes to start
	// before its weights load (default 1s: a real router reports a small
	// model "loading" for about a second).
	EnvChildStart = "LLAMASTUB_CHILD_START"
	// EnvChildStop is how long a router's model process takes to exit once
	// told to stop (default 2s): GET /models still says "loaded"
	// meanwhile, and a reload that stops it waits for it.
	EnvChildStop = "LLAMASTUB_CHILD_STOP"
	// EnvReplyTokens is the mean length of a reply in tokens before its
	// end-of-sequence token (default 32; lengths are drawn uniformly from
	// 1 to twice that). A request's max_tokens cuts a longer reply with
	// finish_reason "length"; "ignore_eos": true in the request ignores
	// the end of sequence, as llama-server does.
	EnvReplyTokens = "LLAMASTUB_REPLY_TOKENS"
)

// Tuning holds the stand-in's timings.
type Tuning struct {
	LoadRate      int64 // bytes per second
	Linger        time.Duration
	TokenInterval time.Duration
	ChildStart    time.Duration
	ChildStop     time.Duration
	ReplyTokens   int64
}

// DefaultTuning is the tuning when no environment variable is set.
var DefaultTuning = Tuning{LoadRate: 2 << 30, Linger: 2 * time.Minute, TokenInterval: 20 * time.Millisecond,
	ChildStart: time.Second, ChildStop: 2 * time.Second, ReplyTokens: 32}

// TuningFromEnv reads the tuning from getenv, falling back to DefaultTuning.
func TuningFromEnv(getenv func(string) string) (Tuning, error) {
	t := DefaultTuning
	for _, n := range []struct {
		env string
		to  *int64
	}{{EnvLoadRate, &t.LoadRate}, {EnvReplyTokens, &t.ReplyTokens}} {
		if v := getenv(n.env); v != "" {
			i, err := strconv.ParseInt(v, 10, 64)
			if err != nil || i <= 0 {
				return t, fmt.Errorf("%s=%q: want a positive integer", n.env, v)
			}
			*n.to = i
		}
	}
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{EnvLinger, &t.Linger}, {EnvTokenInterval, &t.TokenInterval}, {EnvChildStart, &t.ChildStart}, {EnvChildStop, &t.ChildStop}} {
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
