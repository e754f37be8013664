package host

import (
	"strings"
	"testing"
)

func TestOutputLines(t *testing.T) {
	var b strings.Builder
	o := &output{w: &b}
	raw := o.writer("hook", true)
	synced := o.writer("hook", false)
	for _, s := range []string{
		`{"@level":"debug","@message":"plugin address","@timestamp":"x"}` + "\n",
		`{"@level":"error","@message":"plugin init error","error":"no socket"}` + "\n",
		"panic: nil map\n\ngoroutine 1",
	} {
		_, _ = raw.Write([]byte(s))
	}
	_, _ = synced.Write([]byte("half a "))
	_, _ = synced.Write([]byte("line\r\n{\"@level\":\"debug\",\"@message\":\"kept: not go-plugin's stream\"}\nlast"))
	o.flush()
	want := "hook: go-plugin: plugin init error: no socket\n" +
		"hook: panic: nil map\n" +
		"hook: \n" +
		"hook: half a line\n" +
		`hook: {"@level":"debug","@message":"kept: not go-plugin's stream"}` + "\n" +
		"hook: goroutine 1\n" +
		"hook: last\n"
	if b.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", b.String(), want)
	}
}
