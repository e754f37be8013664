package store

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"poolc.dev/poolc/pools"
)

// fill sets every field of the value v points into, however deep, from
// seed: strings to seed's text, numbers to seed's number, booleans to
// true, slices to two elements, pointers to a filled value. A field added
// to Record or pools.Step is set too, so the encoder must know it.
func fill(v reflect.Value, text string, num float64) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 21, 4, 5, 123456789, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(text)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(num))
	case reflect.Float64:
		v.SetFloat(num)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), text, num)
		}
		v.Set(s)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), text, num)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), text, num)
			}
		}
	default:
		panic("fill: no rule for " + v.Type().String())
	}
}

func sameAsEncodingJSON(t *testing.T, r Record) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := appendRecord([]byte("prefix"), &r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendRecord error %v, encoding/json error %v, for %+v", err, wantErr, r)
	}
	if wantErr != nil {
		return
	}
	if !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("appendRecord wrote\n%s\nencoding/json writes\n%s", got[len("prefix"):], want)
	}
}

func TestRecordJSONIsEncodingJSON(t *testing.T) {
	full := func(text string, num float64) Record {
		var r Record
		fill(reflect.ValueOf(&r).Elem(), text, num)
		return r
	}
	at := time.Date(2026, 12, 1, 21, 4, 5, 0, time.UTC)
	for _, r := range []Record{
		{},
		{Time: at, Apply: "a", Event: ApplyStarted, Lineage: "l", Serial: 3},
		{Time: at, Apply: "a", Event: StepStarted, Step: "route:x", Message: "sim"},
		{Time: at, Apply: "a", Event: StepFinished, Step: "route:x", Effect: &pools.Step{ID: "route:x", Kind: pools.StepRoute, Route: &pools.Route{Alias: "x", Lane: pools.Cloud}, DependsOn: []string{}}},
		{Time: at, Apply: "a", Event: StepFinished, Step: "start:l@n", Effect: &pools.Step{ID: "start:l@n", Kind: pools.StepStart, Estimate: pools.Estimate{Seconds: 12.5, MemoryGB: 30},
			Lane: &pools.LaneState{Name: "l", Node: "n", Model: "m", Port: 8080, Residency: pools.KeepWarm, MemoryGB: 30, Loaded: true}}},
		{Time: at, Apply: "a", Event: Snapshot, Lineage: "l", Serial: 4, Finished: 2},
		full("x", 1),
		full("", 0),
		full(`<a href="x">&amp;</a> \ "q" `+"\x00\x01\b\f\n\r\t\x1f\x7f é \u2028 \u2029 \xff\xfe 😀", -0.5),
		full("s", 1e-7),
		full("s", 123456789e20),
		full("s", 1e21),
		full("s", 0.000001),
		full("s", -2.5e-300),
		full("s", math.MaxFloat64),
		full("s", math.Copysign(0, -1)),
		full("s", math.NaN()),
		full("s", math.Inf(1)),
		{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Event: StepStarted},
		{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 5*3600+1800)), Event: StepStarted},
	} {
		sameAsEncodingJSON(t, r)
	}
}

func FuzzRecordJSON(f *testing.F) {
	f.Add("route:a", "x<y>&\"\\\n", 1.5, int64(3), 7, true, int64(1764622800123456789))
	f.Add("", "\xff\u2028", 1e-9, int64(0), 0, false, int64(0))
	f.Fuzz(func(t *testing.T, text, other string, num float64, n64 int64, n int, set bool, nanos int64) {
		r := Record{Time: time.Unix(0, nanos).UTC(), Apply: other, Event: JournalEvent(text), Step: text, Message: other, Lineage: text, Serial: n64, Finished: n}
		if set {
			fill(reflect.ValueOf(&r.Effect).Elem(), text, num)
			r.Effect.Estimate.TransferBytes = n64
			r.Effect.Lane.Port, r.Effect.Member.SSHPort = n, 0
			r.Effect.DependsOn = []string{other}
			r.Effect.Lane.Args = nil
			r.Effect.Route.Node = other
		}
		sameAsEncodingJSON(t, r)
	})
}
