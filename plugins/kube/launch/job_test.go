package launch

import (
	"strings"
	"testing"
)

const manifest = `apiVersion: batch/v1
kind: Job
metadata:
  generateName: eval-
spec:
  template:
    spec:
      containers:
      - name: main
        image: harness:1
        command: [run, --task, x]
`

func TestParseJob(t *testing.T) {
	j, err := ParseJob([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	if j.GenerateName != "eval-" || j.Spec.Template.Spec.Containers[0].Image != "harness:1" || j.Spec.Template.Spec.RestartPolicy != "Never" {
		t.Fatalf("parsed %+v", j)
	}
	for _, tc := range []struct{ doc, want string }{
		{strings.Replace(manifest, "kind: Job", "kind: Pod", 1), `kind "Pod", want batch/v1 Job`},
		{strings.Replace(manifest, "command:", "comand:", 1), `unknown field "comand"`},
		{"apiVersion: batch/v1\nkind: Job\n", "containers is empty"},
	} {
		if _, err := ParseJob([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

func FuzzParseJob(f *testing.F) {
	f.Add([]byte(manifest))
	f.Add([]byte(`{"apiVersion":"batch/v1","kind":"Job","spec":{"template":{"spec":{"containers":[{"name":"a"}]}}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		j, err := ParseJob(doc)
		if err != nil {
			return
		}
		if j.Kind != "Job" || len(j.Spec.Template.Spec.Containers) == 0 || j.Spec.Template.Spec.RestartPolicy == "" {
			t.Fatalf("accepted %q as %+v", doc, j)
		}
	})
}
