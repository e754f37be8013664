// Package loadgen streams OpenAI chat completions at a gateway or a lane
// and counts how they end, for tests that must show a change made under
// live traffic fails no request: a request fails when it gets no 200, or
// its stream ends without a final event (finish_reason "length" at
// max_tokens, or "stop" at an earlier end of sequence) and the
// "data: [DONE]" line, or with more tokens than asked for.
//
// Its clients keep connections alive, as the OpenAI SDKs do, and, as they
// do, send a request again on a fresh connection when the one they reused
// turns out closed before any answer (llama-server closes a connection
// after a streamed answer although its headers say Keep-Alive). An answer
// that is an error, or a stream cut, is never sent again.
package loadgen

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"poolc.dev/poolc/internal/plural"
)

// Chat sends one streaming chat completion for model to base (e.g.
// "http://127.0.0.1:8000") with max_tokens tokens, and returns nil only
// when the whole stream arrived.
func Chat(ctx context.Context, client *http.Client, base, model string, tokens int) error {
	return Send(ctx, client, base, Request{Model: model, MaxTokens: tokens})
}

// Request is one streaming chat completion.
type Request struct {
	Model     string
	MaxTokens int
	// IgnoreEOS asks llama-server to run to MaxTokens whatever the reply
	// ("ignore_eos"), for a test that needs a stream in flight for a while.
	IgnoreEOS bool
}

// Send sends r to base as Chat does.
func Send(ctx context.Context, client *http.Client, base string, r Request) error {
	model, tokens := r.Model, r.MaxTokens
	body := fmt.Sprintf(`{"model":%q,"stream":true,"max_tokens":%d,"ignore_eos":%v,"messages":[{"role":"user","content":"hi"}]}`, model, tokens, r.IgnoreEOS)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// With an idempotency key net/http sends the request again on a fresh
	// connection when a reused one is found closed before any answer, as
	// the OpenAI SDKs retry a connection error (they send such keys too).
	req.Header.Set("Idempotency-Key", rand.Text())
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() && b.Len() < 300 {
			b.WriteString(sc.Text())
		}
		return fmt.Errorf("status %d: %s", resp.StatusCode, b.String())
	}
	sc := bufio.NewScanner(resp.Body)
	var finish string
	var done bool
	got := 0
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ev struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return fmt.Errorf("event %q: %v", line, err)
		}
		for _, c := range ev.Choices {
			if c.Delta.Content != "" {
				got++
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("truncated after %s: %v", plural.Count(got, "token"), err)
	}
	if (finish != "length" && finish != "stop") || !done || got > tokens {
		return fmt.Errorf("truncated: %d tokens of max %d, final event %q, [DONE] %v", got, tokens, finish, done)
	}
	return nil
}

// Load is a running load generator.
type Load struct {
	stop    atomic.Bool
	wg      sync.WaitGroup
	served  atomic.Int64
	failed  atomic.Int64
	conns   atomic.Int64
	mu      sync.Mutex
	errs    []string
	started time.Time
	stopped time.Duration
}

// maxKept is how many failure messages a Load keeps.
const maxKept = 20

// failurePause is how long a worker of a Load waits after a failed
// request before its next one.
const failurePause = 10 * time.Millisecond

// requestTimeout bounds one request of a Load.
const requestTimeout = time.Minute

// Start runs workers loops, each sending one streaming request after the
// other, until Stop.
func Start(base, model string, workers, tokens int) *Load {
	l := &Load{started: time.Now()}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		if !i.Reused {
			l.conns.Add(1)
		}
	}}
	for i := 0; i < workers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for !l.stop.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				ctx = httptrace.WithClientTrace(ctx, trace)
				err := Chat(ctx, client, base, model, tokens)
				cancel()
				switch {
				case err != nil:
					l.failed.Add(1)
					l.mu.Lock()
					if len(l.errs) < maxKept {
						l.errs = append(l.errs, err.Error())
					}
					l.mu.Unlock()
					// A client backs off after a failure, as real ones do:
					// a refused request answers at once, and a loop
					// without a pause would only burn the machine's CPU.
					time.Sleep(failurePause)
				default:
					l.served.Add(1)
				}
			}
		}()
	}
	return l
}

// Served is how many requests completed so far.
func (l *Load) Served() int64 { return l.served.Load() }

// Failed is how many requests failed so far.
func (l *Load) Failed() int64 { return l.failed.Load() }

// WaitServed waits until n more requests have completed, or d passes.
func (l *Load) WaitServed(n int64, d time.Duration) bool {
	target := l.Served() + n
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if l.Served() >= target {
			return true
		}
	}
	return false
}

// Result is what a stopped Load counted.
type Result struct {
	Served, Failed int64
	// Connections is how many connections the requests opened: fewer than
	// requests, since the clients keep connections alive.
	Connections int64
	Duration    time.Duration
	Errors      []string // the first failures
}

// Stop ends the load once the requests in flight have ended (they are
// counted too) and returns the counts.
func (l *Load) Stop() Result {
	l.stop.Store(true)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return Result{Served: l.served.Load(), Failed: l.failed.Load(), Connections: l.conns.Load(), Duration: time.Since(l.started), Errors: append([]string(nil), l.errs...)}
}
